"""Ray's implicit resources (``node:__internal_implicit_resource_*``) planned as Ray's v2 plans
them: every pod has 1 of each (Ray Serve's ``max_replicas_per_node`` asks ``1 / N`` per replica),
so demand asking only for one gets one pod per resource, and demand for more is unplaceable.
Every expected figure here is what Ray 2.60's v2 ``ResourceDemandScheduler`` returns for the
same input (``bench.ray_compare``)."""

from __future__ import annotations

from builders import cluster, group, inp, node, pg

from keda_ray_scaler.decisions import UnplaceableReason
from keda_ray_scaler.model import Resources, Strategy
from keda_ray_scaler.planner import plan

SPOT = "node:__internal_implicit_resource_spot"
CPU = group("cpu", cpu=10)


def implicit(amount: float, **explicit: float) -> Resources:
    """A bundle asking ``amount`` of the implicit resource, and ``explicit`` resources."""
    return Resources.of({SPOT: amount, **explicit})


def test_demand_for_only_an_implicit_resource_gets_one_pod_per_resource() -> None:
    """3 x {implicit: 1}: 3 new pods (was: dropped, no pod and nothing unplaceable)."""
    p = plan(inp(cluster(CPU), bundles=[(implicit(1), 3)]))
    assert (p.groups["cpu"].new, p.unplaceable) == (3, ())


def test_max_replicas_per_node_two_puts_two_replicas_on_a_pod() -> None:
    """3 x {implicit: 0.5} (Serve's max_replicas_per_node=2): 2 new pods."""
    p = plan(inp(cluster(CPU), bundles=[(implicit(0.5), 3)]))
    assert (p.groups["cpu"].new, p.unplaceable) == (2, ())


def test_more_than_one_implicit_resource_is_unplaceable_with_a_reason() -> None:
    """{implicit: 2}: no pod has 2 of it; listed unplaceable, no pod bought."""
    p = plan(inp(cluster(CPU), bundles=[(implicit(2), 1)]))
    assert p.groups["cpu"].new == 0
    assert [(u.count, u.resources, u.reason) for u in p.unplaceable] == [
        (1, implicit(2), UnplaceableReason.NO_GROUP_FITS)
    ]


def test_a_running_pod_takes_one_implicit_bundle_as_ray_reads_it() -> None:
    """2 x {implicit: 1} beside a running pod that does not list it: 1 new pod."""
    nodes = [node("a", CPU, used={"CPU": 1})]
    p = plan(inp(cluster(CPU), bundles=[(implicit(1), 2)], nodes=nodes))
    assert (p.groups["cpu"].new, p.unplaceable) == (1, ())


def test_the_implicit_resource_limits_tasks_that_cpu_alone_would_pack_together() -> None:
    """2 x {CPU: 5, implicit: 1} and a PACK group {CPU: 5, implicit: 0.5}: 3 pods, not 2."""
    gang = pg(Strategy.PACK, implicit(0.5, CPU=5))
    p = plan(inp(cluster(CPU), bundles=[(implicit(1, CPU=5), 2)], pgs=[gang]))
    assert (p.groups["cpu"].new, p.unplaceable) == (3, ())


def test_a_placement_group_of_implicit_bundles_is_planned_not_dropped() -> None:
    """STRICT_SPREAD of 2 x {implicit: 1}: 2 new pods."""
    gang = pg(Strategy.STRICT_SPREAD, implicit(1), implicit(1))
    p = plan(inp(cluster(CPU), pgs=[gang]))
    assert (p.groups["cpu"].new, p.unplaceable) == (2, ())
