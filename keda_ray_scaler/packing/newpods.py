"""Pods planned but not yet existing, as classes of identical free space; pure."""

from __future__ import annotations

import math
from collections.abc import Sequence

from keda_ray_scaler.packing.limits import Limits
from keda_ray_scaler.packing.shapes import (
    UNBOUNDED,
    GroupSpec,
    Need,
    Vec,
    fit_count,
    label_of,
    minus,
    size,
)


class NewPods:
    """Pods planned but not yet existing: open classes ``(group index, free) -> count``.

    Small and cheap to copy, so the packer can try a choice and roll it back. Shapes with a
    label id go only on pods of groups that admit it (:meth:`GroupSpec.takes`); how many went
    on each group's pods is tallied in :attr:`placed`.
    """

    __slots__ = (
        "avoidable",
        "biggest",
        "count",
        "groups",
        "limits",
        "open",
        "placed",
        "rank",
        "spare",
        "width",
    )

    def __init__(self, groups: Sequence[GroupSpec], limits: Limits) -> None:
        self.groups = groups
        self.limits = limits  # what may still be opened; every pod opened is taken from it
        self.count = [0] * len(groups)  # new pods per group so far
        self.width = len(groups[0].capacity) if groups else 0  # a pod vector's entries
        #: (label id, group index) -> bundles with that label id placed on the group's new pods
        self.placed: dict[tuple[int, int], int] = {}
        self.open: dict[tuple[int, Vec], int] = {}
        #: GPU pods opened for demand asking no GPU that a non-GPU group could hold (Ray avoids)
        self.avoidable = 0
        #: best-fit order of open classes; a pure function of the key, so copies share it
        self.rank: dict[tuple[int, Vec], tuple[float, float, tuple[int, Vec]]] = {}
        #: a free vector's share of the largest pod (:meth:`unused`); shared by copies alike
        self.spare: dict[Vec, float] = {}
        #: the largest pod of any group, per resource (which need a class most likely fails);
        #: infinite where only the capacity has an amount (an admission class), so it weighs
        #: nothing in shares
        self.biggest = tuple(
            max(s) or (math.inf if max(c) else 1)
            for s, c in zip(
                zip(*(g.shares for g in groups), strict=True),
                zip(*(g.capacity for g in groups), strict=True),
                strict=True,
            )
        )

    def copy(self) -> NewPods:
        """An independent copy (the groups, rank, spare and biggest, pure functions of the
        groups, are shared)."""
        other = NewPods.__new__(NewPods)
        other.groups, other.rank, other.biggest = self.groups, self.rank, self.biggest
        other.spare, other.width = self.spare, self.width
        other.placed = dict(self.placed)
        other.limits = self.limits.copy()
        other.count = list(self.count)
        other.avoidable = self.avoidable
        other.open = dict(self.open)
        return other

    def blank(self) -> NewPods:
        """A copy whose planned pods are all wholly free (request_resources counts totals)."""
        other = self.copy()
        other.open = {
            (g, spec.capacity): n
            for g, (spec, n) in enumerate(zip(self.groups, self.count, strict=True))
            if n
        }
        return other

    def grown(self, other: NewPods) -> NewPods:
        """This plan with the pods ``other`` added beyond it, wholly free, and its limits."""
        out = self.copy()
        out.limits = other.limits.copy()
        out.avoidable = other.avoidable
        for g, spec in enumerate(self.groups):
            added = other.count[g] - self.count[g]
            if added > 0:
                out.count[g] += added
                key = (g, spec.capacity)
                out.open[key] = out.open.get(key, 0) + added
        return out

    def unused(self) -> float:
        """Free space of the new pods, as shares of the largest pod of any group, summed."""
        spare, total = self.spare, 0.0
        for (_, free), n in self.open.items():
            share = spare.get(free)
            if share is None:
                big = self.biggest  # infinite on an admission class: it weighs nothing
                share = spare[free] = sum(f / b for f, b in zip(free, big, strict=True) if f)
            total += n * share
        return total

    def cost(self) -> float:
        """Total price of the new pods."""
        return sum(n * g.cost for n, g in zip(self.count, self.groups, strict=True))

    def wasted(self, gpu: int) -> int:
        """GPU pods opened for demand a non-GPU group could hold that still hold no GPU demand.

        A pod opened for such demand that later received GPU demand (a placement group or a
        GPU task placed after it) was needed anyway and is not counted.
        """
        if gpu < 0 or not self.avoidable:
            return 0
        untouched = sum(
            n
            for (g, free), n in self.open.items()
            if self.groups[g].capacity[gpu] and free[gpu] == self.groups[g].capacity[gpu]
        )
        return min(self.avoidable, untouched)

    def paced(self, pace: Sequence[int] | None) -> None:
        """Open pods from now on under the rate limit ``pace`` (``None``: lift it)."""
        self.limits = self.limits.paced(pace)

    def best_fit_classes(self, order: Sequence[float]) -> list[tuple[tuple[int, Vec], int]]:
        """Open classes and their pod counts, GPU groups last, then least free space first."""
        return [
            (key, self.open[key])
            for key in sorted(
                self.open, key=lambda k: (order[k[0]], size(k[1], self.groups[k[0]]), k)
            )
        ]

    def take_one(self, key: tuple[int, Vec], shape: Vec) -> tuple[int, Vec]:
        """One copy of ``shape`` on one pod of open class ``key``; returns the pod's new class."""
        n = self.open.pop(key)
        if n > 1:
            self.open[key] = n - 1
        dest = (key[0], minus(key[1], shape, 1))
        self.open[dest] = self.open.get(dest, 0) + 1
        self.tally(label_of(shape, self.width), key[0], 1)
        return dest

    def room(self, g: int) -> int:
        """New pods group ``g`` may still get."""
        return self.limits.room(g)

    def reserve(self, g: int, n: int) -> None:
        """Count ``n`` pods of group ``g`` that the caller places demand on itself."""
        if n > 0:
            self.count[g] += n
            self.limits.take(g, n)
        self.open.pop((g, self.groups[g].capacity), None)  # wholly free pods are reserved alike

    def add(self, g: int, n: int, free: Vec | None = None, avoidable: bool = False) -> None:
        """Open ``n`` pods of group ``g`` with ``free`` left (default: empty pods)."""
        if n <= 0:
            return
        if avoidable:
            self.avoidable += n
        key = (g, self.groups[g].capacity if free is None else free)
        self.open[key] = self.open.get(key, 0) + n
        self.count[g] += n
        self.limits.take(g, n)

    def fill(
        self, shape: Vec, need: Need, count: int, order: Sequence[float], most: int = UNBOUNDED
    ) -> int:
        """Put up to ``count`` copies (at most ``most`` per pod) on the free space of open pods
        (of groups admitting its label id); returns what is left."""
        if not self.open or count <= 0:
            return count
        rank, groups = self.rank, self.groups
        label = label_of(shape, self.width)
        fitting = []
        # the shape's largest need first: most classes fail there, without a call
        biggest = self.biggest
        i0, a0 = max(need, key=lambda t: t[1] / biggest[t[0]])
        for key in self.open:
            if key[1][i0] < a0 or (label and not groups[key[0]].takes(label)):
                continue
            per = fit_count(key[1], need)
            if per > most:
                per = most
            if per:
                r = rank.get(key)
                if r is None:
                    r = rank[key] = (order[key[0]], size(key[1], groups[key[0]]), key)
                fitting.append((r, per))
        fitting.sort()
        for (_, _, key), per in fitting:
            left = self._take(key, per, shape, count)
            if label:
                self.tally(label, key[0], count - left)
            count = left
            if count == 0:
                break
        return count

    def tally(self, label: int, g: int, n: int) -> None:
        """Count ``n`` bundles of label id ``label`` placed on group ``g``'s new pods."""
        if label and n:
            self.placed[(label, g)] = self.placed.get((label, g), 0) + n

    def open_for(
        self,
        g: int,
        shape: Vec,
        need: Need,
        count: int,
        whole_only: bool,
        avoidable: bool = False,
        most: int = UNBOUNDED,
    ) -> int:
        """Open pods of group ``g`` for ``count`` copies (only full pods if ``whole_only``), at
        most ``most`` copies per pod."""
        cap = self.groups[g].capacity
        per = min(fit_count(cap, need), most)
        full, rem = divmod(count, per)
        room = self.room(g)
        if full >= room:
            self.add(g, room, minus(cap, shape, per), avoidable)
            left = count - room * per
        else:
            self.add(g, full, minus(cap, shape, per), avoidable)
            left = rem
            if rem and not whole_only:
                self.add(g, 1, minus(cap, shape, rem), avoidable)
                left = 0
        if len(shape) > self.width:
            self.tally(label_of(shape, self.width), g, count - left)
        return left

    def _take(self, key: tuple[int, Vec], per: int, shape: Vec, count: int) -> int:
        pods = self.open.pop(key)
        full, rem = divmod(min(count, per * pods), per)
        g, free = key
        moved: list[tuple[tuple[int, Vec], int]] = [((g, minus(free, shape, per)), full)]
        left = pods - full
        if rem:
            moved.append(((g, minus(free, shape, rem)), 1))
            left -= 1
        if left:
            moved.append((key, left))
        for k, n in moved:
            if n:
                self.open[k] = self.open.get(k, 0) + n
        return count - full * per - rem
