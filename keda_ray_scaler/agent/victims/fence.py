"""Fence: a worker pod that is being deleted gets no new Ray work.

A pod with ``metadata.deletionTimestamp`` runs on for its grace period (30 s by default; all of
it when the container's main process ignores SIGTERM, as a shell running ``ray start --block``
does). Its Ray node stays schedulable all that time: Ray places new tasks there and they fail
with ``NodeDiedError`` when the kubelet kills the container. Seen in the fault matrix
(2026-11-27): a scale to zero deleted a replacement pod while it started; it joined Ray 6 s
later, ran tasks, and took the next workload's two tasks 1 s before its grace ran out.

So the node of each such pod is drained for preemption (``DRAIN_NODE_REASON_PREEMPTION``, no
deadline): Ray accepts it busy or not, schedules nothing new there, and lets what runs finish
until the pod dies. Once per node id; a rejected or failed call is tried again at the next
step. Whoever deleted the pod (a ReplicaSet scale-down, KubeRay, a user) is not asked: a pod
being deleted never comes back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from keda_ray_scaler.agent.interfaces import DrainResult
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.victims.verdicts import Outcome, Verdict
from keda_ray_scaler.model import NodeStatus, WorkerNode


class Fencer(Protocol):
    """Drains one node for preemption (:meth:`keda_ray_scaler.agent.ray.drain.RayDrainer.fence`)."""

    async def fence(self, node_id: str, message: str) -> DrainResult: ...


def to_fence(
    pods: Iterable[PodInfo], nodes: Iterable[WorkerNode], fenced: frozenset[str]
) -> list[WorkerNode]:
    """The running Ray nodes of pods being deleted, not fenced yet (pure)."""
    deleting = {p.name for p in pods if p.deleting}
    return [
        n
        for n in nodes
        if n.pod in deleting
        and n.status is NodeStatus.RUNNING
        and n.node_id
        and n.node_id not in fenced
    ]


class Fence:
    """Fences the nodes of pods being deleted; remembers the ones Ray accepted."""

    def __init__(self, fencer: Fencer) -> None:
        self._fencer = fencer
        self._fenced: set[str] = set()

    def wanted(self, pods: Iterable[PodInfo]) -> bool:
        """Some pod is being deleted: the step needs a fresh read of Ray's nodes."""
        return any(p.deleting for p in pods)

    async def step(self, pods: Sequence[PodInfo], nodes: Sequence[WorkerNode]) -> list[Verdict]:
        """Fence what :func:`to_fence` names; a verdict for each accepted fence."""
        self._fenced &= {n.node_id for n in nodes}  # forget nodes Ray no longer lists
        verdicts = []
        for node in to_fence(pods, nodes, frozenset(self._fenced)):
            message = f"pod {node.pod} is being deleted"
            result = await self._fencer.fence(node.node_id, message)
            if result.accepted:
                self._fenced.add(node.node_id)
                verdicts.append(Verdict(node.group, node.pod, Outcome.FENCED, message))
        return verdicts
