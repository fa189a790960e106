"""Invariants of ``plan`` on random inputs (hypothesis): bounds, accounting, safety, determinism."""

from __future__ import annotations

import dataclasses

import pytest
from builders import NO_SPEED_LIMIT
from hypothesis import given, settings
from hypothesis import strategies as st

from keda_ray_scaler.decisions import UnplaceableReason
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    JoinFailure,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.planner import plan

POD_SHAPES = (
    {"CPU": 4},
    {"CPU": 10},
    {"CPU": 16, "memory": 64},
    {"CPU": 8, "GPU": 1},
    {"CPU": 8, "fpga": 2},
)
DEMAND_SHAPES = (
    {"CPU": 1},
    {"CPU": 0.5},
    {"CPU": 3},
    {"CPU": 5},
    {"CPU": 2, "memory": 16},
    {"GPU": 1},
    {"GPU": 0.5, "CPU": 2},
    {"fpga": 1},
    {"CPU": 64},  # fits no pod
)


@st.composite
def inputs(draw: st.DrawFn, *, unbounded: bool = False) -> PlanningInput:
    """A random cluster with groups, pods in every state and demand of every kind."""
    n = draw(st.integers(1, 3))
    picks = draw(
        st.lists(st.sampled_from(range(len(POD_SHAPES))), min_size=n, max_size=n, unique=True)
    )
    groups = []
    for i, p in enumerate(picks):
        lo = 0 if unbounded else draw(st.integers(0, 2))
        hi = 10_000 if unbounded else draw(st.integers(lo, 8))
        groups.append(
            WorkerGroup(
                f"g{i}",
                Resources.of(POD_SHAPES[p]),
                min_replicas=lo,
                max_replicas=hi,
                idle_timeout_s=60.0,
                cost=draw(st.sampled_from([0.5, 1.0, 3.0])),
            )
        )
    nodes = []
    for k in range(draw(st.integers(0, 6))):
        g = draw(st.sampled_from(groups))
        share = draw(st.sampled_from([0, 1, 2, 4]))  # free quarters
        avail = Resources.from_units({r: v * share // 4 for r, v in g.resources})
        nodes.append(
            WorkerNode(
                pod=f"pod-{k}",
                group=g.name,
                total=g.resources,
                available=avail,
                idle_s=draw(st.sampled_from([0.0, 30.0, 60.0, 120.0, 600.0])),
                status=(status := draw(st.sampled_from(list(NodeStatus)))),
                failure=(
                    draw(st.sampled_from(list(JoinFailure)))
                    if status is NodeStatus.FAILING
                    else None
                ),
            )
        )
    shape = st.sampled_from(DEMAND_SHAPES).map(Resources.of)
    bundles = draw(st.lists(st.builds(Bundle, shape, st.integers(1, 30)), max_size=4))
    pgs = draw(
        st.lists(
            st.builds(
                PlacementGroup,
                st.sampled_from(list(Strategy)),
                st.lists(shape, min_size=1, max_size=3).map(tuple),
                st.integers(1, 3),
            ),
            max_size=2,
        )
    )
    constraints = draw(st.lists(st.builds(Bundle, shape, st.integers(1, 4)), max_size=1))
    max_workers = None if unbounded else draw(st.none() | st.integers(0, 20))
    speed = NO_SPEED_LIMIT if unbounded else draw(st.sampled_from([1.0, NO_SPEED_LIMIT]))
    cluster = ClusterSpec("prop", tuple(groups), max_workers, speed)
    demand = Demand(tuple(bundles), tuple(pgs), tuple(constraints))
    limits = (
        []
        if unbounded
        else draw(st.lists(st.tuples(st.sampled_from(groups), st.integers(0, 2)), max_size=2))
    )
    launch = tuple(sorted({g.name: n for g, n in limits}.items()))
    return PlanningInput(cluster, demand, tuple(nodes), launch)


@given(inputs())
@settings(max_examples=100, deadline=None)
def test_no_group_above_max_or_below_min(inp: PlanningInput) -> None:
    """desired stays in [min, max]; target is max(desired, floor); new pods respect max."""
    for g in inp.cluster.worker_groups:
        gp = plan(inp).groups[g.name]
        assert g.min_replicas <= gp.desired <= g.max_replicas
        assert gp.target == max(gp.desired, gp.floor)
        failing = sum(1 for n in inp.nodes if n.group == g.name and n.status is NodeStatus.FAILING)
        # failing pods leave at once: new pods may replace them within maxReplicas
        assert gp.floor - failing + gp.new <= max(g.max_replicas, g.min_replicas, gp.floor)


@given(inputs())
@settings(max_examples=100, deadline=None)
def test_failing_pods_always_go_and_backed_off_groups_get_at_most_their_limit(
    inp: PlanningInput,
) -> None:
    """A FAILING pod is removable at once, with its reason; a backed-off group gets at most
    its launch limit of new pods beyond those minReplicas asks for."""
    p = plan(inp)
    for g in inp.cluster.worker_groups:
        gp = p.groups[g.name]
        failing = {n.pod for n in inp.nodes if n.group == g.name and n.status is NodeStatus.FAILING}
        assert failing <= set(gp.over_cap) and failing <= set(gp.removable)
        reasons = {pod: d.reason for d in gp.decisions for pod in d.pods if pod in failing}
        for n in inp.nodes:
            if n.pod in failing:
                assert n.failure is not None and reasons[n.pod].value == n.failure.value
        limit = inp.launch_limit(g.name)
        if limit is not None:
            staying = gp.floor - len(gp.over_cap)
            assert gp.new <= max(limit, g.min_replicas - staying)


@given(inputs())
@settings(max_examples=100, deadline=None)
def test_target_never_below_pods_that_are_not_victims(inp: PlanningInput) -> None:
    """The safety floor: target >= pods that are not victims."""
    p = plan(inp)
    for g in inp.cluster.worker_groups:
        live = sum(1 for n in inp.nodes if n.group == g.name and n.status is not NodeStatus.VICTIM)
        assert p.groups[g.name].floor == live
        assert p.groups[g.name].target >= live


@given(inputs())
@settings(max_examples=100, deadline=None)
def test_no_busy_pod_is_removable(inp: PlanningInput) -> None:
    """Removable pods are pending or unused; those below every cap also idle past the timeout,
    longest idle first; minReplicas stays."""
    p = plan(inp)
    by_pod = {n.pod: n for n in inp.nodes}
    for g in inp.cluster.worker_groups:
        gp = p.groups[g.name]
        assert gp.removable[: len(gp.over_cap)] == gp.over_cap
        for pod in gp.removable:
            node = by_pod[pod]
            assert node.group == g.name
            # FAILING: not (or no longer) a Ray node, so nothing of it is in use
            assert node.status in (NodeStatus.PENDING, NodeStatus.FAILING) or (
                node.status is NodeStatus.RUNNING and node.available == node.total
            )
        idle_removal = gp.removable[len(gp.over_cap) :]
        for pod in idle_removal:
            assert by_pod[pod].status is NodeStatus.RUNNING
            assert by_pod[pod].idle_s >= g.idle_timeout_s
        # failing pods go even at minReplicas: new pods replace them (the minReplicas rule)
        failing = sum(1 for pod in gp.removable if by_pod[pod].status is NodeStatus.FAILING)
        assert len(gp.removable) - failing <= max(0, gp.floor - failing - g.min_replicas)
        idle = [by_pod[pod].idle_s for pod in idle_removal]
        assert idle == sorted(idle, reverse=True)


@given(inputs())
@settings(max_examples=100, deadline=None)
def test_demand_no_pod_can_hold_is_reported_with_its_count(inp: PlanningInput) -> None:
    """Every {CPU: 64} task (bigger than every pod) comes back as no_group_fits, never dropped."""
    big = Resources.of(CPU=64)
    asked = sum(b.count for b in inp.demand.bundles if b.resources == big)
    told = sum(
        u.count
        for u in plan(inp).unplaceable
        if u.resources == big
        and u.kind.value == "task"
        and u.reason is UnplaceableReason.NO_GROUP_FITS
    )
    assert told == asked


@given(inputs(unbounded=True))
@settings(max_examples=100, deadline=None)
def test_without_bounds_every_placeable_bundle_is_placed(inp: PlanningInput) -> None:
    """No max, no maxWorkers, no speed limit: only never-placeable demand is reported."""
    p = plan(inp)
    assert all(u.reason is UnplaceableReason.NO_GROUP_FITS for u in p.unplaceable)


@given(inputs(unbounded=True))
@settings(max_examples=100, deadline=None)
def test_planned_capacity_covers_placed_task_demand(inp: PlanningInput) -> None:
    """Per resource, free capacity of usable pods plus new pods covers what was placed."""
    inp = dataclasses.replace(inp, demand=Demand(bundles=inp.demand.bundles))
    p = plan(inp)
    need: dict[str, int] = {}
    for b in inp.demand.bundles:
        for r, v in b.resources:
            need[r] = need.get(r, 0) + v * b.count
    for u in p.unplaceable:
        for r, v in u.resources:
            need[r] -= v * u.count
    have: dict[str, int] = {}
    for n in inp.nodes:
        if n.status in (NodeStatus.RUNNING, NodeStatus.PENDING):  # pending: wholly free
            for r, v in n.total if n.status is NodeStatus.PENDING else n.available:
                have[r] = have.get(r, 0) + v
    for g in inp.cluster.worker_groups:
        for r, v in g.resources:
            have[r] = have.get(r, 0) + v * p.groups[g.name].new
    assert all(need[r] <= have.get(r, 0) for r in need)


@given(inputs())
@settings(max_examples=100, deadline=None)
def test_the_same_input_gives_the_same_plan(inp: PlanningInput) -> None:
    """Determinism: equal plans, and the order of pods and bundles in the input does not matter."""
    shuffled = dataclasses.replace(
        inp,
        nodes=tuple(reversed(inp.nodes)),
        demand=dataclasses.replace(inp.demand, bundles=tuple(reversed(inp.demand.bundles))),
    )
    assert plan(inp) == plan(inp) == plan(shuffled)


#: A cap that binds: demand a group could hold, left over at maxReplicas or maxWorkers.
CAPPED = {UnplaceableReason.MAX_REPLICAS, UnplaceableReason.MAX_WORKERS}

#: maxReplicas no generated demand reaches.
_NO_MAX = 10_000


def _uncapped(inp: PlanningInput) -> PlanningInput:
    """``inp`` with no maxReplicas and no maxWorkers (upscalingSpeed as it is)."""
    cluster = inp.cluster
    groups = tuple(
        dataclasses.replace(g, max_replicas=max(_NO_MAX, g.min_replicas))
        for g in cluster.worker_groups
    )
    lifted = dataclasses.replace(cluster, worker_groups=groups, max_workers=None)
    return dataclasses.replace(inp, cluster=lifted)


def _a_cap_binds(inp: PlanningInput) -> bool:
    """Whether maxReplicas or maxWorkers changes the plan: without them it asks other targets.
    (The reason an unplaced bundle is listed under does not tell: demand left over at
    maxReplicas can be listed as deferred by upscalingSpeed; hypothesis found it in CI,
    2026-11-26: 8 {CPU: 5} and 19 -> 37 {CPU: 1} on 10-CPU pods, max 7, targets 7 -> 6.)"""
    capped, free = plan(inp), plan(_uncapped(inp))
    return any(free.groups[n].target != g.target for n, g in capped.groups.items())


def _doubled(inp: PlanningInput, which: int) -> PlanningInput:
    i = which % len(inp.demand.bundles)
    bundles = list(inp.demand.bundles)
    bundles[i] = Bundle(bundles[i].resources, bundles[i].count * 2)
    return dataclasses.replace(inp, demand=dataclasses.replace(inp.demand, bundles=tuple(bundles)))


@given(inputs(), st.integers(0, 3))
@settings(max_examples=100, deadline=None)
def test_doubling_a_count_never_lowers_a_target(inp: PlanningInput, which: int) -> None:
    """Count scaling: twice as many bundles of one shape never lower the total target, while
    no cap binds (what a binding cap does: the known case below)."""
    if not inp.demand.bundles:
        return
    doubled = _doubled(inp, which)
    before, after = plan(inp), plan(doubled)
    if any(u.reason in CAPPED for u in after.unplaceable) or _a_cap_binds(doubled):
        return
    assert sum(g.target for g in after.groups.values()) >= sum(
        g.target for g in before.groups.values()
    )


@pytest.mark.xfail(
    strict=True,
    reason="known: when maxReplicas binds, the planner keeps the run holding the most bundles; "
    "eight more {CPU: 1} tasks then take the 10-CPU pod from two {CPU: 5} tasks and a 4-CPU pod "
    "fewer is asked for (Ray's v2, largest first, keeps 4). Found by the property above.",
)
def test_more_small_tasks_at_a_binding_cap_never_lower_the_target() -> None:
    """The property's counterexample (hypothesis, 2026-11-26): 9 -> 17 {CPU: 1} beside 2
    {CPU: 5}, groups of 4 CPU (max 3) and 10 CPU (max 1, its one pod pending)."""
    cluster = ClusterSpec(
        "prop",
        (
            WorkerGroup("g0", Resources.of(CPU=4), max_replicas=3, cost=0.5),
            WorkerGroup("g1", Resources.of(CPU=10), max_replicas=1, cost=0.5),
        ),
        upscaling_speed=1.0,
    )
    pending = WorkerNode(
        "pod-0", "g1", Resources.of(CPU=10), Resources(), status=NodeStatus.PENDING
    )
    small = Bundle(Resources.of(CPU=1), 9)
    big = Bundle(Resources.of(CPU=5), 2)
    inp = PlanningInput(cluster, Demand(bundles=(small, big)), (pending,))
    before, after = plan(inp), plan(_doubled(inp, 0))
    assert sum(g.target for g in before.groups.values()) == 4
    assert sum(g.target for g in after.groups.values()) >= 4
