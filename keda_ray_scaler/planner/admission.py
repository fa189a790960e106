"""Label selectors as label ids and admission classes: which pods may hold which demand; pure.

The packer knows resources, and one number more per shape (:mod:`~keda_ray_scaler.packing.
shapes`): a demand's selector list (and fallback tier) becomes a *label id*, the entry after
its resources, and every pod vector ends in its *admission class*, an index into its group's
:attr:`~keda_ray_scaler.packing.shapes.GroupSpec.admits`: the label ids those pods admit. Class
0 is the group's new pods; each distinct label view of its existing pods (their labels on the
keys any selector names) is a class of its own. So a vector grows by two entries at most,
whatever the number of selectors, and placing demand never changes a pod's class.

An input without selectors has no label ids and no class entry: it plans exactly as before, at
the same cost. A list no group and no pod tells apart (its first tier some group satisfies
admits every group, and every existing pod satisfies one of its selectors) gets no label id
either: it plans as demand without selectors. Equal lists share their id.

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

from keda_ray_scaler.labels import (
    MAX_SELECTORS,
    NODE_GROUP_LABEL,
    Labels,
    LabelSelector,
    Selectors,
    admits,
    canonical,
)
from keda_ray_scaler.model import PlacementGroup, PlanningInput, Strategy, WorkerGroup, WorkerNode
from keda_ray_scaler.packing.packer import Packer
from keda_ray_scaler.packing.shapes import Vec

#: A pod's labels on the keys some selector names (``None``: the key is absent).
View = tuple[str | None, ...]


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
    """The label ids of one planning input (from 1), their owners, and the admission classes
    of each group's pods (see the module docstring)."""

    def __init__(self, inp: PlanningInput) -> None:
        groups = inp.cluster.worker_groups
        #: per group: its pods' labels (its own, and Ray's ``ray.io/node-group``)
        self.group_labels = tuple(_pod_labels(g) for g in groups)
        d = inp.demand
        lists = [(b.selectors, True) for b in (*d.bundles, *d.constraints) if b.selectors]
        lists += [item for pg in d.placement_groups for item in gang_items(pg) if item[0]]
        self.keys = tuple(sorted({c.key for s, _ in lists for sel in s for c in sel.constraints}))
        gidx = {g.name: i for i, g in enumerate(groups)}
        #: per group: the label views of its existing pods, each an admission class from 1
        self.views: list[dict[View, int]] = [{} for _ in groups]
        #: (group, pod) -> the admission class of an existing pod of the input
        self._classes: dict[tuple[int, str], int] = {}
        for node in inp.nodes if lists else ():
            g = gidx.get(node.group)
            if g is not None:
                view = self.view(node.labels or self.group_labels[g])
                cls = self.views[g].setdefault(view, len(self.views[g]) + 1)
                self._classes[(g, node.pod)] = cls
        #: per label id - 1: the selectors it stands for
        self.owners: list[Selectors] = []
        #: per label id - 1: which groups' new pods it admits
        self.admitted: list[tuple[bool, ...]] = []
        #: (selectors, tiered) -> its label ids, one per tier in fallback order (none: no pod
        #: and no group tells it apart from demand without selectors)
        self.domains: dict[tuple[Selectors, bool], tuple[int, ...]] = {}
        self._labels: dict[View, Labels] = {}
        self._admits: dict[View, frozenset[int]] = {}
        #: per list: per selector, which groups' labels satisfy it (:meth:`_add`)
        self._match: dict[Selectors, list[tuple[bool, ...]]] = {}
        #: a label view -> a group whose own labels give it
        self._group_of = {
            self.view(labels): g for g, labels in reversed(list(enumerate(self.group_labels)))
        }
        for sels, tiered in lists:
            self._add(sels, tiered)

    def __len__(self) -> int:
        return len(self.owners)

    def view(self, labels: Mapping[str, str]) -> View:
        """``labels`` on the keys some selector names."""
        return tuple(labels.get(k) for k in self.keys)

    def _add(self, sels: Selectors, tiered: bool) -> None:
        match = self._match.get(sels)
        if match is None:
            match = self._match[sels] = [
                tuple(s.matches(labels) for labels in self.group_labels) for s in sels
            ]
        tiers = [i for i, m in enumerate(match) if any(m)]
        key = (sels, tiered and len(tiers) > 1)
        if key in self.domains or (sels, tiered) in self.domains:
            return
        cuts = tiers if key[1] else [len(sels) - 1]
        admitted = [
            tuple(any(m[g] for m in match[: cut + 1]) for g in range(len(self.group_labels)))
            for cut in cuts
        ]
        if all(admitted[0]) and all(self._view_admits(sels, v) for vs in self.views for v in vs):
            self.domains[(sels, tiered)] = ()  # tells nothing apart: no label id
            return
        ids = []
        for adm in admitted:
            self.owners.append(sels)
            self.admitted.append(adm)
            ids.append(len(self.owners))
        self.domains[key] = tuple(ids)

    def _view_admits(self, sels: Selectors, view: View) -> bool:
        labels = self._labels.get(view)
        if labels is None:
            pairs = zip(self.keys, view, strict=True)
            labels = self._labels[view] = Labels((k, v) for k, v in pairs if v is not None)
        return admits(sels, labels)

    def ids(self, sels: Selectors, tiered: bool) -> tuple[int, ...]:
        """The label ids of demand with ``sels``, one per tier (none: plans as unlabelled)."""
        if not sels:
            return ()
        found = self.domains.get((sels, tiered))
        return found if found is not None else self.domains[(sels, False)]

    def classes(self, g: int) -> tuple[frozenset[int], ...]:
        """Per admission class of group ``g``'s pods, the label ids they admit: class 0 its
        new pods (by tier), then its existing pods' label views (any selector)."""
        if not self.owners:
            return ()
        new = frozenset(i + 1 for i, adm in enumerate(self.admitted) if adm[g])
        return (new, *(self._view_ids(v) for v in self.views[g]))

    def _view_ids(self, view: View) -> frozenset[int]:
        """The label ids an existing pod with ``view`` admits: every tier of a list it
        satisfies one selector of."""
        found = self._admits.get(view)
        if found is None:
            g = self._group_of.get(view)  # a group's own view: its matches are known
            found = self._admits[view] = frozenset(
                i
                for (sels, _), ids in self.domains.items()
                if ids
                and (
                    self._view_admits(sels, view)
                    if g is None
                    else any(row[g] for row in self._match[sels])
                )
                for i in ids
            )
        return found

    def pod_class(self, g: int, node: WorkerNode) -> int:
        """The admission class of ``node``, an existing pod of group ``g``: by its labels (a
        pod without labels has its group's)."""
        known = self._classes.get((g, node.pod))
        if known is None:
            return self.views[g][self.view(node.labels or self.group_labels[g])]
        return known

    def owner(self, label: int) -> Selectors:
        """The selectors label id ``label`` stands for (none for 0)."""
        return self.owners[label - 1] if label else ()


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
