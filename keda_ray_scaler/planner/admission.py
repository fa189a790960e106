"""Label selectors as resource dimensions: which pods may hold which demand; pure.

The packer knows only resources, so a demand's label selectors become one: a *label dimension*
per selector list (and fallback tier). A pod whose labels admit the demand has
:data:`LABEL_UNITS` of it, more copies than any pod could hold of anything; any other pod has
none; each bundle of the demand asks 1. Fitting, packing, group choice and the search then go on
unchanged. Demand without selectors has no dimension: an input without any plans exactly as
before. Shares, scores and free space leave these dimensions out
(:attr:`~keda_ray_scaler.packing.shapes.GroupSpec.shares`).

Who admits what, as Ray 2.60's v2 scheduler (``autoscaler/v2/scheduler.py``:
``_try_schedule_one`` admits a node satisfying any selector, ``_compute_score`` ranks the first
selector satisfied first):

- a group's pods have its labels and Ray's ``ray.io/node-group`` (the group's name, which Ray
  sets from ``RAY_NODE_TYPE_NAME``); an existing pod takes demand when its labels satisfy any of
  its selectors (a pod that is no Ray node yet, or whose Ray reports no labels, has its
  group's);
- new pods come *tier by tier*: a tier is a selector that some group satisfies, in the list's
  order, and admits the groups satisfying it or an earlier one. What one tier's groups cannot
  take (maxReplicas, maxWorkers, a back-off) falls to the next (:func:`place_tiers`);
- placement-group bundles (Ray has no fallback for them) admit the groups satisfying any of
  their selectors; a STRICT_PACK group's one combined bundle, a node satisfying every bundle's
  (:func:`all_of`);
- a list no group satisfies admits existing pods only: no new pod, and what they cannot hold is
  unplaceable (``no_group_matches_selector``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Final

from keda_ray_scaler.labels import (
    MAX_SELECTORS,
    NODE_GROUP_LABEL,
    Labels,
    LabelSelector,
    Selectors,
    admits,
    canonical,
)
from keda_ray_scaler.model import PlacementGroup, PlanningInput, Strategy, WorkerGroup
from keda_ray_scaler.packing.packer import Packer
from keda_ray_scaler.packing.shapes import Vec

#: What a pod has of a label dimension that admits it: no count of copies reaches it.
LABEL_UNITS: Final = 1 << 61


def all_of(lists: Sequence[Selectors]) -> Selectors:
    """One node satisfying every list (a STRICT_PACK group's bundles on one node): each
    combination of one selector per list, its constraints joined, in fallback order; at most
    MAX_SELECTORS combinations are kept (Ray places placement groups by their first)."""
    given = [sels for sels in lists if sels]
    if not given:
        return ()
    combos = itertools.islice(itertools.product(*given), MAX_SELECTORS)
    return canonical(
        LabelSelector(tuple(sorted({c for sel in combo for c in sel.constraints})))
        for combo in combos
    )


def gang_items(pg: PlacementGroup) -> list[tuple[Selectors, bool]]:
    """The selectors a placement group is placed with, per shape of
    :func:`~keda_ray_scaler.planner.context.gang_shapes` (``False``: no fallback tiers)."""
    kept = [pg.bundle_selectors(i) for i, b in enumerate(pg.bundles) if b]
    if pg.strategy is Strategy.STRICT_PACK:
        return [(all_of(kept), False)]
    return [(sels, False) for sels in kept]


class Admission:
    """The label dimensions of one planning input, numbered from 0 (the context places them
    after the resources): their owners, and which groups and pods each admits."""

    def __init__(self, inp: PlanningInput) -> None:
        groups = inp.cluster.worker_groups
        #: per group: its pods' labels (its own, and Ray's ``ray.io/node-group``)
        self.group_labels = tuple(_pod_labels(g) for g in groups)
        #: per dimension: the selectors it stands for
        self.owners: list[Selectors] = []
        #: per dimension: which groups it admits
        self.admitted: list[tuple[bool, ...]] = []
        #: (selectors, tiered) -> its dimensions, one per tier in fallback order
        self.domains: dict[tuple[Selectors, bool], tuple[int, ...]] = {}
        d = inp.demand
        for b in (*d.bundles, *d.constraints):
            if b.selectors:
                self._add(b.selectors, True)
        for pg in d.placement_groups:
            for sels, tiered in gang_items(pg):
                if sels:
                    self._add(sels, tiered)
        self.keys = tuple(
            sorted({c.key for s in self.owners for sel in s for c in sel.constraints})
        )
        self._node_memo: dict[tuple[str | None, ...], tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self.owners)

    def _add(self, sels: Selectors, tiered: bool) -> None:
        match = [tuple(s.matches(labels) for labels in self.group_labels) for s in sels]
        tiers = [i for i, m in enumerate(match) if any(m)]
        key = (sels, tiered and len(tiers) > 1)
        if key in self.domains:
            return
        cuts = tiers if key[1] else [len(sels) - 1]
        dims = []
        for cut in cuts:
            dims.append(len(self.owners))
            self.owners.append(sels)
            self.admitted.append(
                tuple(any(m[g] for m in match[: cut + 1]) for g in range(len(self.group_labels)))
            )
        self.domains[key] = tuple(dims)

    def dims(self, sels: Selectors, tiered: bool) -> tuple[int, ...]:
        """The dimensions of demand with ``sels``, one per tier (none without selectors)."""
        if not sels:
            return ()
        found = self.domains.get((sels, tiered))
        return found if found is not None else self.domains[(sels, False)]

    def group_dims(self, g: int) -> tuple[int, ...]:
        """The dimensions that admit group ``g``'s new pods."""
        return tuple(d for d, adm in enumerate(self.admitted) if adm[g])

    def node_dims(self, labels: Mapping[str, str]) -> tuple[int, ...]:
        """The dimensions that admit a pod with ``labels`` (memoised on the keys asked about)."""
        if not self.owners:
            return ()
        seen = tuple(labels.get(k) for k in self.keys)
        found = self._node_memo.get(seen)
        if found is None:
            view = Labels((k, v) for k, v in zip(self.keys, seen, strict=True) if v is not None)
            found = tuple(d for d, sels in enumerate(self.owners) if admits(sels, view))
            self._node_memo[seen] = found
        return found

    def owner(self, dim: int) -> Selectors:
        """The selectors dimension ``dim`` stands for."""
        return self.owners[dim]


def _pod_labels(group: WorkerGroup) -> Labels:
    return Labels({**group.labels, NODE_GROUP_LABEL: group.name})


def place_tiers(
    packer: Packer,
    demand: Sequence[tuple[Vec, int]],
    next_tier: Mapping[Vec, Vec],
    most: Mapping[Vec, int] | None = None,
) -> tuple[list[tuple[Vec, int]], dict[Vec, int]]:
    """Place ``demand``; what one tier leaves falls to its selectors' next tier.

    Returns what is left, each at the last tier it reached, and how many bundles moved on from
    each tier. With ``most``, at most that many move on from each (the rest is left at its
    tier): a rate-limited run defers what an unlimited one placed, never moves it elsewhere.
    """
    if not next_tier:
        return packer.place(demand), {}
    left: list[tuple[Vec, int]] = []
    moved: dict[Vec, int] = {}
    queue = list(demand)
    while queue:
        onward: list[tuple[Vec, int]] = []
        for vec, count in packer.place(queue):
            to = next_tier.get(vec)
            go = 0 if to is None else count if most is None else min(count, most.get(vec, 0))
            if go and to is not None:
                moved[vec] = moved.get(vec, 0) + go
                onward.append((to, go))
            if count > go:
                left.append((vec, count - go))
        queue = onward
    return left, moved
