"""The agent's count fields kept on another writer's update (controller/counts.py, admission)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import yaml
from kuberay_examples import example_without_agent
from test_controller_sidecar import example, fragment_of

from keda_ray_scaler.controller.admission import review
from keda_ray_scaler.controller.counts import agent_user, kept_counts
from keda_ray_scaler.controller.template import ControllerTemplate

AGENT = agent_user("ray", "ray-demo-agent")
KUBERAY = "system:serviceaccount:kuberay:kuberay-operator"


def scaled(cluster: dict[str, Any]) -> dict[str, Any]:
    """``cluster`` as the agent left it: 4 cpu pods, two of them named victims."""
    out = copy.deepcopy(cluster)
    cpu = out["spec"]["workerGroupSpecs"][0]
    cpu["replicas"] = 4
    cpu["scaleStrategy"] = {"workersToDelete": ["demo-cpu-a", "demo-cpu-b"]}
    return out


def rewritten(live: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's RayService ``modifyRayCluster``: the goal spec (replicas as the RayService says,
    no victims) with a group appended, metadata kept."""
    goal = example_without_agent()
    out = copy.deepcopy(live)
    out["spec"] = copy.deepcopy(goal["spec"])
    extra = copy.deepcopy(goal["spec"]["workerGroupSpecs"][0])
    extra["groupName"] = "extra"
    extra["replicas"] = 1
    out["spec"]["workerGroupSpecs"].append(extra)
    return out


def patched(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    result: dict[str, Any] = jsonpatch.JsonPatch(list(ops)).apply(obj)
    return result


def test_a_whole_spec_rewrite_gets_the_agents_counts_back_and_keeps_the_appended_group() -> None:
    live = scaled(example())
    new = rewritten(live)
    kept = kept_counts(new, live, KUBERAY, AGENT)
    after = patched(new, kept.patch)
    cpu, gpu, extra = after["spec"]["workerGroupSpecs"]
    assert cpu["replicas"] == 4
    assert cpu["scaleStrategy"]["workersToDelete"] == ["demo-cpu-a", "demo-cpu-b"]
    assert gpu["replicas"] == live["spec"]["workerGroupSpecs"][1]["replicas"]
    assert extra["replicas"] == 1 and "scaleStrategy" not in extra
    assert len(kept.warnings) == 1 and "'cpu'" in kept.warnings[0]


def test_the_agents_own_writes_a_create_and_an_unchanged_count_keep_nothing() -> None:
    live = scaled(example())
    lowered = copy.deepcopy(live)
    lowered["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    assert not kept_counts(lowered, live, AGENT, AGENT).patch
    assert not kept_counts(lowered, None, KUBERAY, AGENT).patch
    relabelled = copy.deepcopy(live)
    relabelled["metadata"]["labels"] = {"team": "a"}
    assert not kept_counts(relabelled, live, KUBERAY, AGENT).patch


def test_victims_removed_by_another_writer_come_back_where_the_strategy_was_dropped() -> None:
    live = scaled(example())
    new = copy.deepcopy(live)
    del new["spec"]["workerGroupSpecs"][0]["scaleStrategy"]
    del new["spec"]["workerGroupSpecs"][0]["replicas"]
    after = patched(new, kept_counts(new, live, KUBERAY, AGENT).patch)
    assert after["spec"]["workerGroupSpecs"][0] == live["spec"]["workerGroupSpecs"][0]


def _review(new: dict[str, Any], old: dict[str, Any] | None, user: str) -> dict[str, Any]:
    request = {
        "uid": "u1",
        "namespace": "ray",
        "operation": "UPDATE" if old else "CREATE",
        "userInfo": {"username": user},
        "object": new,
        "oldObject": old,
    }
    body = json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()
    answer = review(body, fragment_of(example()), ControllerTemplate())
    response: dict[str, Any] = dict(answer.body["response"])
    response["outcome"] = answer.outcome
    return response


def test_the_webhook_answers_a_rayservice_rewrite_with_the_sidecar_and_the_counts() -> None:
    live = scaled(example())
    new = rewritten(live)
    response = _review(new, live, KUBERAY)
    ops = json.loads(base64.b64decode(response["patch"]))
    after = patched(new, ops)
    assert response["outcome"] == "injected" and response["warnings"]
    assert after["spec"]["headGroupSpec"] == live["spec"]["headGroupSpec"]
    assert after["spec"]["workerGroupSpecs"][:2] == live["spec"]["workerGroupSpecs"]
    # the same rewrite again, once stored: nothing to change, no loop
    assert _review(after, after, KUBERAY)["outcome"] == "up_to_date"


def test_counts_alone_and_clusters_not_opted_in() -> None:
    live = scaled(example())
    zeroed = copy.deepcopy(live)
    zeroed["spec"]["workerGroupSpecs"][0]["replicas"] = 0
    response = _review(zeroed, live, "alice")
    assert response["outcome"] == "counts_kept"
    assert patched(zeroed, json.loads(base64.b64decode(response["patch"]))) == live
    plain = yaml.safe_load(yaml.safe_dump(zeroed))
    plain["metadata"]["annotations"] = {}
    response = _review(plain, live, "alice")
    assert response["outcome"] == "not_opted_in" and "patch" not in response
