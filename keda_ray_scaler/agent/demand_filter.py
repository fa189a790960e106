"""Confirm a rise of pending demand, or of a node's use, over two polls before exporting it.

Ray's pending demand is the sum of every raylet's own queue report, and the node view is
another set of reports; none is taken at the same instant. While tasks move (spill-back, leases
granted as new nodes join) a task can be counted twice: used on the node that runs it and still
pending in a report a poll older. Measured on Ray 2.60 with the local demo (20 x {CPU: 5},
10-CPU pods joining one per second): 4 pods fully used (8 tasks) with 13 tasks pending, 21 in
all, so the target went 10 -> 11 -> 10 and an 11th pod was bought and then drained. A real rise
lasts; a count ahead of the other report is gone a poll later. So:

- per task shape the exported count is the smaller of this poll's and the previous poll's raw
  counts (a shape not pending before is exported at once: scaling from zero is not delayed);
- per pod, a node's available resources are the larger of this poll's and the previous poll's
  (a pod pending last poll counts as wholly free), so use shows a poll late.

Falls pass at once. Placement groups and ``request_resources`` floors are objects, not racing
reports, and pass unchanged. Only what is exported to the planner is smoothed: idle decisions
and the victim protocol re-read Ray itself. Pure: the caller keeps the previous poll.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from keda_ray_scaler.model import Bundle, Demand, Resources, WorkerNode


def confirm_rises(previous: Demand | None, current: Demand) -> Demand:
    """``current`` with each task shape's count capped by its count in ``previous``, if any."""
    if previous is None:
        return current
    before: dict[Resources, int] = {}
    for bundle in previous.bundles:
        before[bundle.resources] = before.get(bundle.resources, 0) + bundle.count
    bundles = tuple(
        Bundle(b.resources, min(b.count, before[b.resources])) if b.resources in before else b
        for b in current.bundles
    )
    return replace(current, bundles=tuple(b for b in bundles if b.count > 0))


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
