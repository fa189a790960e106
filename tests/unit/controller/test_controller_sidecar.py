"""The agent sidecar injected into an opted-in RayCluster's head at admission (pure)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from controller_input import raycluster

from keda_ray_scaler.controller.optin import OPT_IN_ANNOTATION, Conflict, Refusal
from keda_ray_scaler.controller.sidecar import HEAD_TEMPLATE_PATH, Injection, Skip, inject
from keda_ray_scaler.controller.template import ControllerTemplate

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "manifests" / "kuberay" / "example" / "raycluster.yaml"


def example() -> dict[str, Any]:
    """The KubeRay example RayCluster, opted in (its head holds the agent, merged by hand)."""
    cluster: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    cluster["metadata"].setdefault("annotations", {})[OPT_IN_ANNOTATION] = "enabled"
    return cluster


def fragment_of(cluster: dict[str, Any]) -> dict[str, Any]:
    """The chart's sidecar fragment as the example's head holds it: the agent container, the
    agent's volumes, the head's scrape annotations and node-type label."""
    template = cluster["spec"]["headGroupSpec"]["template"]
    agent = [c for c in template["spec"]["containers"] if c["name"] == "agent"]
    volumes = [v for v in template["spec"]["volumes"] if v["name"].startswith("agent-")]
    meta = template["metadata"]
    return {
        "metadata": {"labels": meta.get("labels", {}), "annotations": meta.get("annotations", {})},
        "spec": {"containers": agent, "volumes": volumes},
    }


def without_sidecar(cluster: dict[str, Any]) -> dict[str, Any]:
    """``cluster`` as a user (or KubeRay's RayService controller) writes it: no agent."""
    out = copy.deepcopy(cluster)
    pod = out["spec"]["headGroupSpec"]["template"]["spec"]
    pod["containers"] = [c for c in pod["containers"] if c["name"] != "agent"]
    pod["volumes"] = [v for v in pod.get("volumes", []) if not v["name"].startswith("agent-")]
    del pod["serviceAccountName"]
    del pod["automountServiceAccountToken"]
    return out


def applied(cluster: dict[str, Any], admission: Injection) -> dict[str, Any]:
    """``cluster`` after the admission's patch (one replace/add of the head template)."""
    ((op),) = admission.patch
    assert op["path"] == HEAD_TEMPLATE_PATH and op["op"] in ("add", "replace")
    out = copy.deepcopy(cluster)
    out["spec"]["headGroupSpec"]["template"] = copy.deepcopy(op["value"])
    return out


TEMPLATE = ControllerTemplate()


def test_a_head_without_the_agent_gets_exactly_the_hand_merged_example() -> None:
    """The example's head is the sidecar merged by hand: injecting the fragment into the same
    head without it gives that head back, the Ray container untouched."""
    cluster = example()
    fragment = fragment_of(cluster)
    admission = inject(without_sidecar(cluster), fragment, TEMPLATE)
    assert isinstance(admission, Injection)
    after = applied(without_sidecar(cluster), admission)
    assert (
        after["spec"]["headGroupSpec"]["template"] == cluster["spec"]["headGroupSpec"]["template"]
    )


def test_injection_is_idempotent_and_survives_a_whole_spec_rewrite() -> None:
    """Once injected, the same RayCluster is admitted unchanged (no loop); KubeRay's RayService
    controller rewriting the whole spec from its own (sidecar dropped) gets the same head back
    in one admission."""
    cluster = example()
    fragment = fragment_of(cluster)
    first = inject(without_sidecar(cluster), fragment, TEMPLATE)
    assert isinstance(first, Injection)
    once = applied(without_sidecar(cluster), first)
    assert inject(once, fragment, TEMPLATE) is Skip.UP_TO_DATE
    rewritten = without_sidecar(once)  # modifyRayCluster: currentCluster.Spec = goalCluster.Spec
    again = inject(rewritten, fragment, TEMPLATE)
    assert isinstance(again, Injection)
    assert applied(rewritten, again) == once


def test_the_head_runs_as_the_clusters_agent_account_without_a_pod_token() -> None:
    cluster = without_sidecar(example())
    cluster["metadata"]["name"] = "job-7-raycluster-x2k9"
    admission = inject(cluster, fragment_of(example()), TEMPLATE)
    assert isinstance(admission, Injection)
    pod = admission.patch[0]["value"]["spec"]
    assert pod["serviceAccountName"] == "ray-job-7-raycluster-x2k9-agent"
    assert pod["automountServiceAccountToken"] is False
    names = [c["name"] for c in pod["containers"]]
    assert names == ["ray-head", "agent"]


@pytest.mark.parametrize("mode", ["token", None])
def test_the_agents_ray_token_comes_from_the_clusters_own_secret(mode: str | None) -> None:
    """Token authentication (authOptions.mode token): RAY_AUTH_TOKEN from the Secret KubeRay
    makes, named after the cluster; without it, no token variables at all."""
    cluster = without_sidecar(example())
    cluster["metadata"]["name"] = "other"
    cluster["spec"].pop("authOptions", None)
    if mode:
        cluster["spec"]["authOptions"] = {"mode": mode}
    admission = inject(cluster, fragment_of(example()), TEMPLATE)
    assert isinstance(admission, Injection)
    (agent,) = [
        c for c in admission.patch[0]["value"]["spec"]["containers"] if c["name"] == "agent"
    ]
    env = {e["name"]: e for e in agent["env"]}
    if mode:
        ref = env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "other", "key": "auth_token"}
    else:
        assert "RAY_AUTH_TOKEN" not in env and "RAY_AUTH_MODE" not in env


def test_not_opted_in_or_refused_clusters_are_admitted_unchanged() -> None:
    fragment = fragment_of(example())
    assert inject(raycluster(annotations={}), fragment, TEMPLATE) is Skip.NOT_OPTED_IN
    refused = inject(raycluster(in_tree=True), fragment, TEMPLATE)
    assert isinstance(refused, Refusal) and refused.reason is Conflict.IN_TREE_AUTOSCALER


def test_a_cluster_without_a_head_template_gets_one_added() -> None:
    """A head group without a template yet: the patch adds one (op add), never fails."""
    cluster = raycluster()
    cluster["spec"]["headGroupSpec"] = {"rayStartParams": {}}
    admission = inject(cluster, fragment_of(example()), TEMPLATE)
    assert isinstance(admission, Injection)
    assert admission.patch[0]["op"] == "add"
