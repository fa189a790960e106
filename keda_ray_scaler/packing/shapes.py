"""Shapes, pod capacities and the injected strategies of the packer; pure.

A shape is a resource vector over the packer's resource index, in Ray fixed-point units. The
strategies are small protocols: a :class:`ShapeOrderer` (which shape first) and a
:class:`GroupScorer` (which worker group a new pod should come from).

Labels (the planner's :mod:`~keda_ray_scaler.planner.admission`): in an input with label
selectors every pod vector ends in its *admission class* (an index into its group's
:attr:`GroupSpec.admits`; 0 for the group's new pods), and a shape asking for labels is one
entry longer than a pod vector: that entry is its *label id*, which only pods whose class
admits it may hold (:func:`label_of`). The class entry of a shape is 0, so placing a shape
never changes a pod's class, and the label id is beyond every pod vector, so it is never
subtracted (:func:`minus` stops at the pod vector's end). Without labels, vectors are resources
only and nothing is checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

#: A resource vector over the packer's resource index, in Ray fixed-point units.
Vec = tuple[int, ...]
#: The non-zero entries of a shape: ``((resource index, amount), ...)``.
Need = tuple[tuple[int, int], ...]

UNBOUNDED = 1 << 62


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The packer's view of one worker group: one pod's capacity and price, by index.

    ``capacity`` ends in the admission class entry when the input has labels (0: new pods);
    ``shares`` is the capacity with 0 there, what utilisation, free space and scores are
    measured against. ``admits``: per admission class of the group's pods, the label ids they
    admit (none: no labelled shape). ``priority``: among groups that can take a shape (in the
    scorer's same tier: GPU avoidance ranks first), only those of the highest priority are
    considered for new pods.
    """

    name: str
    capacity: Vec
    cost: float
    priority: int = 0
    shares: Vec = ()
    admits: tuple[frozenset[int], ...] = ()

    def __post_init__(self) -> None:
        if not self.shares:
            object.__setattr__(self, "shares", self.capacity)

    def takes(self, label: int, cls: int = 0) -> bool:
        """Whether this group's pods of admission class ``cls`` may hold label id ``label``."""
        return not label or (cls < len(self.admits) and label in self.admits[cls])


def label_of(shape: Vec, width: int) -> int:
    """The label id of ``shape`` over pod vectors of ``width`` entries; 0: none."""
    return shape[width] if len(shape) > width else 0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A worker group considered for new pods: ``copies`` of ``shape`` would go on each pod;
    ``capacity`` is the group's :attr:`GroupSpec.shares` (no admission class)."""

    group: str
    capacity: Vec
    cost: float
    shape: Vec
    copies: int
    gpu_index: int  # index of ``GPU`` in the vectors, -1 when no group has GPUs


class GroupScorer(Protocol):
    """Ranks a worker group for new pods: ``(tier, min_utilisation, mean_utilisation)``.

    A lower ``tier`` always wins (before cost); among equal tiers the cheaper plan wins, and
    equal cost is broken by higher utilisation, then by group name.
    """

    def __call__(self, candidate: Candidate) -> tuple[int, float, float]: ...


class ShapeOrderer(Protocol):
    """Orders distinct shapes for first-fit decreasing: the first is placed first."""

    def __call__(self, shapes: Sequence[Vec], groups: Sequence[GroupSpec]) -> list[Vec]: ...


def ray_scorer(candidate: Candidate) -> tuple[int, float, float]:
    """Ray autoscaler v2's utilisation score (``SchedulingNode._compute_score``), adapted.

    Tier 1 (avoided) when the pod has GPUs and the shape asks none (Ray's
    ``AUTOSCALER_CONSERVE_GPU_NODES``); then the minimum and the mean, over the pod's
    resources, of the share the ``copies`` bundles would use.
    """
    cap, shape, copies, gpu = (
        candidate.capacity,
        candidate.shape,
        candidate.copies,
        candidate.gpu_index,
    )
    tier = 1 if gpu >= 0 and cap[gpu] > 0 and shape[gpu] == 0 else 0
    utils = [shape[i] * copies / c for i, c in enumerate(cap) if c > 0]
    if not utils:
        return tier, 0.0, 0.0
    return tier, min(utils), sum(utils) / len(utils)


def scarcity_rank(
    shape: Vec, groups: Sequence[GroupSpec], biggest: Sequence[int] | None = None
) -> tuple[float, ...]:
    """Sort key of a shape: scarcest first, then largest.

    Scarcity is how many groups have every resource the shape names and admit its label (a
    GPU, custom-resource or labelled shape goes before a generic one, so the pods it opens are
    known before generic demand fills their leftovers); size is the dominant share of the
    largest pod of any group (``biggest``, per pod-vector entry, when the caller has it).
    """
    width = len(groups[0].capacity) if groups else len(shape)
    big = biggest if biggest is not None else _biggest(groups, width)
    label = label_of(shape, width)
    need = shape[:width]
    kinds = sum(
        1 for g in groups if g.takes(label) and all(g.capacity[i] for i, a in enumerate(need) if a)
    )
    shares = [a / b if b else float(a) for a, b in zip(need, big, strict=True)]
    return (float(kinds), -max(shares, default=0.0), -sum(shares), *map(float, shape))


def _biggest(groups: Sequence[GroupSpec], width: int) -> list[int]:
    """The largest pod of any group, per pod-vector entry."""
    return [max((g.capacity[i] for g in groups), default=0) for i in range(width)]


def scarcity_orderer(shapes: Sequence[Vec], groups: Sequence[GroupSpec]) -> list[Vec]:
    """Scarcest first, then largest dominant share (see :func:`scarcity_rank`)."""
    big = _biggest(groups, len(groups[0].capacity)) if groups else None
    return sorted(shapes, key=lambda s: scarcity_rank(s, groups, big))


def smallest_first_orderer(shapes: Sequence[Vec], groups: Sequence[GroupSpec]) -> list[Vec]:
    """Smallest dominant share first: holds the most bundles when maxReplicas or maxWorkers bind."""

    big = _biggest(groups, len(groups[0].capacity)) if groups else None

    def key(shape: Vec) -> tuple[float, float, Vec]:
        _, neg_dominant, neg_total, *_ = scarcity_rank(shape, groups, big)
        return (-neg_dominant, -neg_total, shape)

    return sorted(shapes, key=key)


@dataclass(frozen=True, slots=True)
class ResourceFirstOrderer:
    """Largest share of one resource first (of the largest pod of any group), then scarcest.

    An alternative first-fit-decreasing order for the planner's portfolio: when one resource
    (say memory) is the tight one, its big consumers go first.
    """

    index: int

    def __call__(self, shapes: Sequence[Vec], groups: Sequence[GroupSpec]) -> list[Vec]:
        i = self.index
        biggest = max((g.capacity[i] for g in groups), default=0) or 1
        big = _biggest(groups, len(groups[0].capacity)) if groups else None
        return sorted(shapes, key=lambda s: (-s[i] / biggest, scarcity_rank(s, groups, big)))


def dominant_share_orderer(shapes: Sequence[Vec], groups: Sequence[GroupSpec]) -> list[Vec]:
    """Largest dominant share first (share of the largest pod of any group), then by vector."""
    big = _biggest(groups, len(groups[0].capacity)) if groups else None
    return sorted(shapes, key=lambda s: scarcity_rank(s, groups, big)[1:])


def need_of(shape: Vec, width: int | None = None) -> Need:
    """The non-zero entries of ``shape``; with ``width`` (a pod vector's), those within it:
    a label id is no need, pods admit it or not (:meth:`GroupSpec.takes`)."""
    return tuple((i, a) for i, a in enumerate(shape[:width]) if a)


def fit_count(free: Vec, need: Need) -> int:
    """How many copies of a shape fit in ``free``: min over resources of floor(free/need)."""
    best = UNBOUNDED
    for i, a in need:
        q = free[i] // a
        if q < best:
            if q == 0:
                return 0
            best = q
    return best


def minus(free: Vec, shape: Vec, times: int) -> Vec:
    """``free`` less ``times`` copies of ``shape``; a shape's label id, beyond the pod vector,
    is not subtracted (the module docstring)."""
    return tuple(f - s * times for f, s in zip(free, shape, strict=False))  # a label id: longer


def size(free: Vec, group: GroupSpec) -> float:
    """Free space as a sum of shares of the group's pod (best fit tries small first)."""
    return sum(f / c for f, c in zip(free, group.shares, strict=True) if c)


@dataclass(frozen=True, slots=True)
class Strategies:
    """The injected strategies and knobs of one packing run."""

    scorer: GroupScorer = ray_scorer
    orderer: ShapeOrderer = scarcity_orderer
    lookahead: int = 8  # queue entries a group choice looks ahead at (0: greedy)
