"""The agent-sidecar webhook called by the real kube-apiserver (1.37, the e2e build set).

The webhook (``controller/webhook_server.py``) serves HTTPS on 127.0.0.1 with a certificate made
in the test; a MutatingWebhookConfiguration points the API server at it (``clientConfig.url``:
the API server runs on this machine, not in a pod, so no Service routes to it). KubeRay's CRDs
are installed, no KubeRay operator: what is checked is what the API server stores. The tests run
in file order; the last one stops the webhook.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from apiserver_only import apiserver_only
from kuberay_examples import example_without_agent
from prometheus_client import CollectorRegistry
from tls_certs import Certs, make_certs

from keda_ray_scaler.controller.optin import OPT_IN_LABEL
from keda_ray_scaler.controller.template import ControllerTemplate
from keda_ray_scaler.controller.webhook_server import MUTATE_PATH, CertFiles, WebhookServer

pytestmark = pytest.mark.controlplane

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "manifests" / "kuberay" / "example" / "raycluster.yaml"
NS = "ray"


def example() -> dict[str, Any]:
    """The KubeRay example RayCluster, opted in, its head without the agent (as a user, or a
    RayJob's or RayService's controller, writes it)."""
    cluster = example_without_agent()
    del cluster["metadata"]["namespace"]
    return cluster


def fragment() -> dict[str, Any]:
    """The sidecar fragment: the example head's agent container and volumes."""
    cluster: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    template = cluster["spec"]["headGroupSpec"]["template"]
    return {
        "metadata": {"annotations": template["metadata"].get("annotations", {})},
        "spec": {
            "containers": [c for c in template["spec"]["containers"] if c["name"] == "agent"],
            "volumes": [v for v in template["spec"]["volumes"] if v["name"].startswith("agent-")],
        },
    }


@pytest.fixture(scope="module")
def certs() -> Certs:
    return make_certs()


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[WebhookServer]:
    """The webhook on 127.0.0.1 (a random port), in a thread."""
    cert, key = certs.server.write(tmp_path_factory.mktemp("tls"), "webhook")
    server = WebhookServer(
        ("127.0.0.1", 0),
        CertFiles(cert, key),
        fragment(),
        ControllerTemplate(),
        CollectorRegistry(),
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def configuration(port: int, ca: bytes, failure_policy: str) -> dict[str, Any]:
    """A MutatingWebhookConfiguration for labelled RayClusters' CREATE and UPDATE at ``port``,
    as the chart's (there: a Service; here the API server runs on this machine)."""
    hook = {
        "name": "raycluster.keda-ray-scaler.io",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": failure_policy,
        "timeoutSeconds": 5,
        "reinvocationPolicy": "IfNeeded",
        "clientConfig": {
            "url": f"https://127.0.0.1:{port}{MUTATE_PATH}",
            "caBundle": base64.b64encode(ca).decode(),
        },
        "objectSelector": {"matchLabels": {OPT_IN_LABEL: "enabled"}},  # as the chart's
        "rules": [
            {
                "apiGroups": ["ray.io"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["rayclusters"],
            }
        ],
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "keda-ray-scaler-agent-sidecar"},
        "webhooks": [hook],
    }


@pytest.fixture(scope="module")
def cp(
    tmp_path_factory: pytest.TempPathFactory, webhook: WebhookServer, certs: Certs
) -> Iterator[Any]:
    with apiserver_only(tmp_path_factory.mktemp("cp"), (NS,)) as plane:
        plane.apply_docs([configuration(webhook.server_address[1], certs.ca.cert, "Fail")])
        yield plane


def head(cp: Any, name: str) -> dict[str, Any]:
    """The stored head pod template of RayCluster ``name``."""
    got: dict[str, Any] = cp.get_json("raycluster", name, f"--namespace={NS}")
    return got


def create(cp: Any, cluster: dict[str, Any]) -> None:
    cp.kubectl("create", f"--namespace={NS}", "-f", "-", input=json.dumps(cluster))


def test_an_opted_in_raycluster_is_stored_with_the_agent_sidecar(cp: Any) -> None:
    """Created without the agent, stored with it: the container, its volumes, the head's
    ServiceAccount (the agent's, which the controller makes) and no pod token."""
    cluster = example()
    create(cp, cluster)
    stored = head(cp, "demo")["spec"]["headGroupSpec"]["template"]["spec"]
    assert [c["name"] for c in stored["containers"]] == ["ray-head", "agent"]
    assert stored["serviceAccountName"] == "ray-demo-agent"
    assert stored["automountServiceAccountToken"] is False
    assert {"agent-tmp", "agent-kube-api-access"} <= {v["name"] for v in stored["volumes"]}


def test_a_whole_spec_rewrite_gets_the_sidecar_back_without_a_loop(cp: Any) -> None:
    """KubeRay's RayService controller replaces a live cluster's spec with its own (no agent):
    the update is stored with the agent again; writing the same spec again changes nothing
    (the resourceVersion stays): the webhook converges, never loops."""
    live = head(cp, "demo")
    rewritten = copy.deepcopy(live)
    rewritten["spec"]["headGroupSpec"]["template"] = example()["spec"]["headGroupSpec"]["template"]
    rewritten["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 40  # a real change beside it
    cp.kubectl("replace", f"--namespace={NS}", "-f", "-", input=json.dumps(rewritten))
    after = head(cp, "demo")
    assert after["spec"]["workerGroupSpecs"][0]["maxReplicas"] == 40
    assert after["spec"]["headGroupSpec"]["template"] == live["spec"]["headGroupSpec"]["template"]
    again = copy.deepcopy(after)
    again["spec"]["headGroupSpec"]["template"] = example()["spec"]["headGroupSpec"]["template"]
    cp.kubectl("replace", f"--namespace={NS}", "-f", "-", input=json.dumps(again))
    assert head(cp, "demo")["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]


def test_a_cluster_not_opted_in_is_stored_as_written(cp: Any) -> None:
    cluster = example()
    cluster["metadata"]["name"] = "plain"
    del cluster["metadata"]["labels"][OPT_IN_LABEL]
    create(cp, cluster)
    stored = head(cp, "plain")["spec"]["headGroupSpec"]["template"]["spec"]
    assert [c["name"] for c in stored["containers"]] == ["ray-head"]


def test_a_refused_opt_in_is_admitted_with_a_warning_naming_the_field(cp: Any) -> None:
    """In-tree autoscaling on and the opt-in: created unchanged (refusing to autoscale is no
    reason to refuse the cluster), and kubectl prints the webhook's warning naming the field."""
    cluster = example()
    cluster["metadata"]["name"] = "in-tree"
    cluster["spec"]["enableInTreeAutoscaling"] = True
    done = cp.kubectl("create", f"--namespace={NS}", "-f", "-", input=json.dumps(cluster))
    assert "keda-ray-scaler: not autoscaled: spec.enableInTreeAutoscaling is true" in done.stderr
    stored = head(cp, "in-tree")["spec"]["headGroupSpec"]["template"]["spec"]
    assert [c["name"] for c in stored["containers"]] == ["ray-head"]


def test_a_request_that_is_no_admission_review_is_400_and_counted(
    webhook: WebhookServer, certs: Certs, tmp_path: Path
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(certs.ca.cert)
    url = f"https://127.0.0.1:{webhook.server_address[1]}{MUTATE_PATH}"
    for body in (b"not json", b'{"kind": "Pod"}'):
        reply = requests.post(url, data=body, verify=str(ca), timeout=10)
        assert reply.status_code == 400 and reply.json()["error"]
    assert webhook.reviews.labels("bad_request")._value.get() == 2


def test_with_the_webhook_down_an_opted_in_cluster_is_refused_and_others_are_not(
    cp: Any, webhook: WebhookServer
) -> None:
    """failurePolicy Fail, scoped by the label: while the webhook is down an opted-in RayCluster
    is refused with the API server's error naming the webhook (KubeRay's RayJob and RayService
    controllers retry their cluster's creation), never stored without its agent; a cluster that
    did not opt in is created as before."""
    webhook.shutdown()
    webhook.server_close()
    cluster = example()
    cluster["metadata"]["name"] = "during-outage"
    done = cp.kubectl(
        "create", f"--namespace={NS}", "-f", "-", input=json.dumps(cluster), check=False
    )
    assert done.returncode != 0
    assert 'failed calling webhook "raycluster.keda-ray-scaler.io"' in done.stderr
    plain = example()
    plain["metadata"]["name"] = "plain-during-outage"
    del plain["metadata"]["labels"][OPT_IN_LABEL]
    create(cp, plain)
    assert head(cp, "plain-during-outage")["metadata"]["name"] == "plain-during-outage"
