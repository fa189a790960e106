"""Resource names exported as a stand-in: counted and logged once each, with bounded memory."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import SnapshotCollector
from keda_ray_scaler.agent.ray.resource_names import StandInLog, resource_names, stood_in
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
LONG_A, LONG_B = "a" * 5_000, "b" * 300


def asking(*names: str) -> PlanningInput:
    """One pending task per name, each with 1 CPU beside it."""
    bundles = tuple(Bundle(Resources.of({"CPU": 1, n: 1}), 1) for n in names)
    return PlanningInput(SPEC, Demand(bundles=bundles))


def stood_in_total(registry: CollectorRegistry) -> float | None:
    """The counter's value for cluster demo."""
    return registry.get_sample_value(
        "ray_scaler_agent_resource_names_stood_in_total", {"cluster": "demo"}
    )


def test_names_come_from_groups_demand_placement_groups_and_nodes() -> None:
    """Every vector the export encodes is looked at."""
    node = WorkerNode("p", "cpu", Resources.of(n1=1), Resources.of(n2=1))
    inp = PlanningInput(
        SPEC,
        Demand(
            bundles=(Bundle(Resources.of(t=1), 1),),
            placement_groups=(PlacementGroup(Strategy.PACK, (Resources.of(pg=1),)),),
            constraints=(Bundle(Resources.of(c=1), 1),),
        ),
        (node,),
    )
    assert resource_names(inp) == {"CPU", "t", "pg", "c", "n1", "n2"}


def test_only_names_too_long_once_encoded_are_stood_in() -> None:
    """Separators, newlines and unicode travel whole; 5,000 and 300 characters do not."""
    assert stood_in(asking("a,b", "a\nb", "GPU型", LONG_A, LONG_B)) == [LONG_A, LONG_B]


def test_each_name_is_counted_and_logged_once_however_many_polls_carry_it() -> None:
    """Three polls with the same two long names: count 2, two log lines naming the stand-ins."""
    registry = CollectorRegistry()
    names = StandInLog(registry, "demo")
    with capture_logs() as logs:
        counts = [names.observe(asking(LONG_A, LONG_B, "a,b")) for _ in range(3)]
    assert counts == [2, 0, 0]
    assert stood_in_total(registry) == 2.0
    assert [(e["event"], e["exported_as"], e["name_chars"]) for e in logs] == [
        ("resource name exported as a stand-in", schema.stand_in(LONG_A), 5_000),
        ("resource name exported as a stand-in", schema.stand_in(LONG_B), 300),
    ]
    assert all(len(e["name"]) <= 120 for e in logs)


def test_memory_is_bounded_and_a_forgotten_name_is_counted_again() -> None:
    """With room for one name, alternating two names logs each time: bounded, never silent."""
    registry = CollectorRegistry()
    names = StandInLog(registry, "demo", remember=1)
    with capture_logs() as logs:
        for _ in range(2):
            names.observe(asking(LONG_A))
            names.observe(asking(LONG_B))
    assert len(logs) == 4
    assert stood_in_total(registry) == 4.0


def test_the_collector_reports_what_it_publishes() -> None:
    """Wired into the exporter: publishing a snapshot with a long name counts it."""
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry, StandInLog(registry, "demo"))
    with capture_logs():
        collector.publish(schema.ClusterSnapshot(asking(LONG_A), 1.0, True))
    assert stood_in_total(registry) == 1.0
