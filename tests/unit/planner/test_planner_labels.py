"""Label selectors and worker-group priority: the planner places demand as Ray v2 does."""

from __future__ import annotations

import dataclasses

from builders import cluster, group, inp, node, res

from keda_ray_scaler.decisions import UnplaceableReason
from keda_ray_scaler.labels import LabelSelector, Selectors, selectors_of
from keda_ray_scaler.model import (
    Bundle,
    Demand,
    DemandKind,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.planner import plan


def labelled(g: WorkerGroup, priority: int = 0, **labels: str) -> WorkerGroup:
    """``g`` with Ray node labels (``_`` in a keyword stands for ``-``) and a priority."""
    named = {k.replace("_", "-"): v for k, v in labels.items()}
    return dataclasses.replace(g, labels=named, priority=priority)


def sel(*alternatives: dict[str, str]) -> Selectors:
    """Selectors in fallback order, each in Ray's dict form (``{}``: any node)."""
    return selectors_of(LabelSelector.from_ray(a) for a in alternatives)


def demand(
    spec: object,
    *bundles: tuple[Resources, int, Selectors],
    nodes: tuple[WorkerNode, ...] = (),
    pgs: tuple[PlacementGroup, ...] = (),
    floors: tuple[Bundle, ...] = (),
) -> PlanningInput:
    """A planning input of task bundles ``(resources, count, selectors)``."""
    base = inp(spec)  # type: ignore[arg-type]
    tasks = tuple(Bundle(r, n, s) for r, n, s in bundles)
    return dataclasses.replace(base, demand=Demand(tasks, pgs, floors), nodes=nodes)


SPOT = labelled(group("spot", cpu=10, cost=1.0), market_type="spot")
ON_DEMAND = labelled(group("on-demand", cpu=10, cost=0.5), market_type="on-demand")


def test_spot_demand_gets_spot_pods_though_on_demand_is_cheaper() -> None:
    """{market-type: spot} tasks open spot pods only; tasks without a selector the cheapest."""
    spec = cluster(SPOT, ON_DEMAND)
    p = plan(demand(spec, (res(cpu=5), 4, sel({"market-type": "spot"})), (res(cpu=5), 2, ())))
    assert (p.groups["spot"].new, p.groups["on-demand"].new) == (2, 1)
    assert p.unplaceable == ()


def test_accelerator_type_picks_the_group_with_that_accelerator() -> None:
    """{ray.io/accelerator-type: A100} opens A100 pods, not the cheaper T4 ones."""
    a100 = dataclasses.replace(
        group("a100", cpu=8, gpu=1, cost=4.0), labels={"ray.io/accelerator-type": "A100"}
    )
    t4 = dataclasses.replace(
        group("t4", cpu=8, gpu=1, cost=1.0), labels={"ray.io/accelerator-type": "T4"}
    )
    wanted = sel({"ray.io/accelerator-type": "A100"})
    p = plan(demand(cluster(a100, t4), (res(cpu=1, gpu=1), 3, wanted)))
    assert (p.groups["a100"].new, p.groups["t4"].new) == (3, 0)


def test_in_and_not_in_choose_among_zones() -> None:
    """``in(a,b)`` takes zone a or b (b cheaper); ``!in(a,b)`` only zone c."""
    zones = [
        labelled(group(f"zone-{z}", cpu=10, cost=c), zone=z)
        for z, c in (("a", 1.0), ("b", 0.5), ("c", 0.25))
    ]
    spec = cluster(*zones)
    p = plan(
        demand(
            spec,
            (res(cpu=10), 2, sel({"zone": "in(a,b)"})),
            (res(cpu=10), 1, sel({"zone": "!in(a,b)"})),
        )
    )
    assert [p.groups[f"zone-{z}"].new for z in "abc"] == [0, 2, 1]


def test_fallback_order_first_the_groups_of_the_first_selector_then_the_next() -> None:
    """[spot, on-demand]: spot pods up to its maxReplicas 2, the rest on on-demand pods."""
    spot = dataclasses.replace(SPOT, max_replicas=2)
    wanted = sel({"market-type": "spot"}, {"market-type": "on-demand"})
    p = plan(demand(cluster(spot, ON_DEMAND), (res(cpu=5), 10, wanted)))
    assert (p.groups["spot"].new, p.groups["on-demand"].new) == (2, 3)
    assert p.unplaceable == ()


def test_a_first_selector_no_group_satisfies_falls_to_the_next() -> None:
    """[{gpu: h100}, {}]: no group has h100, so the empty fallback takes the cheapest group."""
    wanted = sel({"gpu": "h100"}, {})
    p = plan(demand(cluster(SPOT, ON_DEMAND), (res(cpu=5), 2, wanted)))
    assert (p.groups["spot"].new, p.groups["on-demand"].new) == (0, 1)


def test_a_selector_no_group_satisfies_is_unplaceable_and_makes_no_pod() -> None:
    """{market-type: reserved}: no pod anywhere; listed with its reason naming the selector."""
    wanted = sel({"market-type": "reserved"})
    p = plan(demand(cluster(SPOT, ON_DEMAND), (res(cpu=5), 3, wanted)))
    assert (p.groups["spot"].new, p.groups["on-demand"].new) == (0, 0)
    (u,) = p.unplaceable
    assert (u.resources, u.count, u.reason, u.kind, u.selectors) == (
        res(cpu=5),
        3,
        UnplaceableReason.NO_GROUP_MATCHES,
        DemandKind.TASK,
        wanted,
    )
    assert u.detail == "no worker group's labels satisfy the label selector market-type=reserved"


def test_a_satisfying_group_too_small_is_no_group_fits_naming_the_selector() -> None:
    """{CPU: 20} on spot: the spot group satisfies the labels but its pods are too small."""
    p = plan(demand(cluster(SPOT, ON_DEMAND), (res(cpu=20), 1, sel({"market-type": "spot"}))))
    (u,) = p.unplaceable
    assert u.reason is UnplaceableReason.NO_GROUP_FITS
    assert u.detail == (
        "no worker group whose labels satisfy market-type=spot has pods that can hold {CPU: 20}"
    )


def test_priority_decides_between_two_satisfying_groups_before_cost() -> None:
    """Both groups are spot; the dearer one has priority 1 and gets every pod."""
    cheap = labelled(group("cheap", cpu=10, cost=0.5), market_type="spot")
    preferred = labelled(group("preferred", cpu=10, cost=2.0), priority=1, market_type="spot")
    wanted = sel({"market-type": "spot"})
    p = plan(demand(cluster(cheap, preferred), (res(cpu=5), 4, wanted)))
    assert (p.groups["cheap"].new, p.groups["preferred"].new) == (0, 2)


def test_priority_falls_to_the_lower_group_once_the_higher_is_full() -> None:
    """The priority group at maxReplicas 1: one pod there, the rest in the other group."""
    high = labelled(group("high", cpu=10, cost=2.0, max=1), priority=5)
    low = labelled(group("low", cpu=10, cost=0.5))
    p = plan(demand(cluster(high, low), (res(cpu=5), 6, ())))
    assert (p.groups["high"].new, p.groups["low"].new) == (1, 2)


def test_an_existing_pod_whose_labels_do_not_admit_the_demand_is_no_capacity_for_it() -> None:
    """An idle on-demand pod with 10 free CPUs: spot tasks still need a spot pod."""
    idle = node("od-1", ON_DEMAND, idle=5.0)
    p = plan(
        demand(
            cluster(SPOT, ON_DEMAND), (res(cpu=5), 2, sel({"market-type": "spot"})), nodes=(idle,)
        )
    )
    assert (p.groups["spot"].new, p.groups["on-demand"].busy) == (1, 0)


def test_an_existing_pod_whose_labels_admit_the_demand_takes_it() -> None:
    """A spot pod with 10 free CPUs takes two spot tasks: no new pod."""
    free = node("spot-1", SPOT)
    p = plan(
        demand(
            cluster(SPOT, ON_DEMAND), (res(cpu=5), 2, sel({"market-type": "spot"})), nodes=(free,)
        )
    )
    assert (p.groups["spot"].new, p.groups["spot"].busy, p.groups["on-demand"].new) == (0, 1, 0)


def test_a_ray_nodes_own_labels_decide_over_its_groups() -> None:
    """A spot-group pod whose Ray node says zone b takes {zone: b} demand; a pending pod
    (no Ray labels yet) is read with its group's labels."""
    grp = labelled(group("spot", cpu=10), market_type="spot")
    in_b = dataclasses.replace(node("spot-1", grp), labels={"market-type": "spot", "zone": "b"})
    pending = node("spot-2", grp, status=NodeStatus.PENDING)
    zone_b = sel({"zone": "b"})
    spot = sel({"market-type": "spot"})
    p = plan(
        demand(
            cluster(grp), (res(cpu=10), 1, zone_b), (res(cpu=10), 1, spot), nodes=(in_b, pending)
        )
    )
    assert (p.groups["spot"].new, p.unplaceable) == (0, ())


def test_upscaling_speed_defers_and_never_moves_demand_to_a_fallback_group() -> None:
    """Speed 1 with no running pod allows 5 pending spot pods: the other 5 wait, never on
    on-demand pods though that group could take them."""
    spec = dataclasses.replace(cluster(SPOT, ON_DEMAND), upscaling_speed=1.0)
    wanted = sel({"market-type": "spot"}, {"market-type": "on-demand"})
    p = plan(demand(spec, (res(cpu=10), 10, wanted)))
    assert (p.groups["spot"].new, p.groups["on-demand"].new) == (5, 0)
    (u,) = p.unplaceable
    assert (u.count, u.reason, u.selectors) == (5, UnplaceableReason.UPSCALING_SPEED, wanted)


def test_strict_pack_needs_one_node_satisfying_every_bundles_selector() -> None:
    """STRICT_PACK [{CPU: 2} zone a, {CPU: 2} spot]: only the group both satisfy holds it."""
    both = labelled(group("both", cpu=10, cost=2.0), zone="a", market_type="spot")
    only_a = labelled(group("only-a", cpu=10, cost=0.5), zone="a", market_type="on-demand")
    gang = PlacementGroup(
        Strategy.STRICT_PACK,
        (res(cpu=2), res(cpu=2)),
        1,
        (sel({"zone": "a"}), sel({"market-type": "spot"})),
    )
    p = plan(demand(cluster(both, only_a), pgs=(gang,)))
    assert (p.groups["both"].new, p.groups["only-a"].new) == (1, 0)


def test_strict_pack_no_group_satisfies_together_is_unplaceable() -> None:
    """STRICT_PACK [zone a, zone b]: no node has both zones; no pod, the combined selector named."""
    a = labelled(group("a", cpu=10), zone="a")
    b = labelled(group("b", cpu=10), zone="b")
    gang = PlacementGroup(
        Strategy.STRICT_PACK, (res(cpu=2), res(cpu=2)), 1, (sel({"zone": "a"}), sel({"zone": "b"}))
    )
    p = plan(demand(cluster(a, b), pgs=(gang,)))
    assert (p.groups["a"].new, p.groups["b"].new) == (0, 0)
    (u,) = p.unplaceable
    assert (u.reason, u.kind, u.resources) == (
        UnplaceableReason.NO_GROUP_MATCHES,
        DemandKind.PLACEMENT_GROUP,
        res(cpu=4),
    )
    assert str(u.selectors[0]) == "zone=a,zone=b"


def test_spread_bundles_each_go_where_their_own_selector_says() -> None:
    """STRICT_SPREAD [{CPU: 8} zone a, {CPU: 8} zone b]: one pod in each zone's group."""
    a = labelled(group("a", cpu=10, cost=1.0), zone="a")
    b = labelled(group("b", cpu=10, cost=0.1), zone="b")
    gang = PlacementGroup(
        Strategy.STRICT_SPREAD,
        (res(cpu=8), res(cpu=8)),
        1,
        (sel({"zone": "a"}), sel({"zone": "b"})),
    )
    p = plan(demand(cluster(a, b), pgs=(gang,)))
    assert (p.groups["a"].new, p.groups["b"].new) == (1, 1)


def test_request_resources_with_a_selector_is_a_floor_on_the_satisfying_group() -> None:
    """request_resources 2 x {CPU: 10} with {market-type: spot}: two spot pods."""
    floor = Bundle(res(cpu=10), 2, sel({"market-type": "spot"}))
    p = plan(demand(cluster(SPOT, ON_DEMAND), floors=(floor,)))
    assert (p.groups["spot"].new, p.groups["on-demand"].new) == (2, 0)


def test_unlabelled_demand_fills_a_labelled_pods_leftovers() -> None:
    """A spot pod opened for a {CPU: 6} spot task takes a {CPU: 4} task without a selector."""
    spec = cluster(SPOT, dataclasses.replace(ON_DEMAND, cost=1.0))
    p = plan(demand(spec, (res(cpu=6), 1, sel({"market-type": "spot"})), (res(cpu=4), 1, ())))
    assert (p.groups["spot"].new, p.groups["on-demand"].new) == (1, 0)


def test_every_group_has_rays_node_group_label() -> None:
    """{ray.io/node-group: on-demand} goes to that group: Ray labels each node with its group."""
    wanted = sel({"ray.io/node-group": "on-demand"})
    spot_cheap = dataclasses.replace(SPOT, cost=0.1)
    p = plan(demand(cluster(spot_cheap, ON_DEMAND), (res(cpu=5), 2, wanted)))
    assert (p.groups["spot"].new, p.groups["on-demand"].new) == (0, 1)


def test_an_existing_pod_satisfying_a_fallback_takes_demand_before_a_new_first_choice_pod() -> None:
    """Ray schedules on existing nodes first with any selector: a free on-demand pod takes
    [spot, on-demand] demand; no spot pod is bought."""
    free = node("od-1", ON_DEMAND)
    wanted = sel({"market-type": "spot"}, {"market-type": "on-demand"})
    p = plan(demand(cluster(SPOT, ON_DEMAND), (res(cpu=5), 2, wanted), nodes=(free,)))
    assert (p.groups["spot"].new, p.groups["on-demand"].new, p.groups["on-demand"].busy) == (
        0,
        0,
        1,
    )
