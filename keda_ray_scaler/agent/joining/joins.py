"""A worker pod's way into Ray: coming, joined, or known not to come; and the group back-off.

Pure: the caller passes the time and keeps the state (:class:`Backoff` values).

A pod of a known group with no live Ray node is, in this order:

- ``RAY_NODE_DEAD``: Ray reports a DEAD node for it (its raylet died; a restarted container
  registers a new node, which makes it joined again), and the pod is older than the join timeout
  or its container crash-loops. A younger pod whose node died is coming: the raylet that died
  at start (``ray start`` gives a raylet 30 s to register, hard-coded in Ray 2.60's
  ``node.py``: ten worker pods starting at once on two cores passed it, seen on the real node)
  comes back with the kubelet's restart; counting it failing made the planner launch a
  replacement beside it (the seed example peaked at 11 pods, not 10);
- ``UNSCHEDULABLE``: ``PodScheduled=False`` with reason ``Unschedulable`` (no node fits: the
  scheduler's own verdict, the fastest signal; quota or spot capacity that never comes);
- ``CONTAINER_FAILING``: a container (or init container) waits for a reason that is a failure
  (:data:`~keda_ray_scaler.agent.kube.pod_info.FAILING_WAITING`: image pull, crash loop, bad
  config) rather than a start, or has
  exited with a non-zero code (``kube.container_failure``);
- ``NOT_JOINED``: none of those, but no Ray node ``join_timeout_s`` after the pod was created
  (Ray v2's ``InstanceReconcileConfig`` terminates an instance not ``RAY_RUNNING`` 300 s after
  allocation: the same default);
- else coming (``None``): counted as capacity, as Ray counts a launching instance.

A failing pod holds no Ray state, so it is removed without a drain (``NodeStatus.FAILING``).
Once failing, a pod stays so until it joins Ray or goes (the tracker keeps it: a crash-looping
container is Running or Terminated between its waits).

The back-off: each failed *launch* of a group doubles its wait, from ``initial_s`` up to
``max_s``: a pod found failing (a dead Ray node aside: that is a fault of a running node, not of
the group's pods) is a new failed launch if it was made after the group's last one was counted
(:func:`failed_launches`); the pods of one scale-up fail together and count once, as
cluster-autoscaler counts a failed scale-up once whatever its size (counted each, ten pods of
one scale-up that crash-looped together on a busy node took the wait to its cap, 600 s, at once:
CI, 2026-11-27). While the wait runs the group gets no new pods; after it, one at a time (a pod
coming, or a failing pod not yet gone, holds the next), each its own launch, until a pod of the
group joins Ray, which ends it. So a group whose image is broken costs at most one pod at a time
and never loops create/delete (kuberay#865).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from keda_ray_scaler.backoff import DoublingBackoff
from keda_ray_scaler.model import JoinFailure

#: Ray v2's ``InstanceReconcileConfig`` allocate -> RAY_RUNNING timeout, in seconds.
DEFAULT_JOIN_TIMEOUT_S = 300.0
#: The first wait after a failure: long enough for the failed pod to be removed (victim
#: protocol: marks, 5 s settle, KEDA's poll and the HPA's sync) before a new one is made.
DEFAULT_BACKOFF_INITIAL_S = 30.0
#: The longest wait: Ray v2 queues an unallocated request again after 600 s.
DEFAULT_BACKOFF_MAX_S = 600.0


@dataclass(frozen=True, slots=True)
class PodJoinFacts:
    """What Kubernetes says about a pod that is not (yet) a Ray node."""

    created_s: float | None = None  # metadata.creationTimestamp
    unschedulable: bool = False  # PodScheduled=False, reason Unschedulable
    container_failure: str = ""  # why one of its containers fails to start, else ""


@dataclass(frozen=True, slots=True)
class PodEntry:
    """A worker pod as the pod cache sees it: for ``PENDING`` and ``FAILING`` nodes."""

    name: str
    group: str
    active: bool = True  # False: Succeeded, Failed or being deleted
    facts: PodJoinFacts = PodJoinFacts()


def join_failure(
    facts: PodJoinFacts, *, ray_dead: bool, now_s: float, timeout_s: float
) -> JoinFailure | None:
    """Why a pod with no live Ray node will not become one; None while it may (see module)."""
    young = facts.created_s is not None and now_s - facts.created_s < timeout_s
    if ray_dead:
        return None if young and not facts.container_failure else JoinFailure.RAY_NODE_DEAD
    if facts.unschedulable:
        return JoinFailure.UNSCHEDULABLE
    if facts.container_failure:
        return JoinFailure.CONTAINER_FAILING
    if facts.created_s is not None and not young:
        return JoinFailure.NOT_JOINED
    return None


@dataclass(frozen=True, slots=True)
class BackoffSettings:
    """``initial_s`` doubling per failure up to ``max_s``; see the module docstring."""

    initial_s: float = DEFAULT_BACKOFF_INITIAL_S
    max_s: float = DEFAULT_BACKOFF_MAX_S


@dataclass(frozen=True, slots=True)
class Backoff:
    """One group's back-off: failed launches since a pod last joined, the end of the wait, and
    when the last failed launch was counted (pods made before it belong to counted launches)."""

    failures: int = 0
    until_s: float = 0.0
    counted_s: float | None = None

    def active(self) -> bool:
        """The group had failures no join has ended yet."""
        return self.failures > 0


def failed_launches(b: Backoff, created_s: Iterable[float | None]) -> int:
    """The new failed launches that a group's newly failing pods (their creation times) make:
    one when any was made after the group's last counted launch (or none was counted yet, or
    its creation time is unknown), else none (see the module)."""
    last = b.counted_s
    return int(any(c is None or last is None or c > last for c in created_s))


def after_failures(b: Backoff, count: int, now_s: float, settings: BackoffSettings) -> Backoff:
    """``count`` new failed launches at ``now_s``: the wait doubles for each."""
    if count <= 0:
        return b
    failures = b.failures + count
    wait = DoublingBackoff(settings.initial_s, settings.max_s).delay_s(failures)
    return Backoff(failures, max(b.until_s, now_s + wait), now_s)


def launch_limit(b: Backoff, *, now_s: float, coming: int, failing: int) -> int | None:
    """New pods the group may get now: None (no limit) unless backed off; 0 while the wait
    runs or a pod is coming or a failing pod is not gone yet; else 1."""
    if not b.active():
        return None
    if now_s < b.until_s or coming > 0 or failing > 0:
        return 0
    return 1


def remaining_s(b: Backoff, now_s: float) -> float:
    """Seconds left of the wait (0 when none)."""
    return max(0.0, b.until_s - now_s) if b.active() else 0.0


def newly_failing(
    before: Mapping[str, JoinFailure], now: Mapping[str, JoinFailure]
) -> dict[str, JoinFailure]:
    """Pods failing now that were not before, dead Ray nodes left out (not the group's fault)."""
    return {
        pod: why
        for pod, why in now.items()
        if pod not in before and why is not JoinFailure.RAY_NODE_DEAD
    }
