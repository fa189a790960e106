"""Where demand with label selectors went, from the packer's count per label id, group and
admission class (planner.placed)."""

from __future__ import annotations

import dataclasses

from builders import cluster, group, inp, node, res

from keda_ray_scaler.decisions import Placed
from keda_ray_scaler.labels import LabelSelector, Selectors, selectors_of
from keda_ray_scaler.model import (
    Bundle,
    Demand,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.planner.context import Context, build_context
from keda_ray_scaler.planner.placed import placements, tally_of


def labelled(g: WorkerGroup, **labels: str) -> WorkerGroup:
    """``g`` with Ray node labels (``_`` in a keyword stands for ``-``)."""
    return dataclasses.replace(g, labels={k.replace("_", "-"): v for k, v in labels.items()})


def sel(*alternatives: dict[str, str]) -> Selectors:
    """Selectors in fallback order, each in Ray's dict form (``{}``: any node)."""
    return selectors_of(LabelSelector.from_ray(a) for a in alternatives)


def demand(
    *bundles: tuple[Resources, int, Selectors],
    nodes: tuple[WorkerNode, ...] = (),
    pgs: tuple[PlacementGroup, ...] = (),
) -> Context:
    """The planning context of task bundles ``(resources, count, selectors)`` on SPOT and
    ON_DEMAND."""
    base: PlanningInput = inp(cluster(SPOT, ON_DEMAND))
    tasks = tuple(Bundle(r, n, s) for r, n, s in bundles)
    return build_context(dataclasses.replace(base, demand=Demand(tasks, pgs), nodes=nodes))


def label(ctx: Context, sels: Selectors, tier: int = 0) -> int:
    """The label id of a task's ``sels`` at fallback ``tier``."""
    return ctx.adm.ids(sels, True)[tier]


SPOT = labelled(group("spot", cpu=10, cost=1.0), market_type="spot")
ON_DEMAND = labelled(group("on-demand", cpu=10, cost=0.5), market_type="on-demand")
SPOT_SEL = sel({"market-type": "spot"})
IS_SPOT = LabelSelector.from_ray({"market-type": "spot"})


def test_demand_placed_by_its_selector_names_it_and_the_group() -> None:
    """3 x {CPU: 2} asking market-type=spot, on new spot pods (class 0): by that selector."""
    ctx = demand((res(cpu=2), 3, SPOT_SEL))
    got = placements(ctx, {(label(ctx, SPOT_SEL), 0, 0): 3})
    assert got == (Placed("spot", 3, SPOT_SEL, IS_SPOT, (res(cpu=2),)),)


def test_nothing_counted_lists_nothing() -> None:
    """No labelled bundle placed (or none asked for): no line."""
    assert placements(demand((res(cpu=2), 3, SPOT_SEL)), {}) == ()
    assert placements(demand((res(cpu=2), 3, ())), {}) == ()


def test_a_fallback_tier_names_the_selector_that_admitted_the_group() -> None:
    """[market-type=spot, *]: bundles of the first tier on spot pods by the first selector,
    those of the second on on-demand pods by ``*``, in group order."""
    both = sel({"market-type": "spot"}, {})
    ctx = demand((res(cpu=2), 8, both))
    tally = {(label(ctx, both, 1), 1, 0): 3, (label(ctx, both, 0), 0, 0): 5}
    assert [(p.group, p.count, str(p.by), p.existing) for p in placements(ctx, tally)] == [
        ("spot", 5, "market-type=spot", False),
        ("on-demand", 3, "*", False),
    ]


def test_existing_pods_are_listed_apart_from_new_ones() -> None:
    """A spot pod (its admission class 1) holds 2, a new spot pod 1: two lines, new first."""
    ctx = demand((res(cpu=2), 3, SPOT_SEL), nodes=(node("ray-spot-a", SPOT),))
    spot = label(ctx, SPOT_SEL)
    got = placements(ctx, {(spot, 0, 1): 2, (spot, 0, 0): 1})
    assert [(p.group, p.count, p.existing) for p in got] == [("spot", 1, False), ("spot", 2, True)]


def test_an_existing_pods_own_labels_name_the_selector() -> None:
    """[market-type=spot, zone=a] on an on-demand pod whose Ray node says zone=a: by zone=a."""
    wanted = sel({"market-type": "spot"}, {"zone": "a"})
    pod = dataclasses.replace(node("ray-od-a", ON_DEMAND), labels={"zone": "a"})
    ctx = demand((res(cpu=2), 2, wanted), nodes=(pod,))
    (cls,) = ctx.adm.views[1].values()
    (got,) = placements(ctx, {(label(ctx, wanted, -1), 1, cls): 2})
    assert (got.group, got.count, str(got.by), got.existing) == ("on-demand", 2, "zone=a", True)


def test_placement_group_bundles_name_their_shapes() -> None:
    """A PACK group of two {CPU: 4} bundles, each asking spot: its shape is named."""
    pg = PlacementGroup(Strategy.PACK, (res(cpu=4), res(cpu=4)), selectors=(SPOT_SEL, SPOT_SEL))
    ctx = demand(pgs=(pg,))
    (spot,) = ctx.adm.ids(SPOT_SEL, False)
    (got,) = placements(ctx, {(spot, 0, 0): 2})
    assert (got.group, got.count, got.shapes) == ("spot", 2, (res(cpu=4),))


def test_the_packers_two_tallies_make_one() -> None:
    """New pods' (label, group) counts join existing pods' class-0 stand-ins as class 0."""
    new = {(1, 0): 3, (2, 1): 1}
    existing = {(1, 0, 0): 2, (1, 0, 1): 4}
    assert tally_of(new, existing) == {(1, 0, 0): 5, (1, 0, 1): 4, (2, 1, 0): 1}
