"""Label ids and admission classes (planner.admission): what the packer is given, and that an
input whose selectors tell nothing apart costs what one without selectors costs."""

from __future__ import annotations

import dataclasses

from builders import cluster, group, inp, node, res

from keda_ray_scaler.labels import LabelSelector, Selectors, selectors_of
from keda_ray_scaler.model import Bundle, Demand, PlanningInput, Resources, WorkerNode
from keda_ray_scaler.planner import plan
from keda_ray_scaler.planner.context import build_context

SPOT = dataclasses.replace(group("spot", cpu=10), labels={"market-type": "spot"})
ON_DEMAND = dataclasses.replace(group("on-demand", cpu=10), labels={"market-type": "on-demand"})


def sel(*alternatives: dict[str, str]) -> Selectors:
    """Selectors in fallback order, each in Ray's dict form (``{}``: any node)."""
    return selectors_of(LabelSelector.from_ray(a) for a in alternatives)


def demand(
    *bundles: tuple[Resources, int, Selectors], nodes: tuple[WorkerNode, ...] = ()
) -> PlanningInput:
    """Task bundles ``(resources, count, selectors)`` on the spot and on-demand groups."""
    base = inp(cluster(SPOT, ON_DEMAND))
    tasks = tuple(Bundle(r, n, s) for r, n, s in bundles)
    return dataclasses.replace(base, demand=Demand(tasks), nodes=nodes)


def test_an_input_without_selectors_has_no_label_id_and_no_class_entry() -> None:
    """Vectors are resources only, as before labels existed."""
    ctx = build_context(demand((res(cpu=2), 3, ())))
    assert (len(ctx.adm), ctx.index.tail, ctx.tasks) == (0, (), (((20000,), 3),))
    assert ctx.specs[0].capacity == (100000,)


def test_a_list_every_group_and_pod_satisfies_plans_as_no_selector() -> None:
    """``market-type in(spot,on-demand)`` tells no group or pod apart: no label id, no class
    entry, and the plan of demand without selectors."""
    both = sel({"market-type": "in(spot,on-demand)"})
    pods = (node("spot-1", SPOT, used={"CPU": 6}),)
    ctx = build_context(demand((res(cpu=2), 3, both), nodes=pods))
    assert (len(ctx.adm), ctx.index.tail) == (0, ())
    with_list = plan(demand((res(cpu=2), 9, both), nodes=pods))
    without = plan(demand((res(cpu=2), 9, ()), nodes=pods))
    assert (with_list.groups, with_list.unplaceable) == (without.groups, without.unplaceable)


def test_a_list_a_pod_tells_apart_keeps_its_label_id() -> None:
    """Every group satisfies ``!zone=z``, but a pod whose Ray node says zone z does not."""
    in_z = dataclasses.replace(node("spot-1", SPOT), labels={"market-type": "spot", "zone": "z"})
    ctx = build_context(demand((res(cpu=2), 3, sel({"zone": "!z"})), nodes=(in_z,)))
    assert len(ctx.adm) == 1
    assert ctx.specs[0].admits == (frozenset({1}), frozenset())  # new pods; the zone-z pod


def test_equal_lists_share_one_label_id() -> None:
    """Two bundles asking spot: one id; tiers of a fallback list one id each."""
    spot = sel({"market-type": "spot"})
    fallback = sel({"market-type": "spot"}, {"market-type": "on-demand"})
    ctx = build_context(
        demand((res(cpu=2), 1, spot), (res(cpu=4), 1, spot), (res(cpu=1), 1, fallback))
    )
    assert ctx.adm.ids(spot, True) == (1,)
    assert ctx.adm.ids(fallback, True) == (2, 3)
    assert [spec.admits[0] for spec in ctx.specs] == [frozenset({1, 2, 3}), frozenset({3})]


def test_an_existing_pod_admits_every_tier_of_a_list_it_satisfies() -> None:
    """An on-demand pod takes [spot, on-demand] demand at its first tier, as Ray admits a node
    satisfying any selector; the group's new pods only at the second."""
    fallback = sel({"market-type": "spot"}, {"market-type": "on-demand"})
    pods = (node("od-1", ON_DEMAND),)
    ctx = build_context(demand((res(cpu=1), 1, fallback), nodes=pods))
    assert ctx.specs[1].admits == (frozenset({2}), frozenset({1, 2}))
    assert ctx.pods_free[0][1][-1] == 1  # the pod's vector ends in its class
