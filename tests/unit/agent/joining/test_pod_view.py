"""The planner's view of a group's pods (:mod:`keda_ray_scaler.agent.joining.pod_view`): a pod
not yet a Ray node is pending, idle since its creation, and stays so when victims are applied
again after a protocol step."""

from __future__ import annotations

from keda_ray_scaler.agent.joining.joins import PodEntry, PodJoinFacts
from keda_ray_scaler.agent.joining.pod_view import complete_nodes, complete_nodes_again
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.model import (
    ClusterSpec,
    Demand,
    NodeStatus,
    PlanningInput,
    Resources,
    WorkerGroup,
    WorkerNode,
)

CPU = Resources.of(CPU=10)
SPEC = ClusterSpec("demo", (WorkerGroup("cpu", CPU),))
NOW = 1_700_000_000.0


def test_a_pod_not_in_ray_is_pending_and_idle_since_its_creation_and_stays_so() -> None:
    """w-2 (created 100 s ago) and w-3 (creation unknown) are no Ray nodes: pending, idle since
    their creation (w-3: no idle time); applying victims again keeps that; w-1, a Ray node, is
    as Ray gave it."""
    ray = (WorkerNode("w-1", "cpu", CPU, CPU, idle_s=5.0, node_id="n1"),)
    pods = [
        PodEntry("w-1", "cpu", facts=PodJoinFacts(created_s=NOW - 300)),
        PodEntry("w-2", "cpu", facts=PodJoinFacts(created_s=NOW - 100)),
        PodEntry("w-3", "cpu"),
    ]
    nodes = complete_nodes(SPEC, ray, {}, pods)
    got = {n.pod: (n.status, n.idle_since_s, n.idle_s) for n in nodes}
    assert got == {
        "w-1": (NodeStatus.RUNNING, 0.0, 5.0),
        "w-2": (NodeStatus.PENDING, NOW - 100, 0.0),
        "w-3": (NodeStatus.PENDING, 0.0, 0.0),
    }
    inp = PlanningInput(SPEC, Demand(), nodes, now_s=NOW)
    again = complete_nodes_again(inp, RayState(Demand(), ray), {"w-1": "cpu"})
    got = {n.pod: (n.status, n.idle_since_s) for n in again}
    assert got == {
        "w-1": (NodeStatus.VICTIM, 0.0),
        "w-2": (NodeStatus.PENDING, NOW - 100),
        "w-3": (NodeStatus.PENDING, 0.0),
    }
