"""Where demand with label selectors went, and by which selector; pure.

The packer knows a demand's selectors only as its label id, and a pod's labels only as its
admission class (:mod:`.admission`): class 0 is a group's new pods (and a consolidation's
stand-ins for them), each other class one label view of its existing pods. So what a plan put
where is a count per ``(label id, group, admission class)`` of the bundles placed (a
:data:`Tally`), turned here into :class:`~keda_ray_scaler.decisions.Placed` lines: the demand's
selector list, its shapes, the group, new or existing pods, and the selector of the list the
pods' labels satisfy first (Ray 2.60's ``_compute_score`` ranks a node by it): the list's own
first, or a fallback. request_resources() bundles are packed apart
(:func:`.rules.constraints`) and are not counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from keda_ray_scaler.decisions import Placed
from keda_ray_scaler.labels import Labels, LabelSelector, Selectors, selectors_text
from keda_ray_scaler.model import Resources
from keda_ray_scaler.packing.shapes import label_of
from keda_ray_scaler.planner.context import Context

#: Bundles the packer placed, per ``(label id, group index, admission class)``.
Tally = Mapping[tuple[int, int, int], int]

_Key = tuple[int, bool, Selectors, LabelSelector]


def tally_of(
    new: Mapping[tuple[int, int], int], existing: Tally
) -> dict[tuple[int, int, int], int]:
    """One :data:`Tally` of the packer's two: new pods' ``(label id, group)`` counts (class 0)
    and existing pods' ``(label id, group, class)`` ones (a stand-in for a new pod is class 0
    too)."""
    out = dict(existing)
    for (label, g), n in new.items():
        out[(label, g, 0)] = out.get((label, g, 0), 0) + n
    return out


def placements(ctx: Context, tally: Tally) -> tuple[Placed, ...]:
    """Every selector list's bundles per group (new pods, then existing ones), in group
    order, then by the lists' text; none without label selectors."""
    if not tally:
        return ()
    views = [_class_labels(ctx, g) for g in range(len(ctx.groups))]
    merged: dict[_Key, int] = defaultdict(int)
    for (label, g, cls), n in tally.items():
        sels = ctx.adm.owner(label)
        if n and sels:
            labels = views[g].get(cls, ctx.adm.group_labels[g])
            merged[(g, cls != 0, sels, _first_satisfied(sels, labels))] += n
    shapes = _shapes(ctx)
    return tuple(
        Placed(ctx.groups[g].name, n, sels, by, shapes.get(sels, ()), existing)
        for (g, existing, sels, by), n in sorted(merged.items(), key=_order)
    )


def _class_labels(ctx: Context, g: int) -> dict[int, Mapping[str, str]]:
    """Per admission class of group ``g``'s pods, their labels on the keys selectors name
    (class 0: the group's own)."""
    keys = ctx.adm.keys
    out: dict[int, Mapping[str, str]] = {0: ctx.adm.group_labels[g]}
    for view, cls in ctx.adm.views[g].items():
        out[cls] = Labels((k, v) for k, v in zip(keys, view, strict=True) if v is not None)
    return out


def _first_satisfied(sels: Selectors, labels: Mapping[str, str]) -> LabelSelector:
    """The first selector of ``sels`` that ``labels`` satisfy (pods holding the demand
    satisfy one)."""
    return next((s for s in sels if s.matches(labels)), LabelSelector())


def _shapes(ctx: Context) -> dict[Selectors, tuple[Resources, ...]]:
    """The demand's shapes per selector list (tasks and placement-group bundles)."""
    entries = ctx.index.entries
    vecs = [v for v, _ in ctx.tasks] + [v for pg in ctx.gangs for v in ctx.gang_vecs[pg]]
    found: dict[Selectors, set[Resources]] = defaultdict(set)
    for vec in vecs:
        label = label_of(vec, entries)
        if label:
            found[ctx.adm.owner(label)].add(ctx.index.res(vec))
    return {sels: tuple(sorted(res)) for sels, res in found.items()}


def _order(item: tuple[_Key, int]) -> tuple[int, bool, str, str]:
    (g, existing, sels, by), _ = item
    return (g, existing, selectors_text(sels), str(by))
