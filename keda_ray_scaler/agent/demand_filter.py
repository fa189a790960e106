"""Take out of the pending demand the tasks Ray counts twice while they start.

Ray's pending demand is the sum of every raylet's queue report (with the drivers' backlogs), and
the node view is another set of reports; none is taken at the same instant. The raylet leaves a
lease whose resources are allocated (its worker starting) out of its own queue report since Ray
PR #38093, and the owner leaves a task with a lease request out of its backlog, so one
consistent snapshot counts a starting task once. But the reports are not one snapshot: the
resource views come through the syncer at once, the queue loads are pulled every
``gcs_pull_resource_loads_period_milliseconds`` (1 s), and the owner's backlog goes to its own
raylet. Read on Ray 2.60 with a 30 s worker start (``GetAllResourceUsage`` beside
``GetClusterStatus``, 20 x {CPU: 5}): on a quiet machine pending + in use was 20 tasks but for
one second at +1; beside four busy loops it was 21 four times, up to 4.5 s each, at moments when
a raylet that held queued leases also had its own leases waiting for workers. The filter of
sessions 3-5 believed a rise of use once it had lasted 10 s, so with a 30 s worker start it let
such a bounce through: the demo peaked at 11 pods.

So the use that the pending demand does not explain is taken out, over a horizon that ends when
Ray says the worker runs, not after a time: over the polls of the horizon, the use the pods
gained (each pod's use now above its least in the horizon; a pod absent or idle then had none)
minus what the pending demand lost from its peak in the horizon (task and placement-group
bundles, in resources) is the double count; that many resources of task bundles (largest first,
whole bundles that fit) are removed from the exported demand. The horizon is the last
``window_s`` seconds, reaching further back, for as long as a pod is *starting* (resources in
use, no busy worker in Ray's ``node_activity``: see :data:`~keda_ray_scaler.agent.ray_state.
BUSY_WORKERS_ACTIVITY`), to the last poll in which that pod had no use. A rise of use that the
pending demand paid for is shown at once; one it did not pay for is believed once its worker
runs and ``window_s`` has passed. The cost: tasks that arrive and start at once on free capacity
(never pending) while others still wait can hide as many pending tasks until their workers run.
The history is bounded by :data:`MAX_HORIZON_S`. Nodes are exported as read. Pure: the caller
keeps the earlier polls (:class:`UseHistory`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from keda_ray_scaler.model import Bundle, Demand, NodeStatus, Resources, WorkerNode

#: Default window: Ray's load reports skew by a second or two, several under load (two polls
#: at the 5 s default interval).
DEFAULT_WINDOW_S = 10.0

#: The furthest back a starting pod keeps the horizon: Ray's own limit on a worker's start is
#: ``worker_register_timeout_seconds`` (60 s), a ``runtime_env`` install can take minutes more.
MAX_HORIZON_S = 900.0


@dataclass(frozen=True, slots=True)
class Poll:
    """One poll as read: each pod's used resources, the pending demand's total and the pods
    whose workers are starting (resources in use, no busy worker)."""

    at_s: float
    used: Mapping[str, Resources]
    pending: Resources
    starting: frozenset[str] = frozenset()


def used_of(node: WorkerNode) -> Resources:
    """Resources in use on a node (nothing for a pod not yet in Ray)."""
    if node.status is NodeStatus.PENDING or node.available == node.total:
        return Resources()
    have = node.available.as_dict()
    return Resources.from_units({k: max(v - have.get(k, 0), 0) for k, v in node.total})


def pending_of(demand: Demand) -> Resources:
    """Task and placement-group bundles pending, summed (``request_resources`` is no task)."""
    total = Resources()
    for b in demand.bundles:
        total += b.resources.scaled(b.count)
    for pg in demand.placement_groups:
        for r in pg.bundles:
            total += r.scaled(pg.count)
    return total


def poll_of(
    at_s: float,
    nodes: Iterable[WorkerNode],
    demand: Demand,
    starting: frozenset[str] = frozenset(),
) -> Poll:
    """This poll as :class:`UseHistory` keeps it."""
    return Poll(at_s, {n.pod: used_of(n) for n in nodes if n.pod}, pending_of(demand), starting)


def horizon_start(earlier: Sequence[Poll], current: Poll, window_s: float) -> float:
    """Where the horizon begins: ``window_s`` back, or further, to the last poll in which a pod
    that is starting now had no use (never before ``MAX_HORIZON_S``)."""
    start = current.at_s - window_s
    for pod in current.starting:
        if not current.used.get(pod):
            continue
        for poll in reversed(earlier):
            if not poll.used.get(pod):
                start = min(start, poll.at_s)
                break
        else:  # in use in every poll kept: all of them
            start = min(start, earlier[0].at_s if earlier else start)
    return max(start, current.at_s - MAX_HORIZON_S)


def double_counted(earlier: Sequence[Poll], current: Poll) -> Resources:
    """The use gained over the window that the pending demand's fall from its peak does not
    explain (elementwise, never negative)."""
    if not earlier:
        return Resources()
    gained = Resources()
    for pod, now in current.used.items():
        if now:
            least = now.as_dict()
            for poll in earlier:
                then = poll.used.get(pod)
                if not then:  # absent or idle then: all of now is new
                    least = {}
                    break
                if then != now:
                    least = {k: min(v, then.get(k)) for k, v in least.items()}
            gained += Resources.from_units({k: v - least.get(k, 0) for k, v in now})
    if not gained:
        return Resources()
    peak = current.pending.as_dict()
    for poll in earlier:
        for k, v in poll.pending:
            peak[k] = max(peak.get(k, 0), v)
    excess = {k: g - (peak.get(k, 0) - current.pending.get(k)) for k, g in gained}
    return Resources.from_units({k: v for k, v in excess.items() if v > 0})


def without(demand: Demand, excess: Resources) -> tuple[Demand, int]:
    """``demand`` minus whole task bundles that fit in ``excess``, largest first; how many."""
    room, removed = excess, 0
    kept: list[Bundle] = []
    for b in sorted(demand.bundles, key=_size, reverse=True) if excess else ():
        n = min(b.count, min((room.get(k) // v for k, v in b.resources), default=0))
        room -= b.resources.scaled(n)
        removed += n
        if b.count > n:
            kept.append(Bundle(b.resources, b.count - n))
    if not removed:
        return demand, 0
    return replace(demand, bundles=tuple(sorted(kept, key=lambda b: b.resources))), removed


def _size(b: Bundle) -> int:
    return sum(v for _, v in b.resources)


class UseHistory:
    """The polls of the horizon (:func:`horizon_start`), as read."""

    def __init__(self, window_s: float = DEFAULT_WINDOW_S) -> None:
        if window_s < 0:
            raise ValueError(f"window_s must be >= 0, got {window_s:g}")
        self.window_s = window_s
        self._polls: deque[Poll] = deque()

    def earlier(self, current: Poll) -> tuple[Poll, ...]:
        """The recorded polls of ``current``'s horizon; older ones are forgotten."""
        if self.window_s == 0:
            return ()
        start = horizon_start(self._polls, current, self.window_s)
        while self._polls and self._polls[0].at_s < start:
            self._polls.popleft()
        return tuple(self._polls)

    def record(self, poll: Poll) -> None:
        """Keep this poll for the polls to come."""
        if self.window_s > 0:
            self._polls.append(poll)
