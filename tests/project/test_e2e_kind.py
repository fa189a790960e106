"""What `make e2e` (e2e/run.sh) deploys on kind, checked without a cluster: the KubeRay example's
overlay runs only the images the run loads, and its Prometheus (e2e/kind/prometheus.py) scrapes
the head with the shipped job, relabelled as pod discovery would have it."""

from __future__ import annotations

import re
import shutil
from typing import Any

import pytest
import yaml
from manifest_render import ROOT, named, of_kind, render

from e2e.kind import prometheus

OVERLAY = "e2e/overlays/kuberay-example"
HEAD_IP, HEAD_POD = "10.244.0.9", "demo-head-abcde"


def shipped_job() -> dict[str, Any]:
    """The job of manifests/monitoring/prometheus-scrape-config.yaml."""
    (job,) = yaml.safe_load(prometheus.SHIPPED.read_text())["scrape_configs"]
    return dict(job)


def kind_job() -> dict[str, Any]:
    """The one job of the kind cluster's prometheus.yml, for a head in namespace ray."""
    (job,) = prometheus.scrape_config(HEAD_IP, HEAD_POD, "ray")["scrape_configs"]
    return dict(job)


def relabel(labels: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """Prometheus's keep and replace relabelling of one target; None when a keep drops it."""
    out = dict(labels)
    for rule in rules:
        value = rule.get("separator", ";").join(out.get(s, "") for s in rule["source_labels"])
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        if rule["action"] == "keep":
            if match is None:
                return None
        elif rule["action"] == "replace" and match is not None:
            template = re.sub(r"\$(\d+)", r"\\\1", rule.get("replacement", "$1"))
            out[rule["target_label"]] = match.expand(template)
    return out


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_the_kuberay_example_overlay_runs_only_the_images_the_run_loads() -> None:
    """Every container of the overlay's RayCluster is the product's image as run.sh builds it
    (keda-ray-scaler:e2e) or Ray's as e2e/images.py makes it: nothing to pull on kind."""
    cluster = named(render(OVERLAY), "RayCluster", "demo")
    pods = [cluster["spec"]["headGroupSpec"]["template"]["spec"]]
    pods += [g["template"]["spec"] for g in cluster["spec"]["workerGroupSpecs"]]
    images = {c["image"] for p in pods for c in p["containers"] + p.get("initContainers", [])}
    assert "keda-ray-scaler:e2e" in images
    assert {i for i in images if not i.startswith("localhost/krs/ray:")} == {"keda-ray-scaler:e2e"}
    run_sh = (ROOT / "e2e" / "run.sh").read_text()
    assert "-t keda-ray-scaler:e2e ." in run_sh and "-k e2e/overlays/kuberay-example" in run_sh


def test_the_e2e_prometheus_relabels_exactly_as_shipped() -> None:
    """e2e/kind/prometheus.py's one job is the shipped job, its name (the scaler's
    --prometheus-job) included; only discovery differs (Debian's build has none)."""
    job, shipped = kind_job(), shipped_job()
    for key in ("job_name", "honor_labels", "relabel_configs"):
        assert job[key] == shipped[key], key
    assert set(job) == set(shipped) - {"kubernetes_sd_configs"} | {"static_configs"}


def test_the_e2e_prometheus_target_relabels_as_pod_discovery_would() -> None:
    """The static target passes the job's keep rules and comes out as a discovered head pod:
    the agent's address and path, namespace and head_pod from the pod, never from the agent."""
    assert shipped_job()["kubernetes_sd_configs"] == [{"role": "pod"}]
    job = kind_job()
    (static,) = job["static_configs"]
    (address,) = static["targets"]
    kept = relabel({"__address__": address, **static["labels"]}, job["relabel_configs"])
    assert kept is not None
    assert kept["__address__"] == f"{HEAD_IP}:{prometheus.AGENT_PORT}"
    assert kept["__metrics_path__"] == "/metrics"
    assert (kept["namespace"], kept["head_pod"]) == ("ray", HEAD_POD)
    other_port = {**static["labels"], "__meta_kubernetes_pod_container_port_name": "http"}
    assert relabel({"__address__": address, **other_port}, job["relabel_configs"]) is None


def test_the_e2e_prometheus_answers_at_the_charts_default_url() -> None:
    """The Service prometheus-server in monitoring, port 80: the chart's prometheus.url."""
    objs = tuple(prometheus.objects("img", HEAD_IP, HEAD_POD, "ray"))
    service = named(objs, "Service", "prometheus-server")
    (port,) = service["spec"]["ports"]
    url = f"http://{service['metadata']['name']}.{service['metadata']['namespace']}.svc:{port['port']}"
    values = yaml.safe_load((ROOT / "charts/keda-ray-scaler/values.yaml").read_text())
    assert values["prometheus"]["url"] == url
    (deployment,) = of_kind(objs, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert port["targetPort"] == container["ports"][0]["name"]
