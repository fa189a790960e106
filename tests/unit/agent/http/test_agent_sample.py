"""The real-node tests' reading of the agent's /metrics (``real_loop.agent_sample``), fed the
text the agent's own exporter renders: what the fault matrix's "no busy pod deleted" relies on."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from real_loop import agent_sample

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import SnapshotCollector
from keda_ray_scaler.model import (
    ClusterSpec,
    Demand,
    NodeStatus,
    PlanningInput,
    Resources,
    WorkerGroup,
    WorkerNode,
)

POD = Resources.of(CPU=10)


def _text(*nodes: WorkerNode) -> str:
    spec = ClusterSpec("demo", (WorkerGroup("cpu", POD, 0, 10),))
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(
        schema.ClusterSnapshot(PlanningInput(spec, Demand(), nodes), 1.0, True)
    )
    return generate_latest(registry).decode()


def test_a_fully_used_half_used_idle_pending_and_failing_pod_read_as_they_are() -> None:
    """A pod whose CPUs are all in use has no available series (zero is not exported): busy."""
    text = _text(
        WorkerNode("full", "cpu", POD, Resources(), 0.0, NodeStatus.RUNNING, "n-full"),
        WorkerNode("half", "cpu", POD, Resources.of(CPU=5), 0.0, NodeStatus.RUNNING, "n-half"),
        WorkerNode("idle", "cpu", POD, POD, 30.0, NodeStatus.RUNNING, "n-idle"),
        WorkerNode("coming", "cpu", POD, POD, 0.0, NodeStatus.PENDING, ""),
        WorkerNode("gone", "cpu", POD, Resources(), 0.0, NodeStatus.FAILING, ""),
    )
    sample = agent_sample(1.0, text)
    assert sample.busy == {"full", "half"}
    assert sample.live == {"full", "half", "idle"}
    assert sample.failing == {"gone"}
