"""Take out of the pending demand the tasks Ray counts twice while they start.

Ray's pending demand is the sum of every raylet's queue report (with the drivers' backlogs), and
the node view is another set of reports; none is taken at the same instant. A task is counted
twice while it starts: its resources are allocated on the node that leased it as soon as the
lease is granted, and it stays in its owner's queue, so in the pending demand, until a worker has
started there and the task is pushed to it. On a pod that just joined Ray that is a worker start:
about a second on a quiet machine, several under load.

Measured on Ray 2.60 with the local demo (20 x {CPU: 5}, 10-CPU pods joining about one per
second), per agent poll (1 s): 2 pods used (4 tasks) with 17 pending on two polls in a row (21
of 20 tasks), 1 pod used with pending bouncing back from 18 to 20 (22). The target went
10 -> 11 and an 11th pod was bought, then drained. Confirming use over one poll (session 3) still
let it through under load (5 of 7 runs), and hiding every rise of use for a window (tried next)
under-counted real demand: through the HPA's scale-up rate limit (1 -> 5 -> 10 pods), the 5 pods'
tasks hidden left 10 pending tasks placed on capacity that looked free, and the real loop reached
10 pods in 26 s instead of 12.

So only the use that the pending demand does not explain is taken out: over the polls of the last
``window_s`` seconds, the use the pods gained (each pod's use now above its least in the window;
a pod absent or pending then had none) minus what the pending demand lost from its peak in the
window (task and placement-group bundles, in resources, kind by kind: a task of a kind that
arrived meanwhile is no fall of the kinds that started) is the double count; that many resources
of task bundles (largest first, whole bundles that fit) are removed from the exported demand. A
rise of use that pending demand paid for is shown at once; one it did not pay for is believed
once it has lasted the window. The peak is taken over the pending demand as *exported* (after
this filter), never as read: a double count taken out earlier is no fall of the demand that
could hide a later one (seen on the real node under a load of 12: a read of 20 with 2 tasks
leased, exported as 18, left the peak at 20 for the window, and the next lease's double count,
21 tasks of 20, went through and bought an 11th pod). The cost: tasks that arrive and start at
once on free capacity (never pending) while others still wait can hide as many pending tasks for
at most the window. Except beside an arrival: use that rose in the interval where units of a
kind were first read pending (or the interval before it) is explained by those arrivals, for the
window (vs-ray (g), 2026-11-29: Serve going 1 -> 6 replicas of ``{CPU: 5}``, one started at once
on the rest pod's free half while four waited; the filter took 1-2 of the four out and the pods
came in two steps, all Ready at 12.1 s against Ray's 6.1 s). A double count is a unit that
waited: read pending polls before its lease.
Nodes are exported as read. Pure: the caller keeps the earlier polls (:class:`UseHistory`).

Since rule R1 (the head raylet's load read after the node view) the spill race above is gone
from the pending demand; the filter now covers what R1 leaves, a lease allocated before its
owner's next backlog report (``docs/concepts/demand.md``, "What R1 still counts").
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from operator import attrgetter
from typing import Final, TypeVar

from keda_ray_scaler.model import Bundle, Demand, NodeStatus, Resources, WorkerNode

#: Default window. After rule R1 (:mod:`~keda_ray_scaler.agent.ray.task_load`) what is left to cover
#: is an owner's backlog report, sent on the core worker's 1 s heartbeat: one poll in the demo,
#: with a worker start of 0 s or 30 s alike (``docs/concepts/demand.md``). 10 s is that period
#: under load, with margin (2 polls at the 5 s default interval); it no longer tracks the start.
DEFAULT_WINDOW_S = 10.0


#: One kind of pending unit: a task bundle's shape and selectors, or a placement group's
#: strategy, bundles and selectors. The pending demand falls, and explains use, kind by kind.
Kind = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Poll:
    """One earlier poll as read: each pod's used resources and the pending demand, the
    resources of each kind of unit summed."""

    at_s: float
    used: Mapping[str, Resources]
    pending: Mapping[Kind, Resources]
    #: The pending demand as read (``pending`` is as exported), where it differs.
    read: Mapping[Kind, Resources] | None = None

    @property
    def as_read(self) -> Mapping[Kind, Resources]:
        """The pending demand as read, kind by kind."""
        return self.pending if self.read is None else self.read

    @property
    def pending_total(self) -> Resources:
        """The pending demand's resources, every kind summed."""
        return sum(self.pending.values(), Resources())


_NOTHING = Resources()
_K = TypeVar("_K")


def used_of(node: WorkerNode) -> Resources:
    """Resources in use on a node (nothing for a pod not yet in Ray)."""
    if node.status is NodeStatus.PENDING or node.available == node.total:
        return _NOTHING
    return _in_use(node.total, node.available)


@functools.lru_cache(maxsize=4096)  # pure; a node's use is the same from poll to poll
def _in_use(total: Resources, available: Resources) -> Resources:
    have = available.as_dict()
    return Resources.from_units({k: max(v - have.get(k, 0), 0) for k, v in total})


def pending_of(demand: Demand) -> dict[Kind, Resources]:
    """Task and placement-group bundles pending, summed per kind (``request_resources`` is no
    task)."""
    out: dict[Kind, Resources] = {}
    for b in demand.bundles:
        kind: Kind = ("task", b.resources, b.selectors)
        out[kind] = out.get(kind, _NOTHING) + b.resources.scaled(b.count)
    for pg in demand.placement_groups:
        kind = ("pg", pg.strategy, pg.bundles, pg.selectors)
        one = sum(pg.bundles, Resources())
        out[kind] = out.get(kind, _NOTHING) + one.scaled(pg.count)
    return out


def poll_of(
    at_s: float,
    nodes: Iterable[WorkerNode],
    demand: Demand,
    pending: Mapping[Kind, Resources] | None = None,
) -> Poll:
    """This poll as :class:`UseHistory` keeps it (``pending``: ``pending_of(demand)``, known)."""
    used = {n.pod: used_of(n) for n in nodes if n.pod}
    return Poll(at_s, used, pending_of(demand) if pending is None else pending)


def double_counted(earlier: Sequence[Poll], current: Poll) -> Resources:
    """The use gained over the window that the pending demand's fall from its peak does not
    explain (elementwise, never negative). The fall is taken kind by kind: a unit of a kind
    that arrived meanwhile does not offset the fall of the kinds that started (taken as a
    whole, a task submitted while others had just started was hidden for the window: 9.3 s
    for the fallback task of vs-ray (e))."""
    if all(poll.used == current.used for poll in earlier):  # no use rose (nor any at all)
        return Resources()
    gained = Resources()
    for pod, now in current.used.items():
        if now:
            least, same = now.as_dict(), True
            for poll in earlier:
                then = poll.used.get(pod)
                if not then:  # absent or idle then: all of now is new
                    least, same = {}, False
                    break
                if then != now:
                    least, same = {k: min(v, then.get(k)) for k, v in least.items()}, False
            if not same:  # the same use all along gained nothing
                gained += Resources.from_units({k: v - least.get(k, 0) for k, v in now})
    if not gained:
        return Resources()
    fall = _fall(earlier, current)
    excess = {k: g - fall.get(k, 0) for k, g in gained}
    if any(v > 0 for v in excess.values()):
        arrived = _arrived_with_use((*earlier, current))
        excess = {k: v - arrived.get(k, 0) for k, v in excess.items()}
    return Resources.from_units({k: v for k, v in excess.items() if v > 0})


def _arrived_with_use(polls: Sequence[Poll]) -> dict[str, int]:
    """The use that rose between two polls in which units arrived, up to those arrivals.

    A unit that arrives while room waits for it starts at once: its use rises in the same
    interval as it arrives, or, the node view and the load being two reads, one interval before
    its kind is read pending. A double count is a unit that waited for a lease, read pending
    polls before the lease. Each interval's rise (pods' use above the poll before, summed) is
    explained by the arrivals of that interval and the next: each kind's pending as read above
    its highest in the window's polls before (a bounce back to that high is no arrival: the same
    units read pending again). An arrival explains one rise."""
    arrivals: list[dict[str, int]] = []
    high = _raise_peaks({}, polls[0].as_read) if polls else {}
    for poll in polls[1:]:
        arrivals.append(_rise(poll.as_read.items(), high))
        _raise_peaks(high, poll.as_read)
    out: dict[str, int] = {}
    for i, (a, b) in enumerate(pairwise(polls)):
        rise = _rise(((p, u) for p, u in b.used.items() if u), a.used)
        for near in arrivals[i : i + 2] if rise else ():
            for k, v in list(rise.items()):
                took = min(v, near.get(k, 0))
                if took:
                    rise[k] -= took
                    near[k] -= took
                    out[k] = out.get(k, 0) + took
    return out


def _rise(
    now: Iterable[tuple[_K, Resources]], then: Mapping[_K, Resources | Mapping[str, int]]
) -> dict[str, int]:
    """Each entry's resources above ``then``'s entry of the same key, summed (a key absent
    then had none)."""
    out: dict[str, int] = {}
    for key, r in now:
        before = then.get(key)
        for k, v in r:
            more = v - (before.get(k) or 0 if before else 0)
            if more > 0:
                out[k] = out.get(k, 0) + more
    return out


def _fall(earlier: Sequence[Poll], current: Poll) -> dict[str, int]:
    """How far each kind's pending resources fell from their peak in the window, summed."""
    peaks: dict[Kind, dict[str, int]] = {}
    for poll in (*earlier, current):
        _raise_peaks(peaks, poll.pending)
    fall: dict[str, int] = {}
    for kind, peak in peaks.items():
        now = current.pending.get(kind, _NOTHING)
        for k, v in peak.items():
            fall[k] = fall.get(k, 0) + v - now.get(k)
    return fall


def _raise_peaks(
    peaks: dict[Kind, dict[str, int]], pending: Mapping[Kind, Resources]
) -> dict[Kind, dict[str, int]]:
    """Raise each kind's peak, resource by resource, to ``pending``'s; ``peaks``, raised."""
    for kind, r in pending.items():
        peak = peaks.setdefault(kind, {})
        for k, v in r:
            peak[k] = max(peak.get(k, 0), v)
    return peaks


def without(demand: Demand, excess: Resources) -> tuple[Demand, int]:
    """``demand`` minus whole task bundles that fit in ``excess``, largest first; how many."""
    room, removed = excess, 0
    kept: list[Bundle] = []
    for b in sorted(demand.bundles, key=_size, reverse=True) if excess else ():
        n = min(b.count, min((room.get(k) // v for k, v in b.resources), default=0))
        room -= b.resources.scaled(n)
        removed += n
        if b.count > n:
            kept.append(replace(b, count=b.count - n))  # its label selectors kept
    if not removed:
        return demand, 0
    order = sorted(kept, key=lambda b: (b.resources, b.selectors))
    return replace(demand, bundles=tuple(order)), removed


def _size(b: Bundle) -> int:
    return sum(v for _, v in b.resources)


@dataclass(frozen=True, slots=True)
class Filtered:
    """One poll through the filter: the demand to export and what it took out."""

    demand: Demand
    removed: int  # task bundles taken out
    current: Poll  # this poll as read
    horizon_s: float  # how far back the window's earliest poll is (0: none)


#: What a node's use depends on (:func:`used_of`): not its idle time, which grows at every poll.
_USE_OF: Final = attrgetter("pod", "status", "total", "available")


@dataclass(frozen=True, slots=True)
class _Used:
    """The last poll's nodes, what their use was made of (each node's :data:`_USE_OF`), and
    that use."""

    nodes: tuple[WorkerNode, ...]
    uses: Sequence[tuple[object, ...]]
    used: Mapping[str, Resources]


def _use_now(
    nodes: Sequence[WorkerNode], uses: Sequence[tuple[object, ...]], last: _Used
) -> dict[str, Resources]:
    """Each pod's use (:func:`poll_of`'s), the last poll's for a pod whose :data:`_USE_OF` is
    the same (most pods, when a few changed)."""
    before = {u[0]: u for u in last.uses}
    return {
        n.pod: last.used[n.pod] if before.get(n.pod) == u else used_of(n)
        for n, u in zip(nodes, uses, strict=True)
        if n.pod
    }


class UseHistory:
    """The polls of the last ``window_s`` seconds, each with its pending demand as exported."""

    def __init__(self, window_s: float = DEFAULT_WINDOW_S) -> None:
        if window_s < 0:
            raise ValueError(f"window_s must be >= 0, got {window_s:g}")
        self.window_s = window_s
        self._polls: deque[Poll] = deque()
        self._pending: tuple[Demand | None, Mapping[Kind, Resources]] = (None, {})
        self._last = _Used((), [], {})

    def earlier(self, now_s: float) -> tuple[Poll, ...]:
        """The recorded polls taken within the window before ``now_s``."""
        while self._polls and self._polls[0].at_s < now_s - self.window_s:
            self._polls.popleft()
        return tuple(self._polls)

    def record(self, poll: Poll) -> None:
        """Keep this poll for the polls to come."""
        if self.window_s > 0:
            self._polls.append(poll)

    def filter(self, at_s: float, nodes: Iterable[WorkerNode], demand: Demand) -> Filtered:
        """``demand`` read at ``at_s`` without its double count; the poll kept with the
        pending demand as exported (module doc)."""
        if self._pending[0] is not demand:  # the demand read again is often the same one
            self._pending = (demand, pending_of(demand))
        nodes, last = tuple(nodes), self._last
        if nodes == last.nodes:  # the same nodes (by identity first): the same use
            current = Poll(at_s, last.used, self._pending[1])
        elif (uses := list(map(_USE_OF, nodes))) == last.uses:  # the same but for idle times
            current = Poll(at_s, last.used, self._pending[1])
            self._last = _Used(nodes, uses, last.used)
        else:
            current = Poll(at_s, _use_now(nodes, uses, last), self._pending[1])
            self._last = _Used(nodes, uses, current.used)
        earlier = self.earlier(at_s)
        exported, removed = without(demand, double_counted(earlier, current))
        if exported is demand:
            self.record(current)
        else:  # the window's peak is over what was exported, its arrivals over what was read
            self.record(replace(current, pending=pending_of(exported), read=current.pending))
        horizon = at_s - earlier[0].at_s if earlier else 0.0
        return Filtered(exported, removed, current, horizon)
