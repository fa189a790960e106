"""Confirm a rise of a node's use over two polls before exporting it.

Ray's pending demand is the sum of every raylet's own queue report, and the node view is
another set of reports; none is taken at the same instant. While tasks move onto nodes that
just joined, a task can be counted twice: used on the node that runs it and still pending in a
report a poll older. Measured on Ray 2.60 with the local demo (20 x {CPU: 5}, 10-CPU pods
joining one per second): 4 pods fully used (8 tasks) with 13 tasks pending, 21 in all, so the
target went 10 -> 11 -> 10 and an 11th pod was bought and then drained. Per pod, a node's
available resources are therefore the larger of this poll's and the previous poll's (a pod
pending last poll counts as wholly free): use shows a poll late, frees show at once. This cut
the demo's 11th pod from 2 of 3 runs to 0 of 3 on a quiet machine; under heavy load the reports
can lag more than a poll and it still shows (the pod is then drained and removed like any idle
pod). Pending demand itself is exported as read: delaying its rises delayed every scale-up.
Only what is exported to the planner is smoothed: idle decisions and the victim protocol re-read
Ray itself. Pure: the caller keeps the previous poll.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from keda_ray_scaler.model import Resources, WorkerNode


def confirm_use(
    previous: Sequence[WorkerNode] | None, current: Sequence[WorkerNode]
) -> tuple[WorkerNode, ...]:
    """``current`` with each pod's available resources at least what ``previous`` showed."""
    if previous is None:
        return tuple(current)
    before = {n.pod: n.available for n in previous if n.pod}
    return tuple(
        replace(n, available=_larger(n.available, before[n.pod], n.total)) if n.pod in before else n
        for n in current
    )


def _larger(now: Resources, then: Resources, total: Resources) -> Resources:
    """Elementwise max of ``now`` and ``then``, never above ``total``."""
    limit, earlier = total.as_dict(), then.as_dict()
    units = {
        name: min(max(amount, earlier.get(name, 0)), limit.get(name, amount))
        for name, amount in {**earlier, **now.as_dict()}.items()
        if name in limit
    }
    return Resources.from_units(units)
