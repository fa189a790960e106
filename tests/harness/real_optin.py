"""RayJobs and RayServices on the bed, autoscaled with one label: the controller and its webhook
installed from the chart as the README installs them, KubeRay making the clusters.

:func:`controller_release` runs ``helm upgrade`` of the bed's release (:mod:`bed`) with
``controller.enabled`` for the namespace ``ray`` (one replica), its webhook certificate made
here as docs/getting-started.md says for a cluster without cert-manager, then the adaptations
the bed needs and a user's cluster does not, all of the same kind as the scaler's own
(:func:`bed.install_scaler`): the bed's processes (KEDA, the API server) resolve names with this
machine's resolver, not CoreDNS, and the controller pod keeps the node's network as the scaler
does, so

- the controller pod runs on the node's network and reaches the API server at the node's
  loopback (``KUBERNETES_SERVICE_HOST``), as the agent sidecar does;
- its ScaledObjects name the scaler at the node IP (``--scaler-address``, :data:`SCALER_ADDRESS`);
- the API server calls the webhook at the node IP (``clientConfig.url``; the API server runs on
  this machine and resolves a Service to its ClusterIP, which nothing routes);
- the sidecar fragment (the chart's ConfigMap) gains the test's timings (``--interval=1
  --settle-delay=1``), as :mod:`real_kuberay`'s overlay does.

On exit the release goes back to the bed's values (the controller, its Roles, webhook and
ConfigMap removed). A RayJob here is the shipped example's cluster spec without the agent
(:func:`kuberay_examples.example_without_agent`), on the real node as :mod:`ray_on_node` says,
its dashboard on the node IP (the operator reaches it through the API server's service proxy:
``--use-kubernetes-proxy``, :func:`bed.start_operator`) and ``submissionMode: HTTPMode`` (the
default ``K8sJobMode`` runs ``ray job submit`` in a pod that resolves the head Service by name).
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chart_install
import jsonpatch
import requests
import yaml
from bed import NAMESPACE, SCALER_ADDRESS, Bed, chart_values, scaler_pods
from control_plane import Authority, ControlPlane, wait_until
from kuberay_examples import example_without_agent
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families
from ray_on_node import (
    HEAD_RESOURCES,
    NODE_IP,
    SHARE_VOLUME_MOUNT,
    Op,
    container_ops,
    env,
    kuberay_worker_ops,
    pod_ops,
    share_volume,
)
from real_loop import COOLDOWN_S, IDLE_TIMEOUT_S, POLLING_INTERVAL_S

from keda_ray_scaler.controller.optin import OPT_IN_LABEL

CONTROLLER = f"{chart_install.RELEASE}-controller"
WEBHOOK_SECRET = f"{CONTROLLER}-webhook"
WEBHOOK_PORT = 9443  # the chart's controller.ports.webhook
METRICS_URL = f"http://{NODE_IP}:9102/metrics"  # controller.ports.metrics, node's network
MANAGED = "app.kubernetes.io/managed-by=keda-ray-scaler-controller"
OURS = "rayworkergroups,scaledobjects,serviceaccounts,roles,rolebindings"
DRIVER = Path(__file__).with_name("rayjob_driver.py")
RJ = ("ray.io", "v1", "rayjobs")
#: figures of the RayJob test, printed as one ``e2e-rayjob:`` line (tests/conftest.py)
FIGURES: dict[str, str] = {}


def _values(bed: Bed) -> dict[str, str]:
    """The bed's release values (as :func:`bed.start_bed` installed them)."""
    values = chart_values(bed.refs, bed.prometheus.url)
    values["refreshIntervalSeconds"] = str(bed.refresh_s)
    return values


def _controller_values(bed: Bed, ca: bytes, shipped: bool) -> dict[str, str]:
    values = {
        **_values(bed),
        "controller.enabled": "true",
        "controller.namespaces[0]": NAMESPACE,
        "controller.replicas": "1",  # on the node's network: one port each
        "controller.webhook.caBundle": base64.b64encode(ca).decode(),
    }
    if not shipped:
        values["controller.resyncSeconds"] = "5"
        values["controller.scaledObject.pollingInterval"] = str(POLLING_INTERVAL_S)
        values["controller.scaledObject.cooldownPeriod"] = str(COOLDOWN_S)
    return values


def _webhook_secret(cp: ControlPlane, workdir: Path) -> bytes:
    """The webhook's TLS Secret, made by hand (no cert-manager on the bed); its CA."""
    ca = Authority.create("keda-ray-scaler-e2e-webhook-ca")
    names = [f"{CONTROLLER}.{chart_install.NAMESPACE}.svc", NODE_IP]
    cert, key = ca.issue(CONTROLLER, server=True, hosts=names).write(workdir, "webhook")
    cp.kubectl(
        "create", "secret", "tls", WEBHOOK_SECRET, f"--namespace={chart_install.NAMESPACE}",
        f"--cert={cert}", f"--key={key}",
    )  # fmt: skip
    return ca.pair.cert


def _bed_env(apiserver_port: int) -> list[dict[str, Any]]:
    """The API server at the node's loopback (no kube-proxy)."""
    return [
        env("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
        env("KUBERNETES_SERVICE_PORT", str(apiserver_port)),
    ]


def _adapt_sidecar(cp: ControlPlane, shipped: bool) -> None:
    """The sidecar ConfigMap's agent: the test's timings (unless ``shipped``). It reaches the API
    server as any pod does, at the ``kubernetes`` Service's ClusterIP (kube-proxy, the
    API server's endpoint at the node IP: :mod:`service_network`, ``ControlPlane.node_ip``), from
    the node's network and from the pod network alike."""
    name = f"{CONTROLLER}-sidecar"
    cm = cp.get_json("configmap", name, f"--namespace={chart_install.NAMESPACE}")
    fragment = yaml.safe_load(cm["data"]["head-pod-template.yaml"])
    (agent,) = [c for c in fragment["spec"]["containers"] if c["name"] == "agent"]
    agent["args"] += [] if shipped else ["--interval=1", "--settle-delay=1"]
    cm["data"]["head-pod-template.yaml"] = yaml.safe_dump(fragment, sort_keys=False)
    cp.kubectl("replace", "-f", "-", input=json.dumps(cm))


def _adapt_controller(cp: ControlPlane) -> None:
    """The controller pod on the node's network, the scaler at the node IP."""
    deployment = cp.get_json("deployment", CONTROLLER, f"--namespace={chart_install.NAMESPACE}")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    (at,) = [i for i, a in enumerate(args) if a.startswith("--scaler-address=")]
    container = "/spec/template/spec/containers/0"
    address = f"--scaler-address={SCALER_ADDRESS}"
    ops = [
        {"op": "add", "path": "/spec/template/spec/hostNetwork", "value": True},
        {"op": "add", "path": f"{container}/env", "value": _bed_env(cp.apiserver_port)},
        {"op": "replace", "path": f"{container}/args/{at}", "value": address},
    ]
    cp.kubectl(
        "patch", "deployment", CONTROLLER, f"--namespace={chart_install.NAMESPACE}",
        "--type=json", f"--patch={json.dumps(ops)}",
    )  # fmt: skip


def _adapt_webhook(cp: ControlPlane, ca: bytes) -> None:
    """The API server calls the webhook at the node IP."""
    url = f"https://{NODE_IP}:{WEBHOOK_PORT}/mutate-raycluster"
    config = {"url": url, "caBundle": base64.b64encode(ca).decode()}
    ops = [{"op": "replace", "path": "/webhooks/0/clientConfig", "value": config}]
    cp.kubectl(
        "patch", "mutatingwebhookconfiguration", CONTROLLER, "--type=json",
        f"--patch={json.dumps(ops)}",
    )  # fmt: skip


def controller_samples() -> dict[str, float]:
    """The controller pod's /metrics, summed by sample name (raises while it does not answer)."""
    totals: dict[str, float] = {}
    reply = requests.get(METRICS_URL, timeout=5)
    reply.raise_for_status()
    text = reply.text
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            totals[s.name] = totals.get(s.name, 0.0) + s.value
    return totals


def _controller_ready(core: client.CoreV1Api) -> bool:
    pods = core.list_namespaced_pod(
        chart_install.NAMESPACE, label_selector="app.kubernetes.io/component=controller"
    ).items
    ready = [
        p
        for p in pods
        if p.metadata.deletion_timestamp is None
        and p.spec.host_network
        and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or ())
    ]
    return len(ready) == 1 and len(pods) == 1


@contextlib.contextmanager
def controller_release(bed: Bed, *, shipped: bool = False) -> Iterator[None]:
    """The bed's release with the controller and webhook (module docstring), until the block
    ends; then the release as the bed installed it. Call inside the namespace's block.
    ``shipped``: the chart's own ScaledObject settings, resync and agent timings (the
    side-by-side benchmark's production settings), not the test's."""
    cp = bed.cp
    helm = str(bed.bin_dir / "bin" / "helm")
    workdir = Path(tempfile.mkdtemp(prefix="controller-", dir=bed.workdir))
    ca = _webhook_secret(cp, workdir)
    try:
        chart_install.install(helm, cp.admin_kubeconfig, _controller_values(bed, ca, shipped))
        _adapt_sidecar(cp, shipped)
        _adapt_webhook(cp, ca)
        _adapt_controller(cp)
        wait_until(
            lambda: _controller_ready(bed.core) and controller_samples() is not None,
            timeout_s=180,
            what="the controller pod Ready on the node's network, its /metrics",
            interval_s=0.5,
        )
        yield
    finally:
        chart_install.install(helm, cp.admin_kubeconfig, _values(bed))
        cp.kubectl(
            "delete", "secret", WEBHOOK_SECRET, f"--namespace={chart_install.NAMESPACE}",
            "--ignore-not-found",
        )  # fmt: skip
        wait_until(
            lambda: not bed.core.list_namespaced_pod(
                chart_install.NAMESPACE, label_selector="app.kubernetes.io/component=controller"
            ).items and scaler_pods(bed.core) == 1,
            timeout_s=120,
            what="the controller pod gone",
        )  # fmt: skip


def ours(cp: ControlPlane, cluster: str | None = None) -> set[tuple[str, str]]:
    """(kind, name) of the objects the controller made in the namespace (for ``cluster``)."""
    selector = MANAGED + ("" if cluster is None else f",keda-ray-scaler.io/cluster={cluster}")
    items = cp.get_json(OURS, "-n", NAMESPACE, "-l", selector)["items"]
    return {(o["kind"], o["metadata"]["name"]) for o in items}


def cluster_spec(share: Path, refs: dict[str, str]) -> dict[str, Any]:
    """The example's cluster spec without the agent, on the real node (module docstring)."""
    doc = {"spec": example_without_agent()["spec"]}
    head = "/spec/headGroupSpec"
    head_pod = f"{head}/template/spec"
    ray_head = f"{head_pod}/containers/0"
    cpu = "/spec/workerGroupSpecs/0"
    ops: list[Op] = [
        *pod_ops(head_pod, host_network=True),
        ("add", f"{head}/rayStartParams/node-ip-address", NODE_IP),
        # the operator reaches the dashboard (jobs, Serve) through the API server's proxy
        ("replace", f"{head}/rayStartParams/dashboard-host", NODE_IP),
        *container_ops(ray_head, HEAD_RESOURCES),
        ("add", f"{head_pod}/volumes/-", share_volume(share)),
        ("add", f"{ray_head}/volumeMounts", [SHARE_VOLUME_MOUNT]),
        ("replace", f"{cpu}/idleTimeoutSeconds", IDLE_TIMEOUT_S),
        *kuberay_worker_ops(cpu, share),
    ]
    patch = jsonpatch.JsonPatch([{"op": o, "path": p, "value": v} for o, p, v in ops])
    spec: dict[str, Any] = patch.apply(doc)["spec"]
    for group in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
        for container in group["template"]["spec"]["containers"]:
            container["image"] = refs["ray"]
    return spec


def rayjob(name: str, share: Path, refs: dict[str, str]) -> dict[str, Any]:
    """A RayJob of the seed driver (:mod:`rayjob_driver`), opted in by its label only; its
    cluster deleted once the job ends."""
    shutil.copy(DRIVER, share / DRIVER.name)
    (share / "markers").mkdir(mode=0o1777, exist_ok=True)
    (share / "markers").chmod(0o1777)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {OPT_IN_LABEL: "enabled"}},
        "spec": {
            "entrypoint": f"python /krs-e2e/{DRIVER.name}",
            "submissionMode": "HTTPMode",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 0,
            "rayClusterSpec": cluster_spec(share, refs),
        },
    }


def raycluster(name: str, share: Path, refs: dict[str, str]) -> dict[str, Any]:
    """A RayCluster of :func:`cluster_spec`, opted in by its label only."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {OPT_IN_LABEL: "enabled"}},
        "spec": cluster_spec(share, refs),
    }


def rayjob_on(name: str, cluster: str, share: Path, refs: dict[str, str]) -> dict[str, Any]:
    """:func:`rayjob` run on the existing RayCluster ``cluster`` (``clusterSelector``): no label
    of ours, no cluster of its own, the cluster left running after it."""
    job = rayjob(name, share, refs)
    spec = job["spec"]
    del spec["rayClusterSpec"], spec["ttlSecondsAfterFinished"]
    spec["shutdownAfterJobFinishes"] = False
    spec["clusterSelector"] = {"ray.io/cluster": cluster}
    job["metadata"]["labels"] = {}
    return job


@dataclass
class JobView:
    """Reads of one RayJob and its cluster."""

    cp: ControlPlane
    custom: client.CustomObjectsApi
    name: str

    def job(self) -> dict[str, Any]:
        obj: dict[str, Any] = self.custom.get_namespaced_custom_object(
            *RJ[:2], NAMESPACE, RJ[2], self.name
        )
        return obj

    def status(self) -> dict[str, Any]:
        return dict(self.job().get("status") or {})

    def cluster_name(self) -> str:
        return str(self.status().get("rayClusterName") or "")

    def cluster(self) -> dict[str, Any] | None:
        """The RayCluster (None once gone)."""
        name = self.cluster_name()
        found = self.cp.get_json("rayclusters", "-n", NAMESPACE)["items"]
        return next((c for c in found if c["metadata"]["name"] == name), None)
