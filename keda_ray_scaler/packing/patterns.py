"""New pods by repeated best patterns: a greedy cutting-stock heuristic; pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from keda_ray_scaler.packing.shapes import Need, Vec, fit_count, label_of, minus

if TYPE_CHECKING:
    from keda_ray_scaler.packing.packer import Packer


def knapsack(
    cap: Vec,
    counts: Mapping[Vec, int],
    needs: Mapping[Vec, Need],
    value: Mapping[Vec, float],
    budget: int = 500,
) -> tuple[dict[Vec, int], float]:
    """Most ``value`` of the shapes (at most ``counts`` each) that fits in one ``cap`` pod.

    Depth-first over shapes by decreasing value, most copies first, with a bound (the best
    fractional completion) and at most ``budget`` nodes: exact on small inputs, greedy after.
    """
    shapes = sorted(
        (s for s in counts if fit_count(cap, needs[s]) > 0), key=lambda s: (-value[s], s)
    )
    best: list[tuple[dict[Vec, int], float]] = [({}, 0.0)]
    nodes = [0]

    def bound(free: Vec, k: int) -> float:
        # the best value per unit of the tightest resource, times what is left of it
        extra = 0.0
        for s in shapes[k:]:
            extra += value[s] * min(counts[s], fit_count(free, needs[s]))
        return extra

    def go(k: int, free: Vec, chosen: dict[Vec, int], worth: float) -> None:
        nodes[0] += 1
        if worth > best[0][1] + 1e-12:
            best[0] = (dict(chosen), worth)
        if k == len(shapes) or nodes[0] > budget:
            return
        if worth + bound(free, k) <= best[0][1] + 1e-12:
            return
        s = shapes[k]
        most = min(counts[s], fit_count(free, needs[s]))
        for n in range(most, -1, -1):
            if n:
                chosen[s] = n
            else:
                chosen.pop(s, None)
            go(k + 1, minus(free, s, n), chosen, worth + value[s] * n)
        chosen.pop(s, None)

    go(0, cap, {}, 0.0)
    return best[0]


def place_patterns(packer: Packer, left: Sequence[tuple[Vec, Need, int]]) -> list[tuple[Vec, int]]:
    """New pods by repeated best patterns (a greedy cutting-stock heuristic).

    After the free space of pods already planned is filled (first fit decreasing), each
    round fills one pod of every group with room by a small bounded knapsack (the most
    demand that fits one pod and its labels admit, each shape worth its cheapest cost per
    copy), picks the group by GPU avoidance (GPU groups last for patterns without GPU), then
    the highest priority, then the most worth per cost, and opens as many pods with that
    pattern as the counts allow at once: rounds grow with distinct patterns, not bundles.
    """
    order = packer.order
    rest: dict[Vec, int] = {}
    needs: dict[Vec, Need] = {}
    for shape, need, count in left:
        count = packer.new.fill(shape, need, count, order)
        if count:
            rest[shape], needs[shape] = count, need
    # a shape's price: the least cost per copy of holding it alone; a pattern's worth is
    # the sum of its prices, and the group giving the most worth per cost wins
    labels = {shape: label_of(shape, packer.width) for shape in rest}
    labelled = any(labels.values())
    value: dict[Vec, float] = {}
    for shape in rest:
        fits = [
            (grp.cost / n, n)
            for grp in packer.groups
            if grp.takes(labels[shape]) and (n := fit_count(grp.capacity, needs[shape]))
        ]
        value[shape] = min(fits)[0] if fits else 0.0
    gpu = packer.gpu_index
    while rest:
        best: tuple[int, int, float, float, str] | None = None
        pick: tuple[int, dict[Vec, int]] | None = None
        for g, grp in enumerate(packer.groups):
            if packer.new.room(g) <= 0:
                continue
            mine = {s: n for s, n in rest.items() if grp.takes(labels[s])} if labelled else rest
            pattern, worth = knapsack(grp.capacity, mine, needs, value)
            if not pattern:
                continue
            waste = packer.gpu_groups[g] and not any(s[gpu] for s in pattern)
            key = (1 if waste else 0, -grp.priority, grp.cost / worth, -worth, grp.name)
            if best is None or key < best:
                best, pick = key, (g, pattern)
        if pick is None:
            break
        g, pattern = pick
        times = min(packer.new.room(g), *(rest[s] // n for s, n in pattern.items()))
        free = packer.groups[g].capacity
        for s, n in pattern.items():
            free = minus(free, s, n)
            packer.new.tally(labels[s], g, n * times)
            rest[s] -= n * times
            if not rest[s]:
                del rest[s]
        avoid = any(packer.avoid(g, s) for s in pattern) and not any(s[gpu] for s in pattern)
        packer.new.add(g, times, free, avoid)
    return [(s, rest[s]) for s, _, _ in left if rest.get(s)]
