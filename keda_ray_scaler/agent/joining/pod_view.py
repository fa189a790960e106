"""The planner's view of a group's pods: Ray's worker nodes completed with what the agent knows.

Published victims get ``NodeStatus.VICTIM`` (a drained victim whose Ray node is already gone is
added with its group's pod shape); active pods of a known group that have no Ray node yet are
added as ``PENDING`` (or ``FAILING`` with their reason,
:mod:`~keda_ray_scaler.agent.joining.joins`) with
their group's pod shape; Ray nodes whose pod is being deleted or is gone (seen in the cache
before, absent now) are left out: the ReplicaSet no longer counts them, and a raylet that
outlives its pod for a few seconds must not hold the scaler's floor one pod high. A Ray node
whose pod was never seen is kept, so a wrong label selector can never make busy pods disappear.
Pure: :class:`~keda_ray_scaler.agent.loop.AgentLoop` calls it at each poll.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from keda_ray_scaler.agent.joining.joins import PodEntry
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.model import (
    ClusterSpec,
    JoinFailure,
    NodeStatus,
    PlanningInput,
    Resources,
    WorkerNode,
)


def complete_nodes(
    cluster: ClusterSpec,
    ray_nodes: Sequence[WorkerNode],
    victims: Mapping[str, str],
    pods: Sequence[PodEntry] | None,
    gone: frozenset[str] = frozenset(),
    failing: Mapping[str, JoinFailure] | None = None,
) -> tuple[WorkerNode, ...]:
    """Ray's worker nodes plus victims and pods not yet in Ray (pure; see the module doc).

    ``gone`` names pods the cache saw before and no longer has; with inactive ``pods`` their Ray
    nodes are left out unless they are victims (victims never count toward the floor anyway).
    A pod not in Ray named in ``failing`` is ``FAILING`` (with its reason), not ``PENDING``.
    """
    failing = failing or {}
    shapes = {g.name: g.resources for g in cluster.worker_groups}
    leaving = gone | {p.name for p in pods or () if not p.active}
    out: list[WorkerNode] = []
    seen: set[str] = set()
    for n in ray_nodes:
        if n.pod in leaving and n.pod not in victims:
            continue
        seen.add(n.pod)
        out.append(replace(n, status=NodeStatus.VICTIM) if n.pod in victims else n)
    for pod, group in sorted(victims.items()):
        if pod not in seen and group in shapes:
            seen.add(pod)
            shape = shapes[group]
            out.append(WorkerNode(pod, group, shape, shape, status=NodeStatus.VICTIM))
    for p in pods or ():
        if p.active and p.name not in seen and p.group in shapes:
            seen.add(p.name)
            shape = shapes[p.group]
            why = failing.get(p.name)
            if why is None:
                out.append(WorkerNode(p.name, p.group, shape, shape, status=NodeStatus.PENDING))
            else:
                status = NodeStatus.FAILING
                out.append(WorkerNode(p.name, p.group, shape, Resources(), 0.0, status, "", why))
    out.sort(key=lambda n: (n.group, n.pod))
    return tuple(out)


def complete_nodes_again(
    inp: PlanningInput,
    state: RayState,
    victims: Mapping[str, str],
    gone: frozenset[str] = frozenset(),
) -> tuple[WorkerNode, ...]:
    """Re-apply victims after a protocol step; pending and failing pods in ``inp`` are kept."""
    waiting = (NodeStatus.PENDING, NodeStatus.FAILING)
    pending = [PodEntry(n.pod, n.group) for n in inp.nodes if n.status in waiting]
    failing = {n.pod: n.failure for n in inp.nodes if n.failure is not None}
    return complete_nodes(inp.cluster, state.nodes, victims, pending, gone, failing)
