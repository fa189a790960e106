"""KubeRay mode, pure parts: a RayCluster read as worker groups, the scale decision, the patch,
and the shipped manifests (CRD, RBAC, example RayCluster, RayWorkerGroups, ScaledObjects)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from kuberay_examples import KUBERAY, example, yaml_docs
from ray.autoscaler._private.kuberay.autoscaling_config import (
    _derive_autoscaling_config_from_ray_cr,
)

from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec, in_tree_autoscaling
from keda_ray_scaler.agent.kuberay.raycluster_scale import (
    Action,
    GroupState,
    decide,
    group_state,
    kept_by_kuberay,
    scale_patch,
)
from keda_ray_scaler.agent.kuberay.rwg_status import selector_of
from keda_ray_scaler.agent.kuberay.scaledobject import bounds_problem, parse_scaled_object
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.model import Resources

GIB = 2**30


def worker(**fields: Any) -> dict[str, Any]:
    """A worker group spec: ``worker(rayStartParams={...}, limits={...})``."""
    limits = fields.pop("limits", {"cpu": "4"})
    group = {
        "groupName": "g",
        "minReplicas": 0,
        "maxReplicas": 5,
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "w", "resources": {"limits": limits}}]}},
    }
    group.update(fields)
    return group


def raycluster(*groups: dict[str, Any]) -> dict[str, Any]:
    """A RayCluster with these worker groups (and the head Ray's config needs)."""
    head = worker(limits={"cpu": "1"})
    del head["groupName"]
    return {
        "metadata": {"name": "rc", "namespace": "ns"},
        "spec": {"headGroupSpec": head, "workerGroupSpecs": list(groups)},
    }


def ray_says(rc: dict[str, Any]) -> dict[str, Resources]:
    """Ray's own KubeRay autoscaling config: each worker group's resources."""
    config = _derive_autoscaling_config_from_ray_cr(copy.deepcopy(rc))
    return {
        name: Resources.of(t["resources"])
        for name, t in config["available_node_types"].items()
        if name != "headgroup"
    }


# --- resources as Ray computes them ---------------------------------------------------------


def test_example_groups_match_rays_own_kuberay_config() -> None:
    """The example's cpu and gpu groups: resources as Ray's KubeRay integration computes them."""
    rc = example()
    spec = cluster_spec(rc)
    assert {g.name: g.resources for g in spec.worker_groups} == ray_says(rc)
    cpu, gpu = spec.worker_groups
    assert cpu.resources == Resources.of(CPU=10, memory=40 * GIB)
    assert gpu.resources == Resources.of(CPU=8, GPU=1, memory=32 * GIB)
    assert (cpu.min_replicas, cpu.max_replicas, cpu.idle_timeout_s) == (0, 50, 60.0)
    assert (gpu.min_replicas, gpu.max_replicas, gpu.idle_timeout_s) == (0, 8, 300.0)


@pytest.mark.parametrize(
    "group",
    [
        pytest.param(worker(rayStartParams={"num-cpus": "10"}), id="num-cpus over limits"),
        pytest.param(worker(limits={"cpu": "2500m"}), id="cpu limit rounded up"),
        pytest.param(worker(limits={"cpu": "2", "nvidia.com/gpu": "2"}), id="gpu from limits"),
        pytest.param(
            worker(rayStartParams={"num-gpus": "3"}, limits={"cpu": "2", "nvidia.com/gpu": "1"}),
            id="num-gpus over limits",
        ),
        pytest.param(
            worker(rayStartParams={"memory": "1000000"}, limits={"cpu": "1", "memory": "2Gi"}),
            id="memory param over limits",
        ),
        pytest.param(
            worker(rayStartParams={"resources": '"{\\"Custom1\\": 1, \\"B\\": 5}"'}),
            id="custom resources param",
        ),
        pytest.param(
            worker(resources={"CPU": "3", "GPU": "1", "X": "2"}, limits={"cpu": "8"}),
            id="top-level resources first",
        ),
    ],
)
def test_group_resources_equal_rays(group: dict[str, Any]) -> None:
    """Each way of giving resources reads the same as Ray's KubeRay autoscaling config."""
    rc = raycluster(group)
    assert cluster_spec(rc).worker_groups[0].resources == ray_says(rc)["g"]


def test_no_cpu_anywhere_names_the_group() -> None:
    """A group without CPU in params or container resources is a ConfigError naming it."""
    rc = raycluster(worker(limits={}))
    with pytest.raises(ConfigError, match=r"workerGroupSpecs\[0\].*num-cpus"):
        cluster_spec(rc)


def test_num_of_hosts_multiplies_bounds() -> None:
    """minReplicas/maxReplicas count replicas of numOfHosts pods, as Ray's config counts them."""
    spec = cluster_spec(raycluster(worker(numOfHosts=2, minReplicas=1, maxReplicas=3)))
    assert (spec.worker_groups[0].min_replicas, spec.worker_groups[0].max_replicas) == (2, 6)


def test_in_tree_autoscaling_detected() -> None:
    """enableInTreeAutoscaling true is what the agent refuses."""
    rc = example()
    assert not in_tree_autoscaling(rc)
    rc["spec"]["enableInTreeAutoscaling"] = True
    assert in_tree_autoscaling(rc)


# --- the decision ------------------------------------------------------------------------------


def state(
    replicas: int, *, low: int = 0, high: int = 50, delete: tuple[str, ...] = ()
) -> GroupState:
    """The cpu group with ``replicas`` and bounds."""
    return GroupState("cpu", 0, replicas, low, high, delete)


PODS = [f"p{i}" for i in range(10)]


def test_up_raises_replicas_bounded_by_max() -> None:
    """desired above replicas raises them, never past maxReplicas."""
    d = decide(state(2, high=8), 12, PODS[:2], [])
    assert (d.action, d.replicas, d.workers_to_delete) == (Action.SCALE_UP, 8, ())


def test_down_names_exactly_the_victims_it_lowers_by() -> None:
    """10 -> 7 with 2 drained victims: replicas 8, both victims named, nothing random."""
    d = decide(state(10), 7, PODS, ["p3", "p5"])
    assert (d.action, d.replicas, d.workers_to_delete) == (Action.SCALE_DOWN, 8, ("p3", "p5"))


def test_down_names_no_more_victims_than_the_difference() -> None:
    """10 -> 9 with 3 victims: one named (the first by name), replicas 9."""
    d = decide(state(10), 9, PODS, ["p7", "p2", "p4"])
    assert (d.replicas, d.workers_to_delete) == (9, ("p2",))


def test_never_lowers_without_victims() -> None:
    """desired below replicas and no victim: nothing changes."""
    d = decide(state(10), 5, PODS, [])
    assert (d.action, d.replicas, d.changes) == (Action.WAIT_VICTIMS, 10, False)


def test_victim_whose_pod_is_gone_is_not_named() -> None:
    """A stale victim (no active pod) is never named: KubeRay would delete another at random."""
    d = decide(state(9), 8, PODS[:9], ["p9"])
    assert (d.action, d.changes) == (Action.WAIT_VICTIMS, False)


def test_down_never_below_min() -> None:
    """desired below minReplicas is clamped: 3 -> min 2 names one victim of two."""
    d = decide(state(3, low=2), 0, PODS[:3], ["p0", "p1"])
    assert (d.replicas, d.workers_to_delete) == (2, ("p0",))


def test_waits_while_kuberay_has_not_deleted_the_named() -> None:
    """A named pod still active: KubeRay has not processed the list; wait (Ray's safe_to_scale)."""
    d = decide(state(8, delete=("p8", "p9")), 2, PODS, ["p1"])
    assert (d.action, d.changes) == (Action.WAIT_OPERATOR, False)


def test_waits_while_pods_exceed_replicas() -> None:
    """More pods than replicas: KubeRay deletes at random soon; do not add to it."""
    d = decide(state(8), 7, PODS, ["p1"])
    assert d.action == Action.WAIT_OPERATOR


def test_processed_list_is_cleared() -> None:
    """Names KubeRay already deleted are cleared, with the next change or alone."""
    assert decide(state(8, delete=("x",)), 8, PODS[:8], []).action == Action.CLEAR
    up = decide(state(8, delete=("x",)), 9, PODS[:8], [])
    assert (up.action, up.workers_to_delete) == (Action.SCALE_UP, ())


def test_replicas_below_a_raised_min_are_written_as_kuberay_keeps_them() -> None:
    """min raised to 2 above replicas 1: KubeRay keeps 2 pods without writing replicas; the
    agent writes 2, so lowering min later never leaves KubeRay a replicas to delete toward."""
    d = decide(state(1, low=2, high=2), 0, PODS[:2], [])
    assert (d.action, d.replicas, d.changes) == (Action.SYNC, 2, True)
    assert kept_by_kuberay(state(1, low=2)) == 2
    up = decide(state(1, low=2), 4, PODS[:2], [])
    assert (up.action, up.replicas) == (Action.SCALE_UP, 4)


def test_replicas_above_a_lowered_max_wait_for_kuberay_then_are_written() -> None:
    """max lowered to 3 under replicas 5: KubeRay deletes 2 pods at random (its own clamp);
    the agent waits while there are more pods, then writes replicas 3."""
    assert decide(state(5, high=3), 5, PODS[:5], []).action == Action.WAIT_OPERATOR
    d = decide(state(5, high=3), 5, PODS[:3], [])
    assert (d.action, d.replicas) == (Action.SYNC, 3)
    assert kept_by_kuberay(state(5, low=4, high=3)) == 3


def test_a_lowered_min_names_victims_from_the_replicas_kuberay_keeps() -> None:
    """replicas 2 (synced) at min 1 with one drained victim and desired 1: replicas 1, named."""
    d = decide(state(2, low=1, high=2), 1, PODS[:2], ["p1"])
    assert (d.action, d.replicas, d.workers_to_delete) == (Action.SCALE_DOWN, 1, ("p1",))


def test_patch_has_preconditions_then_both_fields() -> None:
    """One JSON patch: groupName test, resourceVersion, replicas and workersToDelete together."""
    d = decide(state(10), 8, PODS, ["p1", "p2"])
    assert scale_patch("42", GroupState("cpu", 1, 10, 0, 50), d) == [
        {"op": "test", "path": "/spec/workerGroupSpecs/1/groupName", "value": "cpu"},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
        {"op": "add", "path": "/spec/workerGroupSpecs/1/replicas", "value": 8},
        {
            "op": "add",
            "path": "/spec/workerGroupSpecs/1/scaleStrategy",
            "value": {"workersToDelete": ["p1", "p2"]},
        },
    ]


def test_group_state_reads_replicas_bounds_and_list() -> None:
    """group_state: index, replicas (KubeRay's default 1), bounds, workersToDelete."""
    rc = example()
    rc["spec"]["workerGroupSpecs"][1]["scaleStrategy"] = {"workersToDelete": ["a"]}
    del rc["spec"]["workerGroupSpecs"][1]["replicas"]
    assert group_state(rc, "gpu") == GroupState("gpu", 1, 1, 0, 8, ("a",))
    assert group_state(rc, "nope") is None


# --- manifests -----------------------------------------------------------------------------------


def _kustomized(path: Path) -> list[dict[str, Any]]:
    import subprocess

    out = subprocess.run(
        ["kubectl", "kustomize", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    """``kubectl kustomize manifests/kuberay/example``."""
    return _kustomized(KUBERAY / "example")


def _of(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def test_scaled_objects_bounds_equal_the_rayclusters_groups(rendered: list[dict[str, Any]]) -> None:
    """Each ScaledObject targets a RayWorkerGroup whose group has the same min and max."""
    (rc,) = _of(rendered, "RayCluster")
    spec = cluster_spec(rc)
    groups = {g["metadata"]["name"]: g["spec"] for g in _of(rendered, "RayWorkerGroup")}
    scaled = _of(rendered, "ScaledObject")
    assert len(scaled) == len(spec.worker_groups) == len(groups) == 2
    for so in scaled:
        ref = so["spec"]["scaleTargetRef"]
        assert (ref["apiVersion"], ref["kind"]) == ("keda-ray-scaler.io/v1alpha1", "RayWorkerGroup")
        rwg = groups[ref["name"]]
        group = spec.group(rwg["groupName"])
        assert group is not None and rwg["rayCluster"] == spec.name
        view = parse_scaled_object(so)
        assert bounds_problem(view, group.min_replicas, group.max_replicas) == ""
        (trigger,) = so["spec"]["triggers"]
        # push: KEDA's activation from zero at the scaler's refresh, not its next poll
        assert trigger["type"] == "external-push"
        meta = trigger["metadata"]
        assert (meta["rayCluster"], meta["workerGroup"]) == (spec.name, group.name)


def test_bounds_problem_names_both_fields() -> None:
    """A ScaledObject whose min/max differ from the group's says which and by how much."""
    so = parse_scaled_object({"metadata": {"name": "s"}, "spec": {"minReplicaCount": 1}})
    assert bounds_problem(so, 0, 50) == (
        "ScaledObject s: minReplicaCount 1 != group minReplicas 0; "
        "maxReplicaCount 100 != group maxReplicas 50"
    )


def test_crd_scale_subresource_maps_replicas_and_selector() -> None:
    """/scale reads spec.replicas, status.replicas and status.selector."""
    (crd,) = yaml_docs(KUBERAY / "crd" / "rayworkergroups.yaml")
    (version,) = crd["spec"]["versions"]
    assert crd["spec"]["scope"] == "Namespaced"
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }


def test_agent_rbac_covers_kuberay_mode(rendered: list[dict[str, Any]]) -> None:
    """The agent's Role: pods read, rayclusters get/patch, rayworkergroups list and status patch
    (what each verb allows on a real API server:
    tests/real/control_plane/test_least_privilege.py)."""
    rules = [r for role in _of(rendered, "Role") for r in role["rules"]]
    granted = {
        (g, res, v)
        for r in rules
        for g in r["apiGroups"]
        for res in r["resources"]
        for v in r["verbs"]
    }
    for verb in ("get", "list", "watch"):
        assert ("", "pods", verb) in granted
    for verb in ("get", "patch"):
        assert ("ray.io", "rayclusters", verb) in granted
    assert ("keda-ray-scaler.io", "rayworkergroups", "list") in granted
    assert ("keda-ray-scaler.io", "rayworkergroups/status", "patch") in granted
    assert not any(v in ("delete", "create", "*") for _, _, v in granted)
    (rc,) = _of(rendered, "RayCluster")
    names = {r["resources"][0]: r.get("resourceNames") for r in rules}
    assert names["rayclusters"] == [rc["metadata"]["name"]]  # a stolen token: this cluster only
    assert names["rayworkergroups/status"] == sorted(
        g["metadata"]["name"] for g in _of(rendered, "RayWorkerGroup")
    )


def test_the_admission_policy_admits_the_fields_scale_patch_writes(
    rendered: list[dict[str, Any]],
) -> None:
    """The fields the agent's patch writes in a worker group are exactly the policy's
    agentFields; its other operations are preconditions (the real API server's verdicts:
    tests/real/control_plane/test_least_privilege.py)."""
    (policy,) = _of(rendered, "ValidatingAdmissionPolicy")
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    d = decide(state(10), 8, PODS, ["p1", "p2"])
    ops = scale_patch("42", GroupState("cpu", 1, 10, 0, 50), d)
    written = sorted(
        op["path"].rsplit("/", 1)[1]
        for op in ops
        if op["path"].startswith("/spec/") and op["op"] != "test"
    )
    assert variables["agentFields"] == str(written).replace('"', "'")
    assert {op["op"] for op in ops if op["path"] == "/metadata/resourceVersion"} == {"replace"}


def test_agent_is_a_sidecar_of_the_head_in_kuberay_mode(rendered: list[dict[str, Any]]) -> None:
    """The head pod template runs the agent with --raycluster (no cluster spec file)."""
    (rc,) = _of(rendered, "RayCluster")
    assert rc["spec"]["enableInTreeAutoscaling"] is False
    head = rc["spec"]["headGroupSpec"]["template"]["spec"]
    (agent,) = [c for c in head["containers"] if c["name"] == "agent"]
    assert f"--raycluster={rc['metadata']['name']}" in agent["args"]
    assert not any(a.startswith("--cluster-spec") for a in agent["args"])
    assert head["serviceAccountName"] == f"ray-{rc['metadata']['name']}-agent"  # its own


def test_selector_is_kuberays_worker_labels() -> None:
    """status.selector selects the group's worker pods by KubeRay's labels."""
    assert (
        selector_of("demo", "cpu") == "ray.io/cluster=demo,ray.io/group=cpu,ray.io/node-type=worker"
    )
