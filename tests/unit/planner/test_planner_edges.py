"""The planner at the edges of Ray's semantics (issue 8): caps lowered below what runs,
zero-resource groups, a rate limit that defers, less unused capacity (Ray's implicit resources:
test_planner_implicit.py)."""

from __future__ import annotations

from pathlib import Path

from builders import cluster, group, inp, node, res

from keda_ray_scaler.config import load_cluster_spec, load_snapshot
from keda_ray_scaler.decisions import Decision, DecisionKind, UnplaceableReason, Why
from keda_ray_scaler.model import NodeStatus, Resources, WorkerGroup
from keda_ray_scaler.planner import plan

ROOT = Path(__file__).resolve().parents[3]
CPU = group("cpu", cpu=10)


def test_a_cluster_above_a_lowered_max_workers_sheds_pending_then_idle_never_busy() -> None:
    """4 pods (1 pending, 1 idle, 2 busy) under maxWorkers 3: the pending pod goes."""
    nodes = [
        node("busy-a", CPU, used={"CPU": 5}),
        node("busy-b", CPU, used={"CPU": 5}),
        node("idle", CPU, idle=5),
        node("pending", CPU, status=NodeStatus.PENDING),
    ]
    gp = plan(inp(cluster(CPU, max_workers=3), nodes=nodes)).groups["cpu"]
    assert (gp.removable, gp.over_cap, gp.desired, gp.new) == (("pending",), ("pending",), 3, 0)
    assert Decision(DecisionKind.REMOVE, 1, Why.MAX_WORKERS, ("pending",), 3) in gp.decisions


def test_a_group_above_a_lowered_max_replicas_sheds_idle_pods_longest_idle_first() -> None:
    """maxReplicas 1 under 4 pods: pending, then idle 30 s and idle 10 s go (timeout 60 s)."""
    g = group("cpu", cpu=10, max=1)
    nodes = [
        node("busy", g, used={"CPU": 1}),
        node("idle-10", g, idle=10),
        node("idle-30", g, idle=30),
        node("pending", g, status=NodeStatus.PENDING),
    ]
    gp = plan(inp(cluster(g), nodes=nodes)).groups["cpu"]
    assert gp.removable == ("pending", "idle-30", "idle-10")
    assert gp.over_cap == gp.removable
    assert (gp.desired, gp.target) == (1, 4)  # the target falls as the agent publishes victims


def test_busy_pods_alone_above_a_cap_stay_and_the_plan_says_so() -> None:
    """3 busy pods, maxReplicas 1: none removable; a typed decision keeps 2 above the cap."""
    g = group("cpu", cpu=10, max=1)
    nodes = [node(f"busy-{i}", g, used={"CPU": 1}) for i in range(3)]
    gp = plan(inp(cluster(g), nodes=nodes)).groups["cpu"]
    assert gp.removable == ()
    assert Decision(DecisionKind.KEEP, 2, Why.BUSY_ABOVE_CAP, (), 1) in gp.decisions


def test_busy_pods_alone_above_max_workers_are_reported_for_the_cluster() -> None:
    """3 busy pods, maxWorkers 2: kept, and the plan reports one busy pod above the cap."""
    nodes = [node(f"busy-{i}", CPU, used={"CPU": 1}) for i in range(3)]
    p = plan(inp(cluster(CPU, max_workers=2), nodes=nodes))
    assert p.groups["cpu"].removable == ()
    assert p.decisions == (Decision(DecisionKind.KEEP, 1, Why.BUSY_ABOVE_CAP, (), 2),)


def test_once_over_cap_pods_are_victims_targets_sum_to_max_workers() -> None:
    """After the agent publishes the removals, targets never sum above maxWorkers."""
    small, big = group("small", cpu=2), group("big", cpu=10)
    nodes = [node(f"s{i}", small, idle=5.0 * i) for i in range(3)] + [
        node("b0", big, used={"CPU": 1}),
        node("b1", big, idle=1),
    ]
    spec = cluster(small, big, max_workers=3)
    first = plan(inp(spec, nodes=nodes))
    going = {p for gp in first.groups.values() for p in gp.over_cap}
    assert going == {"s2", "s1"}
    after = [
        n if n.pod not in going else node(n.pod, small, status=NodeStatus.VICTIM) for n in nodes
    ]
    assert sum(gp.target for gp in plan(inp(spec, nodes=after)).groups.values()) == 3


def test_cap_removals_do_not_take_demand_first() -> None:
    """A pod above maxReplicas goes even if a pending task could use it (Ray's order)."""
    g = group("cpu", cpu=10, max=1)
    nodes = [node("busy", g, used={"CPU": 10}), node("idle", g, idle=1)]
    p = plan(inp(cluster(g), bundles=[(res(cpu=5), 1)], nodes=nodes))
    assert p.groups["cpu"].removable == ("idle",)
    assert p.unplaceable[0].reason is UnplaceableReason.MAX_REPLICAS


def test_a_zero_resource_group_holds_its_min_replicas_and_takes_no_cpu_demand() -> None:
    """``resources: {}``: minReplicas 2 pods; CPU tasks go to the CPU group."""
    zero = WorkerGroup("zero", Resources(), min_replicas=2)
    p = plan(inp(cluster(zero, CPU), bundles=[(res(cpu=5), 2), (Resources(), 3)]))
    assert (p.groups["zero"].target, p.groups["cpu"].new, p.unplaceable) == (2, 1, ())


def test_a_rate_limit_defers_the_seed_example_and_buys_no_gpu_pods() -> None:
    """The shipped cluster (upscalingSpeed 1) and the seed example: 5 cpu pods, 10 tasks wait."""
    spec = load_cluster_spec(ROOT / "manifests/examples/ray-cluster/cluster.yaml")
    p = plan(load_snapshot(ROOT / "examples/snapshot.yaml", spec))
    assert (p.groups["cpu"].new, p.groups["gpu-inference"].new) == (5, 0)
    assert [(u.count, u.reason) for u in p.unplaceable] == [(10, UnplaceableReason.UPSCALING_SPEED)]


def test_among_equal_pods_and_cost_less_unused_capacity_wins() -> None:
    """5 x {CPU: 16} on 64-CPU and 16-CPU pods of equal price: one of each, not two 64s."""
    big, small = group("a-big", cpu=64), group("b-small", cpu=16)
    p = plan(inp(cluster(big, small), bundles=[(res(cpu=16), 5)]))
    assert (p.groups["a-big"].new, p.groups["b-small"].new) == (1, 1)
