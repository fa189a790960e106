"""What the packer derives from a shape alone, remembered for every fork of it; pure."""

from __future__ import annotations

from collections.abc import Sequence

from keda_ray_scaler.packing.shapes import GroupSpec, Need, Vec, fit_count, label_of, need_of

#: The groups whose pods can hold a shape (labels and size, room aside), and whether a non-GPU
#: one is among them.
Holding = tuple[tuple[int, ...], bool]


class Memo:
    """Per shape, its :data:`Holding`; per (group, shape, copies), the scorer's verdict
    (strategies are pure). Pure functions of their keys and the packer's fixed groups, so a
    fork shares them: :meth:`copy` is the memo itself."""

    __slots__ = ("gpu_groups", "groups", "holders", "scores", "width")

    def __init__(self, groups: Sequence[GroupSpec], gpu_groups: Sequence[bool]) -> None:
        self.groups, self.gpu_groups = groups, gpu_groups
        self.width = len(groups[0].capacity) if groups else 0  # a pod vector's entries
        self.holders: dict[Vec, Holding] = {}
        self.scores: dict[tuple[int, Vec, int], tuple[int, float, float]] = {}

    def copy(self) -> Memo:
        """This memo itself (see the class docstring)."""
        return self

    def holding(self, shape: Vec) -> Holding:
        """The groups whose pods can hold ``shape``, and whether a non-GPU one is among them."""
        known = self.holders.get(shape)
        if known is None:
            need, label = need_of(shape, self.width), label_of(shape, self.width)
            found = tuple(
                g
                for g, grp in enumerate(self.groups)
                if grp.takes(label) and fit_count(grp.capacity, need) > 0
            )
            known = self.holders[shape] = (found, any(not self.gpu_groups[g] for g in found))
        return known

    def linked(
        self, shape: Vec, ahead: Sequence[tuple[Vec, Need, int]]
    ) -> Sequence[tuple[Vec, Need, int]]:
        """The shapes of ``ahead`` linked to ``shape`` through groups both can use, directly
        or through other such shapes (one zone's demand is not linked to another zone's):
        only their completion can differ between the packer's options for ``shape``."""
        groups = set(self.holding(shape)[0])
        linked: set[Vec] = set()
        grown = True
        while grown:
            grown = False
            for s, _, _ in ahead:
                held = self.holding(s)[0]
                if s not in linked and not groups.isdisjoint(held):
                    linked.add(s)
                    groups.update(held)
                    grown = True
        return ahead if len(linked) == len(ahead) else [a for a in ahead if a[0] in linked]
