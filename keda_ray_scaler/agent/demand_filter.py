"""Confirm a rise of a node's use over a time window before exporting it.

Ray's pending demand is the sum of every raylet's queue report (with the drivers' backlogs), and
the node view is another set of reports; none is taken at the same instant. While tasks move
onto pods that just joined, a task is counted twice: its resources are allocated on the node
that leased it as soon as the lease is granted, and it stays in the owner's queue, so in the
pending demand, until a worker has started there and the task is pushed to it. On a fresh pod
that is a worker process start: ~1 s on a quiet machine, several under load, longer with a
runtime environment to build.

Measured on Ray 2.60 with the local demo (20 x {CPU: 5}, 10-CPU pods joining about one per
second), per agent poll (1 s): 2 pods used (4 tasks) with 17 tasks pending over two polls in a
row (21 of 20 tasks), or 1 pod used with pending rising back from 18 to 20 (22). The target
went 10 -> 11 and an 11th pod was bought, then drained. Confirming use over one poll cut that
from 2 of 3 demo runs to 0 of 3 on a quiet machine, but a loaded machine showed it in 3 of 4
runs: the double count lasted two polls.

So each pod's exported available resources are the largest it had over the polls of the last
``window_s`` seconds (a pod absent from one of those polls, or pending in it, counts as wholly
free there): use shows once it has lasted the window, frees show at once. A double-counted task
therefore lands, for the planner, on capacity that looks free, as it does in Ray a moment later.
The cost: for ``window_s`` after tasks land, new demand can be placed on that capacity too, so a
scale-up for demand arriving in that window can come up to ``window_s`` late. Pending demand
itself is exported as read (delaying its rises delays every scale-up). Only what is exported to
the planner is smoothed: idle decisions and the victim protocol re-read Ray itself. Pure: the
caller keeps the earlier polls (:class:`UseHistory` does).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from keda_ray_scaler.model import Resources, WorkerNode

#: Default window: a worker start under load, with margin (2 polls at the 5 s default interval).
DEFAULT_WINDOW_S = 10.0


@dataclass(frozen=True, slots=True)
class Poll:
    """One earlier poll: when it was taken, and each pod's available resources then."""

    at_s: float
    available: Mapping[str, Resources]


def confirm_use(earlier: Sequence[Poll], current: Sequence[WorkerNode]) -> tuple[WorkerNode, ...]:
    """``current`` with each pod's available resources the largest over ``earlier`` and now.

    ``earlier`` holds the polls inside the window only (the caller trims it). A pod missing from
    one of them counts as wholly free in that poll: its use, if any, is new.
    """
    if not earlier:
        return tuple(current)
    return tuple(_confirmed(n, earlier) for n in current)


def _confirmed(node: WorkerNode, earlier: Sequence[Poll]) -> WorkerNode:
    if node.available == node.total:  # wholly free now: nothing to hold back
        return node
    largest = node.available
    for poll in earlier:
        then = poll.available.get(node.pod, node.total)
        if then != largest:
            largest = _larger(largest, then, node.total)
            if largest == node.total:
                break
    return node if largest is node.available else replace(node, available=largest)


def _larger(now: Resources, then: Resources, total: Resources) -> Resources:
    """Elementwise max of ``now`` and ``then``, never above ``total``."""
    limit, earlier = total.as_dict(), then.as_dict()
    units = {
        name: min(max(amount, earlier.get(name, 0)), limit.get(name, amount))
        for name, amount in {**earlier, **now.as_dict()}.items()
        if name in limit
    }
    return Resources.from_units(units)


class UseHistory:
    """The polls of the last ``window_s`` seconds, for :func:`confirm_use`."""

    def __init__(self, window_s: float = DEFAULT_WINDOW_S) -> None:
        if window_s < 0:
            raise ValueError(f"window_s must be >= 0, got {window_s:g}")
        self.window_s = window_s
        self._polls: deque[Poll] = deque()

    def earlier(self, now_s: float) -> tuple[Poll, ...]:
        """The recorded polls taken within the window before ``now_s``."""
        while self._polls and self._polls[0].at_s < now_s - self.window_s:
            self._polls.popleft()
        return tuple(self._polls)

    def record(self, now_s: float, nodes: Sequence[WorkerNode]) -> None:
        """Keep this poll's raw view (before confirmation) for the polls to come."""
        if self.window_s > 0:
            self._polls.append(Poll(now_s, {n.pod: n.available for n in nodes if n.pod}))
