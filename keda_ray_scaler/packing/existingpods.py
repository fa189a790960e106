"""Existing pods as classes of identical free space, taking demand best fit first; pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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

#: A class of interchangeable existing pods: ``(group index, total, free)``.
ClassKey = tuple[int, Vec, Vec]


@dataclass(slots=True)
class PodClass:
    """A class of existing pods: same group, same total, same free vector."""

    count: int
    pods: list[str]  # in the order they should receive demand


class ExistingPods:
    """Existing pods: classes ``(group index, total, free) -> PodClass``, changed only here.

    The counterpart of :class:`~keda_ray_scaler.packing.newpods.NewPods` for pods that already
    run: placing ``k`` copies on a class is arithmetic, and :meth:`copy` is what the packer's
    ``fork`` calls to try a choice and roll it back. A shape with a label id goes only on pods
    whose admission class (the last entry of their vectors) admits it; how many went on each
    class is tallied in :attr:`placed`.
    """

    __slots__ = ("best_fit", "biggest", "classes", "groups", "order", "placed", "rank", "width")

    def __init__(
        self,
        groups: tuple[GroupSpec, ...],
        order: tuple[float, ...],
        pods: Iterable[tuple[int, Vec, Vec, str]],
        best_fit: bool = False,
    ) -> None:
        """``pods``: ``(group index, total, free, pod)`` in the order pods take demand;
        ``order``: each group's rank (GPU groups last); ``best_fit``: see :meth:`in_order`."""
        self.groups = groups
        self.order = order
        self.best_fit = best_fit
        self.width = len(groups[0].capacity) if groups else 0  # a pod vector's entries
        #: the largest pod of any group, per resource (best-fit order measures against it)
        self.biggest = tuple(max(gr.shares[i] for gr in groups) for i in range(self.width))
        #: (label id, group index, admission class) -> bundles with that label id placed on
        #: the group's pods of that class
        self.placed: dict[tuple[int, int, int], int] = {}
        #: each class's place in :meth:`in_order`, a pure function of the key (copies share it)
        self.rank: dict[ClassKey, tuple[bool, float, float, str, Vec]] = {}
        self.classes: dict[ClassKey, PodClass] = {}
        for g, total, free, pod in pods:
            cls = self.classes.get((g, total, free))
            if cls is None:
                self.classes[(g, total, free)] = PodClass(1, [pod])
            else:
                cls.count += 1
                cls.pods.append(pod)

    def copy(self) -> ExistingPods:
        """An independent copy (the groups, order and biggest, immutable, are shared)."""
        other = ExistingPods.__new__(ExistingPods)
        other.groups, other.order, other.best_fit = self.groups, self.order, self.best_fit
        other.width, other.biggest, other.rank = self.width, self.biggest, self.rank
        other.placed = dict(self.placed)
        other.classes = {k: PodClass(v.count, list(v.pods)) for k, v in self.classes.items()}
        return other

    def count(self, key: ClassKey) -> int:
        """Pods in class ``key``."""
        return self.classes[key].count

    def busy_pods(self) -> set[str]:
        """Pods with anything used: in use before, or given demand here."""
        return {p for (_, total, free), c in self.classes.items() if free != total for p in c.pods}

    def untouched(self, resource: int) -> list[str]:
        """Pods that have some of ``resource`` (an index) and all of it still free."""
        return [
            p
            for (_, total, free), cls in self.classes.items()
            if total[resource] and free[resource] == total[resource]
            for p in cls.pods
        ]

    def in_order(self) -> list[ClassKey]:
        """Classes in the order they take demand: partly used before wholly free (so idle pods
        stay removable), non-GPU before GPU, least free space first; with ``best_fit``, least
        free space first, wholly free or not."""
        order, groups, biggest, rank = self.order, self.groups, self.biggest, self.rank

        def key(k: ClassKey) -> tuple[bool, float, float, str, Vec]:
            known = rank.get(k)
            if known is not None:
                return known
            g, total, free = k
            if self.best_fit:
                share = sum(f / b for f, b in zip(free, biggest, strict=True) if b)
                known = (False, order[g], share, groups[g].name, free)
            else:
                known = (free == total, order[g], size(free, groups[g]), groups[g].name, free)
            rank[k] = known
            return known

        return sorted(self.classes, key=key)

    def admits(self, key: ClassKey, label: int) -> bool:
        """Whether the pods of class ``key`` may hold label id ``label`` (0: no label)."""
        return not label or self.groups[key[0]].takes(label, key[2][-1])

    def place(self, shape: Vec, need: Need, count: int, most: int = UNBOUNDED) -> int:
        """Put up to ``count`` copies (at most ``most`` per pod) on the classes in :meth:`keys`
        order (those admitting its label id); returns what is left."""
        label = label_of(shape, self.width)
        for key in self.in_order():
            if label and not self.admits(key, label):
                continue
            per = min(fit_count(key[2], need), most)
            if per == 0:
                continue
            cls = self.classes.pop(key)
            full, rem = divmod(min(count, per * cls.count), per)
            g, total, free = key
            self._add((g, total, minus(free, shape, per)), full, cls.pods[:full])
            if rem:
                self._add((g, total, minus(free, shape, rem)), 1, cls.pods[full : full + 1])
            taken = full + (1 if rem else 0)
            if cls.count > taken:
                self._add(key, cls.count - taken, cls.pods[taken:])
            if label:
                self._tally(label, key, full * per + rem)
            count -= full * per + rem
            if count == 0:
                break
        return count

    def take_one(self, key: ClassKey, shape: Vec) -> ClassKey:
        """One copy of ``shape`` on the first pod of class ``key``; returns the pod's new class.

        The pod moves to the end of its new class, so the next pod taken from ``key`` is a
        different one (what a STRICT_SPREAD gang relies on).
        """
        cls = self.classes.pop(key)
        if cls.count > 1:
            self.classes[key] = PodClass(cls.count - 1, cls.pods[1:])
        g, total, free = key
        dest = (g, total, minus(free, shape, 1))
        self._add(dest, 1, cls.pods[:1])
        self._tally(label_of(shape, self.width), key, 1)
        return dest

    def _tally(self, label: int, key: ClassKey, n: int) -> None:
        if label and n:
            at = (label, key[0], key[2][-1])
            self.placed[at] = self.placed.get(at, 0) + n

    def _add(self, key: ClassKey, n: int, pods: list[str]) -> None:
        """``n`` pods (``pods``, a list this class now owns) into class ``key``."""
        if n <= 0:
            return
        cls = self.classes.get(key)
        if cls is None:
            self.classes[key] = PodClass(n, pods)
        else:
            self.classes[key] = PodClass(cls.count + n, cls.pods + pods)
