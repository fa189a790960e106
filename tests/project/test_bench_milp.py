"""The benchmark's exact optimum (bench.milp) on hand-made instances, and the generator."""

from __future__ import annotations

import pytest

pytest.importorskip("scipy", reason="the MILP benchmark needs scipy (dev/bench extra)")

from bench import milp
from bench.instances import MAX_BUNDLES, bundle_total, random_instance
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)


def group(
    name: str = "cpu", cost: float = 1.0, lo: int = 0, hi: int = 1000, **res: float
) -> WorkerGroup:
    """A worker group with pods of ``res`` (default 10 CPUs)."""
    return WorkerGroup(name, Resources.of(res or {"CPU": 10}), lo, hi, cost=cost)


def instance(
    groups: list[WorkerGroup],
    tasks: tuple[tuple[dict[str, float], int], ...] = (),
    pgs: tuple[PlacementGroup, ...] = (),
    floor: tuple[Bundle, ...] = (),
    nodes: tuple[WorkerNode, ...] = (),
    max_workers: int | None = None,
) -> PlanningInput:
    """A planning input from plain values."""
    demand = Demand(
        bundles=tuple(Bundle(Resources.of(r), n) for r, n in tasks),
        placement_groups=pgs,
        constraints=floor,
    )
    return PlanningInput(ClusterSpec("t", tuple(groups), max_workers=max_workers), demand, nodes)


def test_seed_example_twenty_five_cpu_tasks_need_ten_pods() -> None:
    """20 tasks of {CPU: 5} on 10-CPU pods: exactly 10 pods."""
    opt = milp.solve(instance([group()], (({"CPU": 5}, 20),)))
    assert (opt.status, opt.new, opt.cost, opt.unplaced) == ("optimal", {"cpu": 10}, 10.0, 0)


def test_cheaper_big_pod_beats_many_small_pods() -> None:
    """4 x {CPU: 3}: one 12-CPU pod at 2.5 beats four 4-CPU pods at 1 each."""
    inp = instance([group("small", 1.0, CPU=4), group("big", 2.5, CPU=12)], (({"CPU": 3}, 4),))
    opt = milp.solve(inp)
    assert (opt.new, opt.cost) == ({"small": 0, "big": 1}, 2.5)


def test_strict_pack_needs_one_pod_that_holds_the_whole_group() -> None:
    """STRICT_PACK 3 x {CPU: 4} needs the 16-CPU pod (3.0); PACK fits two 8-CPU pods (2.0)."""
    groups = [group("small", 1.0, CPU=8), group("big", 3.0, CPU=16)]
    bundles = (Resources.of(CPU=4),) * 3
    strict = milp.solve(instance(groups, pgs=(PlacementGroup(Strategy.STRICT_PACK, bundles),)))
    loose = milp.solve(instance(groups, pgs=(PlacementGroup(Strategy.PACK, bundles),)))
    assert (strict.new, strict.cost) == ({"small": 0, "big": 1}, 3.0)
    assert (loose.new, loose.cost) == ({"small": 2, "big": 0}, 2.0)


def test_strict_spread_puts_every_bundle_on_its_own_pod() -> None:
    """Two STRICT_SPREAD groups of 3 x {CPU: 1} need 3 pods, not 1."""
    pg = PlacementGroup(Strategy.STRICT_SPREAD, (Resources.of(CPU=1),) * 3, count=2)
    opt = milp.solve(instance([group()], pgs=(pg,)))
    assert (opt.new, opt.unplaced) == ({"cpu": 3}, 0)


def test_max_replicas_leaves_demand_unplaced() -> None:
    """maxReplicas 1 and 3 whole-pod tasks: 1 new pod, 2 bundles unplaced."""
    opt = milp.solve(instance([group(hi=1)], (({"CPU": 10}, 3),)))
    assert (opt.new, opt.unplaced, opt.unfit) == ({"cpu": 1}, 2, 0)


def test_strict_spread_group_is_placed_whole_or_not_at_all() -> None:
    """A 3-bundle STRICT_SPREAD group with room for 2 pods stays unplaced, and buys nothing."""
    pg = PlacementGroup(Strategy.STRICT_SPREAD, (Resources.of(CPU=1),) * 3)
    opt = milp.solve(instance([group(hi=2)], pgs=(pg,)))
    assert (opt.new, opt.unplaced, opt.cost) == ({"cpu": 0}, 3, 0.0)


def test_min_replicas_are_bought_without_demand() -> None:
    """minReplicas 2 and no demand: two pods."""
    opt = milp.solve(instance([group(lo=2, cost=1.5)]))
    assert (opt.new, opt.cost) == ({"cpu": 2}, 3.0)


def test_free_capacity_of_existing_pods_is_used_first() -> None:
    """A running pod with 6 free CPUs holds 3 x {CPU: 2}: nothing new."""
    node = WorkerNode("p0", "cpu", Resources.of(CPU=10), Resources.of(CPU=6))
    opt = milp.solve(instance([group()], (({"CPU": 2}, 3),), nodes=(node,)))
    assert (opt.new, opt.cost) == ({"cpu": 0}, 0.0)


def test_request_resources_floor_counts_total_not_available_capacity() -> None:
    """A busy 10-CPU pod meets a {CPU: 10} floor; a {CPU: 1} task still needs a new pod."""
    node = WorkerNode("p0", "cpu", Resources.of(CPU=10), Resources())
    floor = (Bundle(Resources.of(CPU=10)),)
    only_floor = milp.solve(instance([group()], floor=floor, nodes=(node,)))
    with_task = milp.solve(instance([group()], (({"CPU": 1}, 1),), floor=floor, nodes=(node,)))
    assert (only_floor.new, with_task.new) == ({"cpu": 0}, {"cpu": 1})


def test_bundle_bigger_than_every_pod_is_unfit_not_unplaced() -> None:
    """{CPU: 64} on 10-CPU pods: unfit, nothing bought."""
    opt = milp.solve(
        instance(
            [group()],
            (
                ({"CPU": 64}, 2),
                ({"CPU": 1}, 1),
            ),
        )
    )
    assert (opt.new, opt.unfit, opt.unplaced) == ({"cpu": 1}, 2, 0)


def test_max_workers_caps_pods_across_groups() -> None:
    """maxWorkers 3 with one pod already there: 2 new pods, 2 of 4 whole-pod tasks unplaced."""
    node = WorkerNode("p0", "cpu", Resources.of(CPU=10), Resources(), status=NodeStatus.RUNNING)
    inp = instance([group()], (({"CPU": 10}, 4),), nodes=(node,), max_workers=3)
    opt = milp.solve(inp)
    assert (opt.new, opt.unplaced) == ({"cpu": 2}, 2)


def test_gpu_fractions_pack_two_per_gpu() -> None:
    """4 x {GPU: 0.5} on 1-GPU pods: 2 pods; no GPU task goes to the CPU group."""
    inp = instance([group("cpu", 0.5), group("gpu", 3.0, CPU=8, GPU=1)], (({"GPU": 0.5}, 4),))
    opt = milp.solve(inp)
    assert (opt.new, opt.cost) == ({"cpu": 0, "gpu": 2}, 6.0)


def test_fixed_counts_report_the_demand_they_cannot_hold() -> None:
    """Checking a plan that buys 8 pods for 20 x {CPU: 5}: 4 bundles stay without a pod."""
    check = milp.solve(instance([group()], (({"CPU": 5}, 20),)), fixed_new={"cpu": 8})
    assert (check.status, check.new, check.unplaced) == ("optimal", {"cpu": 8}, 4)


def test_generator_is_deterministic_per_seed() -> None:
    """The same seed gives the same instance; another seed gives another one."""
    assert random_instance(7) == random_instance(7)
    assert random_instance(7) != random_instance(8)


def test_generator_stays_within_the_bundle_and_group_limits() -> None:
    """Every instance has at most 40 bundles, 1 to 4 groups, and pods within each max."""
    for seed in range(100):
        inp = random_instance(seed)
        assert bundle_total(inp) <= MAX_BUNDLES
        assert 1 <= len(inp.cluster.worker_groups) <= 4
        for g in inp.cluster.worker_groups:
            assert sum(n.group == g.name for n in inp.nodes) <= g.max_replicas


def test_generator_covers_every_strategy() -> None:
    """Over 100 seeds, placement groups of all four strategies appear."""
    seen = {pg.strategy for s in range(100) for pg in random_instance(s).demand.placement_groups}
    assert seen == set(Strategy)


def test_held_by_removes_the_demand_a_plan_reports_unplaceable() -> None:
    """Reported tasks, whole placement-group copies and the floor leave the held instance."""
    from bench.planner_bench import held_by
    from keda_ray_scaler.decisions import Plan, Unplaceable, UnplaceableReason
    from keda_ray_scaler.model import DemandKind

    pg = PlacementGroup(Strategy.SPREAD, (Resources.of(CPU=1), Resources.of(CPU=2)), count=3)
    floor = (Bundle(Resources.of(CPU=10)),)
    inp = instance([group()], (({"CPU": 5}, 20),), pgs=(pg,), floor=floor)
    blocked = UnplaceableReason.MAX_REPLICAS
    in_pg = DemandKind.PLACEMENT_GROUP
    plan = Plan(
        groups={},
        unplaceable=(
            Unplaceable(Resources.of(CPU=5), 4, blocked),
            Unplaceable(Resources.of(CPU=1), 2, blocked, "", in_pg, pg.strategy),
            Unplaceable(Resources.of(CPU=2), 2, blocked, "", in_pg, pg.strategy),
            Unplaceable(Resources.of(CPU=10), 1, blocked, "", DemandKind.CONSTRAINT),
        ),
    )
    held = held_by(inp, plan).demand
    assert held.bundles == (Bundle(Resources.of(CPU=5), 16),)
    assert held.placement_groups == (PlacementGroup(pg.strategy, pg.bundles, 1),)
    assert held.constraints == ()
