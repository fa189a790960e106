"""Bound the demand's cardinality: at most ``--max-shapes`` series, merged upward (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from keda_ray_scaler.labels import Selectors
from keda_ray_scaler.model import (
    Bundle,
    Demand,
    PlacementGroup,
    Resources,
    Strategy,
)

#: The most demand series the agent exports by default (``--max-shapes``): the scaler's
#: ``DataCaps.max_shapes`` is above it, with room.
DEFAULT_MAX_SHAPES: Final = 200


def merge_counts(pairs: Iterable[tuple[Resources, int]]) -> tuple[Bundle, ...]:
    """Bundles of equal shape summed (none with an empty shape or no count), sorted."""
    return merge_bundles(Bundle(r, n) for r, n in pairs)


def merge_bundles(bundles: Iterable[Bundle]) -> tuple[Bundle, ...]:
    """Bundles of equal shape and selectors summed (none with an empty shape or no count),
    sorted by shape, then selectors."""
    counts: dict[tuple[Resources, Selectors], int] = {}
    for b in bundles:
        if b.resources and b.count > 0:
            key = (b.resources, b.selectors)
            counts[key] = counts.get(key, 0) + b.count
    return tuple(Bundle(r, n, sels) for (r, sels), n in sorted(counts.items()))


def bound_shapes(demand: Demand, max_shapes: int) -> tuple[Demand, int]:
    """At most ``max_shapes`` demand series; returns the bounded demand and how many merged.

    A series is one task shape, one constraint shape or one placement-group bundle list. When
    there are too many, the kind with the most series gives up its smallest-count series first:
    they are merged into ONE series whose shape is their component-wise maximum and whose count
    is the sum of theirs, so every merged bundle is asked as at least as big as it was (never
    under-reporting). Merged placement groups become STRICT_SPREAD (the strategy needing the
    most pods) with the bundle-wise maximum of their lists, padded to the longest. Each kind
    keeps at least one series; ``max_shapes`` below 3 may therefore be exceeded. A series is
    one shape *and* one list of label selectors: the merged series keeps the selectors its
    members share, and none when they differ (its bundles may then be planned on a group their
    selectors would not take: the price of a bound, counted like every merge).
    """
    kinds: dict[str, int] = {
        "bundles": len(demand.bundles),
        "constraints": len(demand.constraints),
        "pgs": len(demand.placement_groups),
    }
    excess = sum(kinds.values()) - max_shapes
    if excess <= 0:
        return demand, 0
    cut: dict[str, int] = {}
    for kind in sorted(kinds, key=lambda k: (-kinds[k], k)):
        take = min(excess, max(kinds[kind] - 1, 0))
        cut[kind] = take
        excess -= take
    merged = sum(n + 1 for n in cut.values() if n > 0)
    return (
        Demand(
            bundles=_merge_smallest(demand.bundles, cut["bundles"]),
            placement_groups=_merge_smallest_pgs(demand.placement_groups, cut["pgs"]),
            constraints=_merge_smallest(demand.constraints, cut["constraints"]),
        ),
        merged,
    )


def _max_shape(shapes: Iterable[Resources]) -> Resources:
    top: dict[str, int] = {}
    for r in shapes:
        for k, v in r:
            top[k] = max(top.get(k, 0), v)
    return Resources.from_units(top)


def _merge_smallest(bundles: tuple[Bundle, ...], cut: int) -> tuple[Bundle, ...]:
    if cut <= 0:
        return bundles
    order = sorted(bundles, key=lambda b: (b.count, b.resources, b.selectors))
    small, keep = order[: cut + 1], order[cut + 1 :]
    shape = _max_shape(b.resources for b in small)
    joined = Bundle(shape, sum(b.count for b in small), _shared([b.selectors for b in small]))
    return merge_bundles([*keep, joined])


def _shared(lists: Sequence[Selectors]) -> Selectors:
    """The selectors every list is, or none when they differ."""
    return lists[0] if all(s == lists[0] for s in lists) else ()


def _merge_smallest_pgs(pgs: tuple[PlacementGroup, ...], cut: int) -> tuple[PlacementGroup, ...]:
    if cut <= 0:
        return pgs
    order = sorted(pgs, key=lambda p: (p.count, p.strategy, p.bundles, p.selectors))
    small, keep = order[: cut + 1], order[cut + 1 :]
    width = max(len(p.bundles) for p in small)
    bundles = tuple(
        _max_shape(p.bundles[i] for p in small if i < len(p.bundles)) for i in range(width)
    )
    sels = small[0].selectors if all(p.selectors == small[0].selectors for p in small) else ()
    joined = PlacementGroup(
        Strategy.STRICT_SPREAD,
        bundles,
        sum(p.count for p in small),
        sels if width == len(sels) else (),
    )
    counts: dict[tuple[Strategy, tuple[Resources, ...], tuple[Selectors, ...]], int] = {}
    for p in [*keep, joined]:
        key = (p.strategy, p.bundles, p.selectors)
        counts[key] = counts.get(key, 0) + p.count
    return tuple(PlacementGroup(s, b, n, ls) for (s, b, ls), n in sorted(counts.items()))
