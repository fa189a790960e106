"""One agent snapshot with every kind of series it exports, for the tests that check names.

The Grafana dashboards (tests/project/test_grafana.py) and the metrics reference
(tests/project/test_readme.py) are checked against the series a registry holds once this
snapshot is published.
"""

from __future__ import annotations

from keda_ray_scaler import schema
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


def full_snapshot() -> schema.ClusterSnapshot:
    """A snapshot with every kind of series: groups, all demand kinds, a node, max workers."""
    cpu = Resources.of(CPU=10)
    group = WorkerGroup("cpu", cpu, 0, 10)
    demand = Demand(
        bundles=(Bundle(Resources.of(CPU=5), 2),),
        placement_groups=(PlacementGroup(Strategy.PACK, (cpu,)),),
        constraints=(Bundle(cpu, 1),),
    )
    node = WorkerNode("p", "cpu", cpu, cpu, 0.5, NodeStatus.RUNNING, "ab")  # idle since 0.5
    inp = PlanningInput(ClusterSpec("c", (group,), max_workers=5), demand, (node,))
    return schema.ClusterSnapshot(inp, 1.0, True)
