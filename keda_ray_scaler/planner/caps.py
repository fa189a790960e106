"""Pods that go at once: those that will not be Ray nodes, then those above a cap; pure.

A ``FAILING`` pod (``WorkerNode.failure``: not joined within its timeout, unschedulable, a
failing container, a dead Ray node) holds no Ray state: it goes first, whatever the caps, with
its reason as the decision's (``Why.NOT_JOINED`` ...), like Ray v2's reconciler terminating an
instance not ``RAY_RUNNING`` in time. It is left out of the caps' count.

Caps lowered below what runs: which pods go, in Ray's order.

Ray autoscaler v2 (``_enforce_max_workers_per_type``, then ``_enforce_max_workers_global``,
ordered by ``_sort_nodes_for_termination``): pods that are not yet Ray nodes go first, then
idle pods, longest idle first. The idle timeout does not protect a pod above a cap. Unlike Ray,
a pod with a resource in use never goes: when busy pods alone exceed a cap they stay, and the
plan says so (``Why.BUSY_ABOVE_CAP``). The cluster-wide cut never takes a group below its
``minReplicas``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from keda_ray_scaler.decisions import Decision, DecisionKind, Why
from keda_ray_scaler.model import ClusterSpec, NodeStatus, WorkerNode


@dataclass(frozen=True, slots=True)
class CapCut:
    """Pods that go because a cap is below what runs, and the decisions that say so."""

    leaving: tuple[tuple[str, ...], ...]  # per group, in the order they go
    decisions: tuple[tuple[Decision, ...], ...]  # per group
    cluster: tuple[Decision, ...] = ()  # busy pods alone above maxWorkers


def removable_now(node: WorkerNode) -> bool:
    """Not yet a Ray node, or a running Ray node with nothing in use."""
    if node.status is NodeStatus.PENDING:
        return True
    return node.status is NodeStatus.RUNNING and node.available == node.total


def cap_order(node: WorkerNode, now_s: float) -> tuple[int, float, str]:
    """Ray's termination order: not yet a Ray node first, then longest idle (at ``now_s``)
    first."""
    return (0 if node.status is NodeStatus.PENDING else 1, -node.idle_at(now_s), node.pod)


def cut_to_caps(cluster: ClusterSpec, pods: Sequence[Sequence[WorkerNode]], now_s: float) -> CapCut:
    """The pods (``pods[i]``: group ``i``'s pods that are not victims) that go to meet
    maxReplicas, then maxWorkers, idle times taken at ``now_s``; see the module docstring."""
    groups = cluster.worker_groups
    leaving: list[list[str]] = [[] for _ in groups]
    decisions: list[list[Decision]] = [[] for _ in groups]
    spare: list[tuple[tuple[int, float, str], int]] = []
    for i, g in enumerate(groups):
        failing = sorted((n for n in pods[i] if n.status is NodeStatus.FAILING), key=_by_pod)
        leaving[i] = [n.pod for n in failing]
        decisions[i] = failing_decisions(failing)
        rest = [n for n in pods[i] if n.status is not NodeStatus.FAILING]
        candidates = sorted(
            (n for n in rest if removable_now(n)), key=lambda n: cap_order(n, now_s)
        )
        excess = len(rest) - g.max_replicas
        over = [n.pod for n in candidates[: max(0, excess)]]
        if excess > 0:
            leaving[i] += over
            _record(decisions[i], over, excess, Why.MAX_REPLICAS, g.max_replicas)
        spare += [(cap_order(n, now_s), i) for n in candidates[len(over) :]]
    out: list[Decision] = []
    if cluster.max_workers is not None:
        left = [len(p) - len(gone) for p, gone in zip(pods, leaving, strict=True)]
        excess = sum(left) - cluster.max_workers
        taken: list[list[str]] = [[] for _ in groups]
        for (_, _, pod), i in sorted(spare):
            if excess <= sum(map(len, taken)):
                break
            if left[i] - len(taken[i]) > groups[i].min_replicas:
                taken[i].append(pod)
        for i, pods_i in enumerate(taken):
            if pods_i:
                leaving[i] += pods_i
                decisions[i].append(
                    Decision(
                        DecisionKind.REMOVE,
                        len(pods_i),
                        Why.MAX_WORKERS,
                        tuple(pods_i),
                        cluster.max_workers,
                    )
                )
        short = excess - sum(map(len, taken))
        if short > 0:
            out.append(
                Decision(DecisionKind.KEEP, short, Why.BUSY_ABOVE_CAP, (), cluster.max_workers)
            )
    return CapCut(tuple(tuple(p) for p in leaving), tuple(tuple(d) for d in decisions), tuple(out))


def failing_decisions(failing: Sequence[WorkerNode]) -> list[Decision]:
    """One REMOVE decision per failure reason, pods named."""
    by_reason: dict[Why, list[str]] = {}
    for n in failing:
        why = Why(n.failure.value) if n.failure is not None else Why.NOT_JOINED
        by_reason.setdefault(why, []).append(n.pod)
    return [
        Decision(DecisionKind.REMOVE, len(pods), why, tuple(pods))
        for why, pods in sorted(by_reason.items())
    ]


def _by_pod(node: WorkerNode) -> str:
    return node.pod


def _record(into: list[Decision], gone: list[str], excess: int, why: Why, limit: int) -> None:
    if gone:
        into.append(Decision(DecisionKind.REMOVE, len(gone), why, tuple(gone), limit))
    if excess > len(gone):
        into.append(Decision(DecisionKind.KEEP, excess - len(gone), Why.BUSY_ABOVE_CAP, (), limit))
