"""The planner's rules, one named case each: the spec of ``plan(PlanningInput) -> Plan``."""

from __future__ import annotations

from builders import cluster, group, inp, node, pg, res

from keda_ray_scaler.decisions import Decision, DecisionKind, UnplaceableReason, Why
from keda_ray_scaler.model import DemandKind, NodeStatus, Strategy
from keda_ray_scaler.planner import plan
from keda_ray_scaler.planner.search import SearchLimits

CPU = group("cpu", cpu=10, max=50)
GPU = group("gpu", cpu=8, gpu=1, max=8, cost=4.0)


def test_twenty_tasks_of_five_cpu_on_ten_cpu_pods_need_exactly_ten_pods() -> None:
    """The seed example: 20 x {CPU: 5} on 10-CPU pods give 10 pods."""
    p = plan(inp(cluster(CPU), bundles=[(res(cpu=5), 20)]))
    assert (p.groups["cpu"].target, p.groups["cpu"].new) == (10, 10)
    assert p.unplaceable == ()


def test_demand_goes_onto_free_capacity_before_new_pods() -> None:
    """Two pods with 5 free CPUs each take two {CPU: 5} tasks: no new pod."""
    nodes = [node("a", CPU, used={"CPU": 5}), node("b", CPU, used={"CPU": 5})]
    p = plan(inp(cluster(CPU), bundles=[(res(cpu=5), 3)], nodes=nodes))
    assert (p.groups["cpu"].new, p.groups["cpu"].target, p.groups["cpu"].busy) == (1, 3, 2)


def test_gpu_demand_never_lands_on_the_cpu_group() -> None:
    """{GPU: 1} tasks open GPU pods only."""
    p = plan(inp(cluster(CPU, GPU), bundles=[(res(cpu=1, gpu=1), 3)]))
    assert (p.groups["cpu"].new, p.groups["gpu"].new) == (0, 3)


def test_cpu_demand_avoids_the_gpu_group_even_when_cheaper() -> None:
    """Non-GPU demand goes to the CPU group though GPU pods are cheaper per CPU."""
    cheap_gpu = group("gpu", cpu=16, gpu=1, cost=0.5)
    p = plan(inp(cluster(CPU, cheap_gpu), bundles=[(res(cpu=2), 10)]))
    assert (p.groups["cpu"].new, p.groups["gpu"].new) == (2, 0)


def test_cpu_demand_uses_the_gpu_group_when_the_cpu_group_is_full() -> None:
    """CPU group at maxReplicas 1: 2 of 4 {CPU: 5} there, one per 8-CPU GPU pod for the rest."""
    small = group("cpu", cpu=10, max=1)
    p = plan(inp(cluster(small, GPU), bundles=[(res(cpu=5), 4)]))
    assert (p.groups["cpu"].new, p.groups["gpu"].new) == (1, 2)


def test_cheaper_group_wins_for_the_same_demand() -> None:
    """Of two CPU groups of equal size, the cheaper one gets the pods."""
    a, b = group("a", cpu=10, cost=2.0), group("b", cpu=10, cost=1.0)
    p = plan(inp(cluster(a, b), bundles=[(res(cpu=5), 4)]))
    assert (p.groups["a"].new, p.groups["b"].new) == (0, 2)


def test_small_remainder_goes_to_a_small_cheap_group() -> None:
    """21 x {CPU: 1}: two 10-CPU pods and one 2-CPU pod cost less than three 10-CPU pods."""
    big, small = group("big", cpu=10, cost=1.0), group("small", cpu=2, cost=0.25)
    p = plan(inp(cluster(big, small), bundles=[(res(cpu=1), 21)]))
    assert (p.groups["big"].new, p.groups["small"].new) == (2, 1)


def test_bigger_than_every_pod_is_unplaceable_no_group_fits() -> None:
    """A {CPU: 64} task fits no group: reported, never dropped."""
    p = plan(inp(cluster(CPU), bundles=[(res(cpu=64), 2)]))
    assert p.groups["cpu"].new == 0
    (u,) = p.unplaceable
    assert (u.resources, u.count, u.reason, u.kind) == (
        res(cpu=64),
        2,
        UnplaceableReason.NO_GROUP_FITS,
        DemandKind.TASK,
    )


def test_demand_beyond_max_replicas_is_unplaceable_max_replicas() -> None:
    """maxReplicas 3 holds 6 of 10 {CPU: 5}: 4 left with reason max_replicas."""
    p = plan(inp(cluster(group("cpu", cpu=10, max=3)), bundles=[(res(cpu=5), 10)]))
    assert p.groups["cpu"].target == 3
    (u,) = p.unplaceable
    assert (u.count, u.reason) == (4, UnplaceableReason.MAX_REPLICAS)


def test_max_workers_caps_pods_across_groups() -> None:
    """maxWorkers 4 with 1 pod existing: 3 new pods, the rest max_workers."""
    spec = cluster(CPU, max_workers=4)
    p = plan(inp(spec, bundles=[(res(cpu=10), 6)], nodes=[node("a", CPU, used={"CPU": 10})]))
    assert p.groups["cpu"].new == 3
    (u,) = p.unplaceable
    assert (u.count, u.reason) == (3, UnplaceableReason.MAX_WORKERS)


def test_min_replicas_is_a_floor() -> None:
    """No demand, minReplicas 2: target 2."""
    p = plan(inp(cluster(group("cpu", min=2))))
    assert (p.groups["cpu"].target, p.groups["cpu"].new) == (2, 2)


def test_min_replicas_pods_take_demand_first() -> None:
    """Demand that fits the minReplicas pods adds nothing."""
    p = plan(inp(cluster(group("cpu", cpu=10, min=2)), bundles=[(res(cpu=5), 4)]))
    assert (p.groups["cpu"].target, p.groups["cpu"].new) == (2, 2)


def test_upscaling_speed_limits_pending_pods_the_ray_way() -> None:
    """Speed 1, 2 running: at most max(5, 2) = 5 pods pending; the rest is deferred."""
    running = [node(f"r{i}", CPU, used={"CPU": 10}) for i in range(2)]
    p = plan(inp(cluster(CPU, speed=1.0), bundles=[(res(cpu=10), 8)], nodes=running))
    assert p.groups["cpu"].new == 5
    (u,) = p.unplaceable
    assert (u.count, u.reason) == (3, UnplaceableReason.UPSCALING_SPEED)


def test_upscaling_speed_counts_pods_already_pending() -> None:
    """Speed 1, 10 running, 4 pending: 6 more pods may be added."""
    nodes = [node(f"r{i}", CPU, used={"CPU": 10}) for i in range(10)]
    nodes += [node(f"p{i}", CPU, used={"CPU": 10}, status=NodeStatus.PENDING) for i in range(4)]
    p = plan(inp(cluster(CPU, speed=1.0), bundles=[(res(cpu=10), 20)], nodes=nodes))
    assert p.groups["cpu"].new == 6


def test_pending_pods_count_as_full_capacity() -> None:
    """A pending pod takes two {CPU: 5} tasks: no new pod."""
    pending = node("p", CPU, status=NodeStatus.PENDING)
    p = plan(inp(cluster(CPU), bundles=[(res(cpu=5), 2)], nodes=[pending]))
    assert (p.groups["cpu"].new, p.groups["cpu"].target) == (0, 1)


def test_draining_pods_never_receive_demand_but_count_as_pods() -> None:
    """A draining pod with free CPUs takes nothing; it still counts in the floor."""
    draining = node("d", CPU, status=NodeStatus.DRAINING)
    p = plan(inp(cluster(CPU), bundles=[(res(cpu=5), 2)], nodes=[draining]))
    g = p.groups["cpu"]
    assert (g.new, g.floor, g.desired, g.target) == (1, 1, 2, 2)


def test_victims_give_no_capacity_and_do_not_count_toward_desired() -> None:
    """A victim pod: current 1, floor 0, its free space unused."""
    victim = node("v", CPU, status=NodeStatus.VICTIM, idle=999)
    p = plan(inp(cluster(CPU), bundles=[(res(cpu=5), 2)], nodes=[victim]))
    g = p.groups["cpu"]
    assert (g.current, g.floor, g.new, g.desired, g.target) == (1, 0, 1, 1, 1)


def test_target_never_below_pods_that_are_not_victims_even_above_max() -> None:
    """Four live pods, maxReplicas 2: target 4 (the HPA clamps to max itself)."""
    small = group("cpu", max=2)
    nodes = [node(f"n{i}", small, used={"CPU": 1}) for i in range(4)]
    g = plan(inp(cluster(small), nodes=nodes)).groups["cpu"]
    assert (g.floor, g.desired, g.target) == (4, 2, 4)


def test_idle_pods_are_removable_longest_idle_first() -> None:
    """Idle past the timeout: removable, longest idle first, ties by pod name."""
    nodes = [node("b", CPU, idle=100), node("a", CPU, idle=100), node("c", CPU, idle=500)]
    g = plan(inp(cluster(CPU), nodes=nodes)).groups["cpu"]
    assert g.removable == ("c", "a", "b")
    assert (g.desired, g.target) == (0, 3)


def test_a_busy_pod_is_never_removable() -> None:
    """A pod using any resource is not removable however long its idle clock says."""
    g = plan(inp(cluster(CPU), nodes=[node("a", CPU, used={"CPU": 0.5}, idle=999)])).groups["cpu"]
    assert (g.removable, g.busy) == ((), 1)


def test_a_pod_idle_less_than_the_timeout_is_not_removable() -> None:
    """Idle 59 s with a 60 s timeout: kept."""
    g = plan(inp(cluster(CPU), nodes=[node("a", CPU, idle=59)])).groups["cpu"]
    assert g.removable == ()


def test_pending_pods_are_never_removable() -> None:
    """A pending pod is not removable whatever its idle time."""
    p = node("p", CPU, idle=999, status=NodeStatus.PENDING)
    assert plan(inp(cluster(CPU), nodes=[p])).groups["cpu"].removable == ()


def test_scale_down_keeps_min_replicas() -> None:
    """Three idle pods, minReplicas 2: one removable, the longest idle."""
    g2 = group("cpu", min=2)
    nodes = [node("a", g2, idle=100), node("b", g2, idle=300), node("c", g2, idle=200)]
    g = plan(inp(cluster(g2), nodes=nodes)).groups["cpu"]
    assert (g.removable, g.desired) == (("b",), 2)


def test_an_idle_pod_that_demand_needs_is_not_removable() -> None:
    """An idle pod that takes pending demand is busy; the least idle one takes it first."""
    nodes = [node("a", CPU, idle=300), node("b", CPU, idle=100)]
    g = plan(inp(cluster(CPU), bundles=[(res(cpu=5), 1)], nodes=nodes)).groups["cpu"]
    assert (g.removable, g.busy, g.new) == (("a",), 1, 0)


def test_constraints_are_measured_against_total_capacity() -> None:
    """request_resources of 2 x {CPU: 10} with 2 fully used pods: nothing to add."""
    nodes = [node(f"n{i}", CPU, used={"CPU": 10}) for i in range(2)]
    p = plan(inp(cluster(CPU), constraints=[(res(cpu=10), 2)], nodes=nodes))
    assert p.groups["cpu"].new == 0


def test_constraints_add_pods_when_total_capacity_is_short() -> None:
    """request_resources of 4 x {GPU: 1} with no GPU pods: 4 GPU pods."""
    p = plan(inp(cluster(CPU, GPU), constraints=[(res(gpu=1), 4)]))
    assert (p.groups["gpu"].new, p.groups["cpu"].new) == (4, 0)


def test_constraint_pods_take_pending_demand() -> None:
    """Tasks fit on the pods a constraint added: no extra pods."""
    p = plan(inp(cluster(CPU), constraints=[(res(cpu=10), 2)], bundles=[(res(cpu=5), 4)]))
    assert p.groups["cpu"].new == 2


def test_idle_pods_a_constraint_needs_are_not_removable() -> None:
    """request_resources {CPU: 10} keeps one of two idle pods."""
    nodes = [node("a", CPU, idle=300), node("b", CPU, idle=100)]
    g = plan(inp(cluster(CPU), constraints=[(res(cpu=10), 1)], nodes=nodes)).groups["cpu"]
    assert g.removable == ("a",)


def test_strict_spread_bundles_go_on_distinct_pods() -> None:
    """STRICT_SPREAD of 3 x {CPU: 1} needs 3 pods although one would hold them."""
    p = plan(inp(cluster(CPU), pgs=[pg(Strategy.STRICT_SPREAD, *[res(cpu=1)] * 3)]))
    assert p.groups["cpu"].new == 3


def test_strict_spread_copies_share_pods() -> None:
    """Two STRICT_SPREAD groups of 2 x {CPU: 5} fit on 2 pods."""
    p = plan(inp(cluster(CPU), pgs=[pg(Strategy.STRICT_SPREAD, res(cpu=5), res(cpu=5), count=2)]))
    assert p.groups["cpu"].new == 2


def test_strict_pack_goes_on_one_pod() -> None:
    """STRICT_PACK of 2 x {CPU: 4} on one 10-CPU pod."""
    p = plan(inp(cluster(CPU), pgs=[pg(Strategy.STRICT_PACK, res(cpu=4), res(cpu=4))]))
    assert p.groups["cpu"].new == 1


def test_a_group_too_small_for_a_strict_pack_group_is_not_used_for_it() -> None:
    """STRICT_PACK of 2 x {CPU: 4}: the 4-CPU group cannot hold it, the 10-CPU one does."""
    small = group("small", cpu=4, cost=0.1)
    p = plan(inp(cluster(small, CPU), pgs=[pg(Strategy.STRICT_PACK, res(cpu=4), res(cpu=4))]))
    assert (p.groups["small"].new, p.groups["cpu"].new) == (0, 1)


def test_strict_pack_bigger_than_every_pod_is_unplaceable() -> None:
    """STRICT_PACK of 3 x {CPU: 4} fits no 10-CPU pod: reported as the combined shape."""
    p = plan(inp(cluster(CPU), pgs=[pg(Strategy.STRICT_PACK, *[res(cpu=4)] * 3)]))
    (u,) = p.unplaceable
    assert (u.resources, u.reason, u.kind, u.strategy) == (
        res(cpu=12),
        UnplaceableReason.NO_GROUP_FITS,
        DemandKind.PLACEMENT_GROUP,
        Strategy.STRICT_PACK,
    )


def test_pack_and_spread_bundles_are_packed_like_tasks() -> None:
    """PACK and SPREAD of 4 x {CPU: 5} each: 4 pods, as Ray flattens them."""
    bundles = [res(cpu=5)] * 4
    pgs = [pg(Strategy.PACK, *bundles), pg(Strategy.SPREAD, *bundles)]
    assert plan(inp(cluster(CPU), pgs=pgs)).groups["cpu"].new == 4


def test_placement_groups_are_all_or_nothing() -> None:
    """maxReplicas 1 cannot hold a PACK group of 3 x {CPU: 5}: no pod, the whole group reported."""
    one = group("cpu", cpu=10, max=1)
    p = plan(inp(cluster(one), pgs=[pg(Strategy.PACK, *[res(cpu=5)] * 3)]))
    assert p.groups["cpu"].new == 0
    (u,) = p.unplaceable
    assert (u.count, u.reason, u.strategy) == (3, UnplaceableReason.MAX_REPLICAS, Strategy.PACK)


def test_as_many_whole_placement_groups_as_fit_are_placed() -> None:
    """maxReplicas 2 holds 2 of 3 STRICT_PACK {CPU: 8} groups; one is reported."""
    two = group("cpu", cpu=10, max=2)
    p = plan(inp(cluster(two), pgs=[pg(Strategy.STRICT_PACK, res(cpu=8), count=3)]))
    assert p.groups["cpu"].new == 2
    (u,) = p.unplaceable
    assert (u.count, u.reason) == (1, UnplaceableReason.MAX_REPLICAS)


def test_the_same_input_gives_the_same_plan() -> None:
    """Determinism: two runs are equal."""
    i = inp(cluster(CPU, GPU), bundles=[(res(cpu=3), 7), (res(cpu=1, gpu=1), 2)])
    assert plan(i) == plan(i)


def test_mixed_pods_beat_first_fit_decreasing() -> None:
    """19 x {CPU: 6} and 8 x {CPU: 5} on 32-CPU pods: 5 pods (2 x [6,6,5,5,5,5] + 3 x [6 x 5])."""
    big = group("cpu", cpu=32)
    p = plan(inp(cluster(big), bundles=[(res(cpu=6), 19), (res(cpu=5), 8)]))
    assert p.groups["cpu"].new == 5


def test_a_constraint_is_met_by_pods_demand_needs_anyway() -> None:
    """request_resources {CPU: 1} x 3 fits the CPUs of the GPU pods the GPU tasks open."""
    p = plan(inp(cluster(CPU, GPU), bundles=[(res(gpu=1), 2)], constraints=[(res(cpu=1), 3)]))
    assert (p.groups["cpu"].new, p.groups["gpu"].new) == (0, 2)


def test_when_max_replicas_binds_the_most_bundles_are_held() -> None:
    """maxReplicas 1 for 10-CPU pods: ten {CPU: 1} tasks are held, the {CPU: 10} one is not."""
    one = group("cpu", cpu=10, max=1)
    p = plan(inp(cluster(one), bundles=[(res(cpu=10), 1), (res(cpu=1), 10)]))
    assert p.groups["cpu"].new == 1
    (u,) = p.unplaceable
    assert (u.resources, u.count, u.reason) == (res(cpu=10), 1, UnplaceableReason.MAX_REPLICAS)


def test_pending_demand_of_a_group_with_pods_pending_is_deferred_with_upscaling_speed() -> None:
    """Speed 1, no running pod, 5 pending take 5 of 7 {CPU: 10}; 2 deferred by upscaling_speed."""
    pending = [node(f"p{i}", CPU, status=NodeStatus.PENDING) for i in range(5)]
    p = plan(inp(cluster(CPU, speed=1.0), bundles=[(res(cpu=10), 7)], nodes=pending))
    assert p.groups["cpu"].new == 0
    (u,) = p.unplaceable
    assert (u.count, u.reason) == (2, UnplaceableReason.UPSCALING_SPEED)


def test_placement_group_pods_are_exempt_from_upscaling_speed() -> None:
    """Speed 1, 5 pods pending: a STRICT_SPREAD group of 7 x {CPU: 10} still gets 2 new pods."""
    pending = [node(f"p{i}", CPU, status=NodeStatus.PENDING) for i in range(5)]
    spread = pg(Strategy.STRICT_SPREAD, *[res(cpu=10)] * 7)
    p = plan(inp(cluster(CPU, speed=1.0), pgs=[spread], nodes=pending))
    assert (p.groups["cpu"].new, p.unplaceable) == (2, ())


def test_decisions_say_why_pods_are_added() -> None:
    """Each group's decisions name the rule that added pods, typed."""
    g2 = group("cpu", cpu=10, min=1)
    p = plan(inp(cluster(g2, GPU), bundles=[(res(cpu=5), 4), (res(gpu=1), 1)]))
    assert p.groups["cpu"].decisions == (
        Decision(DecisionKind.ADD, 1, Why.MIN_REPLICAS, limit=1),
        Decision(DecisionKind.ADD, 1, Why.TASKS),
    )
    assert p.groups["gpu"].decisions == (Decision(DecisionKind.ADD, 1, Why.TASKS),)


def test_a_pending_pod_counts_as_full_capacity_whatever_it_reports() -> None:
    """A pending pod that reports nothing available still takes two {CPU: 5} tasks."""
    pending = node("p", CPU, used={"CPU": 10}, status=NodeStatus.PENDING)
    g = plan(inp(cluster(CPU), bundles=[(res(cpu=5), 2)], nodes=[pending])).groups["cpu"]
    assert (g.new, g.target, g.removable) == (0, 1, ())


def test_a_gpu_pod_bought_for_cpu_tasks_that_later_holds_a_gang_is_not_wasted() -> None:
    """Seed 486: the GPU pods the GPU demand needs take the {CPU: 5} tasks; one CPU pod (min)."""
    cpu = group("cpu", cpu=16, cost=3.0, min=1)
    gpu = group("gpu", cpu=64, gpu=8, cost=32.0, max=4)
    i = inp(
        cluster(cpu, gpu),
        bundles=[(res(cpu=8, gpu=2), 2), (res(cpu=5), 17), (res(cpu=2), 3)],
        pgs=[
            pg(Strategy.STRICT_PACK, *[res(cpu=8, gpu=2)] * 4),
            pg(Strategy.STRICT_SPREAD, *[res(cpu=16, gpu=4)] * 4),
        ],
    )
    p = plan(i)
    assert (p.groups["cpu"].new, p.groups["gpu"].new) == (1, 2)
    (u,) = p.unplaceable
    assert (u.resources, u.count, u.reason) == (
        res(cpu=16, gpu=4),
        4,
        UnplaceableReason.MAX_REPLICAS,
    )


def test_fewer_small_pods_and_one_more_large_pod_cost_less() -> None:
    """Seed 828: 3 large + 4 small ($10.75), not 2 large + 7 small, found by a deeper descent."""
    gib = 2**30
    large = group("large", cpu=10, memory=40 * gib, cost=2.25, max=3)
    small = group("small", cpu=4, memory=16 * gib, cost=1.0)
    demand = [
        (res(cpu=4, memory=gib), 2),
        (res(cpu=3, memory=gib), 1),
        (res(cpu=4, memory=2 * gib), 5),
        (res(cpu=1, memory=16 * gib), 2),
        (res(cpu=6), 2),
    ]
    p = plan(inp(cluster(large, small), bundles=demand))
    assert (p.groups["large"].new, p.groups["small"].new, p.unplaceable) == (3, 4, ())


def test_a_pod_whose_demand_fits_the_pods_bought_later_is_dropped() -> None:
    """Seed 124: the {CPU: 1} tasks move onto the GPU pods bought anyway; no small pod."""
    custom = group("custom", cpu=8, memory=32 * 2**30, cost=2.42, max=10, fpga=1)
    small = group("small", cpu=2, cost=0.5)
    gpu = group("gpu", cpu=64, gpu=8, cost=32.93, max=2)
    i = inp(
        cluster(custom, small, gpu),
        bundles=[(res(cpu=8, gpu=2), 23), (res(cpu=1), 2), (res(gpu=8), 1)],
        pgs=[pg(Strategy.STRICT_SPREAD, res(cpu=6), res(cpu=6))],
    )
    p = plan(i)
    assert [p.groups[n].new for n in ("custom", "small", "gpu")] == [0, 0, 2]
    assert p.groups["gpu"].decisions == (Decision(DecisionKind.ADD, 2, Why.TASKS),)


def test_lookahead_shrinks_to_its_budget_over_shapes_times_groups() -> None:
    """3 shapes x 3 groups and a budget of 9: lookahead 1 (3 cpu-small + 1 custom); a budget of
    72 keeps lookahead 8 (1 cpu-large). No improvement runs, so only the lookahead differs."""
    gib = 1024**3
    spec = cluster(
        group("cpu-small", cpu=2, memory=8 * gib, max=10, cost=0.46),
        group("cpu-large", cpu=16, memory=64 * gib, max=50, cost=3.84),
        group("custom", cpu=8, memory=32 * gib, max=10, cost=2.99, fpga=4),
    )
    demand = inp(
        spec,
        bundles=[
            (res(cpu=1, memory=2 * gib), 2),
            (res(cpu=0.5, memory=2 * gib), 5),
            (res(cpu=8, memory=16 * gib), 1),
        ],
    )

    def targets(**kw: int) -> dict[str, int]:
        plans = plan(demand, limits=SearchLimits(runs=0), **kw).groups
        return {g: p.target for g, p in plans.items()}

    assert targets(lookahead_budget=9) == {"cpu-small": 3, "cpu-large": 0, "custom": 1}
    assert targets(lookahead_budget=9) == targets(lookahead=1)
    assert targets(lookahead_budget=72) == {"cpu-small": 0, "cpu-large": 1, "custom": 0}
