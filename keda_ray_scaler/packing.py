"""Bin packing of resource shapes onto existing and new worker pods; pure, no I/O.

Everything works on ``(shape, count)`` pairs and on *classes* of interchangeable pods (same
group, same total, same free vector) held as ``(count, pods)``: placing ``k`` copies of a shape
on a class is arithmetic (``copies per pod = min over resources of floor(free / need)``), so the
cost grows with distinct shapes and distinct pod classes, never with the raw bundle count.

Strategies are injected as small protocols: a :class:`ShapeOrderer` (which shape first) and a
:class:`GroupScorer` (which worker group a new pod should come from).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

#: A resource vector over the packer's resource index, in Ray fixed-point units.
Vec = tuple[int, ...]
#: The non-zero entries of a shape: ``((resource index, amount), ...)``.
Need = tuple[tuple[int, int], ...]

_UNBOUNDED = 1 << 62


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The packer's view of one worker group: one pod's capacity and price, by index."""

    name: str
    capacity: Vec
    cost: float


@dataclass(frozen=True, slots=True)
class Candidate:
    """A worker group considered for new pods: ``copies`` of ``shape`` would go on each pod."""

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


def scarcity_rank(shape: Vec, groups: Sequence[GroupSpec]) -> tuple[float, ...]:
    """Sort key of a shape: scarcest first, then largest.

    Scarcity is how many groups have every resource the shape names (a GPU or custom-resource
    shape goes before a CPU one, so the pods it opens are known before generic demand fills
    their leftovers); size is the dominant share of the largest pod of any group.
    """
    width = len(shape)
    biggest = [max((g.capacity[i] for g in groups), default=0) for i in range(width)]
    kinds = sum(1 for g in groups if all(g.capacity[i] for i, a in enumerate(shape) if a))
    shares = [a / b if b else float(a) for a, b in zip(shape, biggest, strict=True)]
    return (float(kinds), -max(shares, default=0.0), -sum(shares), *map(float, shape))


def scarcity_orderer(shapes: Sequence[Vec], groups: Sequence[GroupSpec]) -> list[Vec]:
    """Scarcest first, then largest dominant share (see :func:`scarcity_rank`)."""
    return sorted(shapes, key=lambda s: scarcity_rank(s, groups))


def smallest_first_orderer(shapes: Sequence[Vec], groups: Sequence[GroupSpec]) -> list[Vec]:
    """Smallest dominant share first: holds the most bundles when maxReplicas or maxWorkers bind."""

    def key(shape: Vec) -> tuple[float, float, Vec]:
        _, neg_dominant, neg_total, *_ = scarcity_rank(shape, groups)
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
        return sorted(shapes, key=lambda s: (-s[i] / biggest, scarcity_rank(s, groups)))


def dominant_share_orderer(shapes: Sequence[Vec], groups: Sequence[GroupSpec]) -> list[Vec]:
    """Largest dominant share first (share of the largest pod of any group), then by vector."""
    return sorted(shapes, key=lambda s: scarcity_rank(s, groups)[1:])


def need_of(shape: Vec) -> Need:
    """The non-zero entries of ``shape``."""
    return tuple((i, a) for i, a in enumerate(shape) if a)


def fit_count(free: Vec, need: Need) -> int:
    """How many copies of a shape fit in ``free``: min over resources of floor(free/need)."""
    best = _UNBOUNDED
    for i, a in need:
        q = free[i] // a
        if q < best:
            if q == 0:
                return 0
            best = q
    return best


def _minus(free: Vec, shape: Vec, times: int) -> Vec:
    return tuple(f - s * times for f, s in zip(free, shape, strict=True))


class NewPods:
    """Pods planned but not yet existing: open classes ``(group index, free) -> count``.

    Small and cheap to copy, so the packer can try a choice and roll it back.
    """

    __slots__ = ("avoidable", "biggest", "budget", "count", "groups", "headroom", "open", "rank")

    def __init__(self, groups: Sequence[GroupSpec], headroom: Sequence[int], budget: int) -> None:
        self.groups = groups
        self.headroom = list(headroom)  # new pods each group may still get
        self.budget = budget  # new pods all groups together may still get
        self.count = [0] * len(groups)  # new pods per group so far
        self.open: dict[tuple[int, Vec], int] = {}
        #: GPU pods opened for demand asking no GPU that a non-GPU group could hold (Ray avoids)
        self.avoidable = 0
        #: best-fit order of open classes; a pure function of the key, so copies share it
        self.rank: dict[tuple[int, Vec], tuple[float, float, tuple[int, Vec]]] = {}
        #: the largest pod of any group, per resource (which need a class most likely fails)
        self.biggest = [max(c) or 1 for c in zip(*(g.capacity for g in groups), strict=True)]

    def copy(self) -> NewPods:
        """An independent copy."""
        other = NewPods(self.groups, self.headroom, self.budget)
        other.count = list(self.count)
        other.avoidable = self.avoidable
        other.open = dict(self.open)
        other.rank = self.rank
        return other

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

    def room(self, g: int) -> int:
        """New pods group ``g`` may still get."""
        return min(self.headroom[g], self.budget)

    def reserve(self, g: int, n: int) -> None:
        """Count ``n`` pods of group ``g`` that the caller places demand on itself."""
        if n > 0:
            self.count[g] += n
            self.headroom[g] -= n
            self.budget -= n

    def add(self, g: int, n: int, free: Vec | None = None, avoidable: bool = False) -> None:
        """Open ``n`` pods of group ``g`` with ``free`` left (default: empty pods)."""
        if n <= 0:
            return
        if avoidable:
            self.avoidable += n
        key = (g, self.groups[g].capacity if free is None else free)
        self.open[key] = self.open.get(key, 0) + n
        self.count[g] += n
        self.headroom[g] -= n
        self.budget -= n

    def fill(
        self, shape: Vec, need: Need, count: int, order: Mapping[int, float], most: int = _UNBOUNDED
    ) -> int:
        """Put up to ``count`` copies (at most ``most`` per pod) on the free space of open pods;
        returns what is left."""
        if not self.open or count <= 0:
            return count
        rank = self.rank
        fitting = []
        # the shape's largest need first: most classes fail there, without a call
        biggest = self.biggest
        i0, a0 = max(need, key=lambda t: t[1] / biggest[t[0]])
        for key in self.open:
            if key[1][i0] < a0:
                continue
            per = fit_count(key[1], need)
            if per > most:
                per = most
            if per:
                r = rank.get(key)
                if r is None:
                    r = rank[key] = (order[key[0]], _size(key[1], self.groups[key[0]]), key)
                fitting.append((r, per))
        fitting.sort()
        for (_, _, key), per in fitting:
            count = self._take(key, per, shape, count)
            if count == 0:
                break
        return count

    def open_for(
        self,
        g: int,
        shape: Vec,
        need: Need,
        count: int,
        whole_only: bool,
        avoidable: bool = False,
        most: int = _UNBOUNDED,
    ) -> int:
        """Open pods of group ``g`` for ``count`` copies (only full pods if ``whole_only``), at
        most ``most`` copies per pod."""
        cap = self.groups[g].capacity
        per = min(fit_count(cap, need), most)
        full, rem = divmod(count, per)
        room = self.room(g)
        if full >= room:
            self.add(g, room, _minus(cap, shape, per), avoidable)
            return count - room * per
        self.add(g, full, _minus(cap, shape, per), avoidable)
        count = rem
        if rem and not whole_only:
            self.add(g, 1, _minus(cap, shape, rem), avoidable)
            count = 0
        return count

    def _take(self, key: tuple[int, Vec], per: int, shape: Vec, count: int) -> int:
        pods = self.open.pop(key)
        full, rem = divmod(min(count, per * pods), per)
        g, free = key
        moved: list[tuple[tuple[int, Vec], int]] = [((g, _minus(free, shape, per)), full)]
        left = pods - full
        if rem:
            moved.append(((g, _minus(free, shape, rem)), 1))
            left -= 1
        if left:
            moved.append((key, left))
        for k, n in moved:
            if n:
                self.open[k] = self.open.get(k, 0) + n
        return count - full * per - rem


def _knapsack(
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
            go(k + 1, _minus(free, s, n), chosen, worth + value[s] * n)
        chosen.pop(s, None)

    go(0, cap, {}, 0.0)
    return best[0]


def _size(free: Vec, group: GroupSpec) -> float:
    """Free space as a sum of shares of the group's pod (best fit tries small first)."""
    return sum(f / c for f, c in zip(free, group.capacity, strict=True) if c)


@dataclass(slots=True)
class _Old:
    """A class of existing pods: same group, same total, same free vector."""

    count: int
    pods: list[str]  # in the order they should receive demand


class Packer:
    """Places demand on existing pods first, then on as few, as cheap new pods as it can.

    Algorithm: first-fit decreasing over distinct shapes with counts (order from the injected
    :class:`ShapeOrderer`, default :func:`scarcity_orderer`), on classes of identical pods.

    1. Existing pods: every shape in order goes onto existing pod classes in best-fit order
       (partly used pods before wholly free ones, non-GPU before GPU, least free space first),
       ``k`` copies at a time by arithmetic.
    2. New pods: what is left first fills the free space of pods already planned, then new
       pods are opened. Default: the group is chosen by *rollout*: for each group that fits
       (and has room), and for each of "all copies there" and "only full pods there", the rest
       of the queue (up to ``lookahead`` shapes) is completed greedily (scorer tier, then
       cheapest cost per copy) and the option with the fewest unplaced bundles, then the best
       scorer tier (:class:`GroupScorer`, Ray's GPU avoidance), then the lowest total new-pod
       cost, then the best utilisation, then the group name, wins. With ``patterns=True``,
       pods are opened by repeated best patterns instead (see :meth:`_place_patterns`).

    Bound: ``O(S * (C log C + L * O * R))`` for ``S`` distinct shapes, ``C`` pod classes,
    ``O`` options (at most 2 per group), ``L`` lookahead and ``R`` open new-pod classes, each
    fit costing the number of resources a shape names; never a factor of the bundle count
    (a million copies of one shape cost one division). Pattern mode adds at most ``G``
    knapsacks of at most 500 nodes per distinct pattern opened.
    Precondition: amounts are non-negative fixed-point integers over one resource index
    (vectors of equal length), and every shape is non-empty (an empty shape needs no pod and
    must not be passed in). Quality: first-fit decreasing uses at most ``11/9 OPT + 6/9`` pods
    of one size (Dosa 2007); across heterogeneous groups the rollout, and the planner's
    portfolio of orders and re-runs, bring it to the integer optimum on most small inputs.
    """

    def __init__(
        self,
        groups: Sequence[GroupSpec],
        existing: Iterable[tuple[int, Vec, Vec, str]],
        new: NewPods,
        scorer: GroupScorer = ray_scorer,
        orderer: ShapeOrderer | None = None,
        lookahead: int = 8,
        gpu_index: int = -1,
        patterns: bool = False,
        best_fit: bool = False,
    ) -> None:
        """``existing``: ``(group index, total, free, pod)`` in the order pods take demand.

        ``best_fit``: existing pods take demand least free space first, wholly free or not
        (default: partly used pods first, so idle pods stay removable).
        """
        self.groups = groups
        self.new = new
        self.scorer = scorer
        self.orderer = orderer or scarcity_orderer
        self.lookahead = lookahead
        self.gpu_index = gpu_index
        self.patterns = patterns
        self.best_fit = best_fit
        self.old: dict[tuple[int, Vec, Vec], _Old] = {}
        for g, total, free, pod in existing:
            cls = self.old.get((g, total, free))
            if cls is None:
                self.old[(g, total, free)] = _Old(1, [pod])
            else:
                cls.count += 1
                cls.pods.append(pod)
        self._gpu_group = [gpu_index >= 0 and gr.capacity[gpu_index] > 0 for gr in groups]
        self._order = {i: float(gpu) for i, gpu in enumerate(self._gpu_group)}

    def _avoid(self, g: int, shape: Vec) -> bool:
        """A GPU pod for a shape asking no GPU that some non-GPU group's pod can hold."""
        gpu = self.gpu_index
        if not self._gpu_group[g] or shape[gpu]:
            return False
        need = need_of(shape)
        return any(
            not self._gpu_group[h] and fit_count(grp.capacity, need) > 0
            for h, grp in enumerate(self.groups)
        )

    # --- state ----------------------------------------------------------------------------

    def snapshot(self) -> tuple[dict[tuple[int, Vec, Vec], _Old], NewPods]:
        """A copy of the state to :meth:`restore` after a failed gang."""
        return {k: _Old(v.count, v.pods) for k, v in self.old.items()}, self.new.copy()

    def restore(self, state: tuple[dict[tuple[int, Vec, Vec], _Old], NewPods]) -> None:
        """Go back to a :meth:`snapshot`."""
        old, new = state
        self.old = {k: _Old(v.count, v.pods) for k, v in old.items()}
        self.new = new.copy()

    def busy_pods(self) -> set[str]:
        """Existing pods with anything used: in use before, or given demand here."""
        return {p for (_, total, free), c in self.old.items() if free != total for p in c.pods}

    # --- placing ----------------------------------------------------------------------------

    def place(self, demand: Sequence[tuple[Vec, int]]) -> list[tuple[Vec, int]]:
        """Place every ``(shape, count)``; returns what could not be placed, same order."""
        merged: dict[Vec, int] = {}
        for shape, count in demand:
            if count > 0:
                merged[shape] = merged.get(shape, 0) + count
        queue = [(s, need_of(s), merged[s]) for s in self.orderer(list(merged), self.groups)]
        left = [(s, n, self._place_old(s, n, c)) for s, n, c in queue]
        left = [x for x in left if x[2]]
        if self.patterns:
            return self._place_patterns(left)
        out: list[tuple[Vec, int]] = []
        for pos, (shape, need, count) in enumerate(left):
            rest = count and self._place_new(shape, need, count, left[pos + 1 :])
            if rest:
                out.append((shape, rest))
        return out

    def _place_patterns(self, left: Sequence[tuple[Vec, Need, int]]) -> list[tuple[Vec, int]]:
        """New pods by repeated best patterns (a greedy cutting-stock heuristic).

        After the free space of pods already planned is filled (first fit decreasing), each
        round fills one pod of every group with room by a small bounded knapsack (the most
        demand that fits one pod, each shape worth its cheapest cost per copy), picks the group
        with the most worth per cost (GPU groups last for patterns without GPU), and opens as
        many pods with that pattern as the counts allow at once: rounds grow with distinct
        patterns, not bundles.
        """
        order = self._order
        rest: dict[Vec, int] = {}
        needs: dict[Vec, Need] = {}
        for shape, need, count in left:
            count = self.new.fill(shape, need, count, order)
            if count:
                rest[shape], needs[shape] = count, need
        # a shape's price: the least cost per copy of holding it alone; a pattern's worth is
        # the sum of its prices, and the group giving the most worth per cost wins
        value: dict[Vec, float] = {}
        for shape in rest:
            fits = [
                (grp.cost / n, n)
                for grp in self.groups
                if (n := fit_count(grp.capacity, needs[shape]))
            ]
            value[shape] = min(fits)[0] if fits else 0.0
        gpu = self.gpu_index
        while rest:
            best: tuple[int, float, float, str] | None = None
            pick: tuple[int, dict[Vec, int]] | None = None
            for g, grp in enumerate(self.groups):
                if self.new.room(g) <= 0:
                    continue
                pattern, worth = _knapsack(grp.capacity, rest, needs, value)
                if not pattern:
                    continue
                waste = self._gpu_group[g] and not any(s[gpu] for s in pattern)
                key = (1 if waste else 0, grp.cost / worth, -worth, grp.name)
                if best is None or key < best:
                    best, pick = key, (g, pattern)
            if pick is None:
                break
            g, pattern = pick
            times = min(self.new.room(g), *(rest[s] // n for s, n in pattern.items()))
            free = list(self.groups[g].capacity)
            for s, n in pattern.items():
                for i, a in enumerate(s):
                    free[i] -= a * n
                rest[s] -= n * times
                if not rest[s]:
                    del rest[s]
            avoid = any(self._avoid(g, s) for s in pattern) and not any(s[gpu] for s in pattern)
            self.new.add(g, times, tuple(free), avoid)
        return [(s, rest[s]) for s, _, _ in left if rest.get(s)]

    def place_spread(self, bundles: Sequence[Vec]) -> bool:
        """One STRICT_SPREAD gang: every bundle on a distinct pod. All or nothing."""
        # when every bundle could get a pod of its own, the gang cannot fail: no snapshot
        sure = all(
            any(
                self.new.room(g) >= len(bundles) and fit_count(grp.capacity, need_of(b)) > 0
                for g, grp in enumerate(self.groups)
            )
            for b in set(bundles)
        )
        state = None if sure else self.snapshot()
        used_old: dict[tuple[int, Vec, Vec], int] = {}
        used_new: dict[tuple[int, Vec], int] = {}
        for shape in self.orderer(list(bundles), self.groups) if len(set(bundles)) > 1 else bundles:
            need = need_of(shape)
            if self._spread_old(shape, need, used_old) or self._spread_new(shape, need, used_new):
                continue
            if state is not None:
                self.restore(state)
            return False
        return True

    def place_spread_copies(self, shape: Vec, size: int, copies: int) -> bool:
        """``copies`` STRICT_SPREAD gangs of ``size`` identical bundles, all at once or none.

        Each gang needs ``size`` distinct pods; copies may share pods. Placing the
        ``size * copies`` bundles with at most ``copies`` on any pod is enough: dealing the
        bundles of each pod to gangs round-robin gives no gang two bundles on one pod.
        """
        state = self.snapshot()
        need = need_of(shape)
        count = self._place_old(shape, need, size * copies, most=copies)
        count = self.new.fill(shape, need, count, self._order, most=copies)
        while count:
            g = self._greedy_group(self.new, shape, need, min(count, copies))
            if g is None:
                self.restore(state)
                return False
            avoid = self._avoid(g, shape)
            count = self.new.open_for(g, shape, need, count, False, avoid, most=copies)
        return True

    def _old_keys(self) -> list[tuple[int, Vec, Vec]]:
        order, groups = self._order, self.groups

        def key(k: tuple[int, Vec, Vec]) -> tuple[bool, float, float, str, Vec]:
            g, total, free = k
            if self.best_fit:
                size = sum(f / b for f, b in zip(free, biggest, strict=True) if b)
                return (False, order[g], size, groups[g].name, free)
            return (free == total, order[g], _size(free, groups[g]), groups[g].name, free)

        biggest = [max(gr.capacity[i] for gr in groups) for i in range(len(groups[0].capacity))]

        return sorted(self.old, key=key)

    def _place_old(self, shape: Vec, need: Need, count: int, most: int = _UNBOUNDED) -> int:
        for key in self._old_keys():
            per = min(fit_count(key[2], need), most)
            if per == 0:
                continue
            cls = self.old.pop(key)
            full, rem = divmod(min(count, per * cls.count), per)
            g, total, free = key
            self._add_old((g, total, _minus(free, shape, per)), full, cls.pods[:full])
            if rem:
                self._add_old((g, total, _minus(free, shape, rem)), 1, cls.pods[full : full + 1])
            taken = full + (1 if rem else 0)
            if cls.count > taken:
                self._add_old(key, cls.count - taken, cls.pods[taken:])
            count -= full * per + rem
            if count == 0:
                break
        return count

    def _add_old(self, key: tuple[int, Vec, Vec], n: int, pods: list[str]) -> None:
        if n <= 0:
            return
        cls = self.old.get(key)
        if cls is None:
            self.old[key] = _Old(n, pods)
        else:
            self.old[key] = _Old(cls.count + n, cls.pods + pods)

    def _candidates(self, new: NewPods, shape: Vec, need: Need) -> list[int]:
        """Groups that could take a new pod for ``shape`` now."""
        return [
            g
            for g, grp in enumerate(self.groups)
            if new.room(g) > 0 and fit_count(grp.capacity, need) > 0
        ]

    def _score(self, g: int, shape: Vec, copies: int) -> tuple[int, float, float]:
        grp = self.groups[g]
        return self.scorer(
            Candidate(grp.name, grp.capacity, grp.cost, shape, copies, self.gpu_index)
        )

    def _greedy_group(self, new: NewPods, shape: Vec, need: Need, count: int) -> int | None:
        """Cheapest cost per placed copy, then best score, then name."""
        best: tuple[int, float, float, float, str] | None = None
        choice = None
        for g in self._candidates(new, shape, need):
            grp = self.groups[g]
            per = min(fit_count(grp.capacity, need), count)
            tier, lo, mean = self._score(g, shape, per)
            key = (tier, grp.cost / per, -lo, -mean, grp.name)
            if best is None or key < best:
                best, choice = key, g
        return choice

    def _greedy(self, new: NewPods, shape: Vec, need: Need, count: int) -> int:
        """Complete one shape on ``new`` without lookahead; returns what is left."""
        order = self._order
        while count:
            count = new.fill(shape, need, count, order)
            if not count:
                break
            g = self._greedy_group(new, shape, need, count)
            if g is None:
                break
            count = new.open_for(g, shape, need, count, False, self._avoid(g, shape))
        return count

    def _place_new(
        self, shape: Vec, need: Need, count: int, rest: Sequence[tuple[Vec, Need, int]]
    ) -> int:
        order = self._order
        ahead = rest[: self.lookahead]
        while count:
            count = self.new.fill(shape, need, count, order)
            if not count:
                break
            cands = self._candidates(self.new, shape, need)
            if not cands:
                break
            options: list[tuple[int, bool]] = []
            for g in cands:
                per = fit_count(self.groups[g].capacity, need)
                options.append((g, False))
                if count > per and count % per:
                    options.append((g, True))
            if len(options) == 1 or self.lookahead <= 0:
                choice = self._greedy_group(self.new, shape, need, count)
                if choice is None:
                    break
                avoid = self._avoid(choice, shape)
                count = self.new.open_for(choice, shape, need, count, False, avoid)
                continue
            best: tuple[int, int, float, float, float, str, bool] | None = None
            pick = options[0]
            for g, whole in options:
                trial = self.new.copy()
                left = trial.open_for(g, shape, need, count, whole, self._avoid(g, shape))
                unplaced = self._greedy(trial, shape, need, left)
                for s, n, c in ahead:
                    unplaced += self._greedy(trial, s, n, c)
                grp = self.groups[g]
                tier, lo, mean = self._score(g, shape, min(fit_count(grp.capacity, need), count))
                key = (unplaced, tier, trial.cost(), -lo, -mean, grp.name, whole)
                if best is None or key < best:
                    best, pick = key, (g, whole)
            avoid = self._avoid(pick[0], shape)
            count = self.new.open_for(pick[0], shape, need, count, pick[1], avoid)
        return count

    def _spread_old(self, shape: Vec, need: Need, used: dict[tuple[int, Vec, Vec], int]) -> bool:
        for key in self._old_keys():
            cls = self.old[key]
            if cls.count - used.get(key, 0) <= 0 or fit_count(key[2], need) == 0:
                continue
            g, total, free = key
            # pods used by this gang were appended last: the first pod is a fresh one
            self.old.pop(key)
            if cls.count > 1:
                self.old[key] = _Old(cls.count - 1, cls.pods[1:])
            dest = (g, total, _minus(free, shape, 1))
            self._add_old(dest, 1, cls.pods[:1])
            used[dest] = used.get(dest, 0) + 1
            return True
        return False

    def _spread_new(self, shape: Vec, need: Need, used: dict[tuple[int, Vec], int]) -> bool:
        new = self.new
        for key in sorted(
            new.open, key=lambda k: (self._order[k[0]], _size(k[1], self.groups[k[0]]), k)
        ):
            if new.open[key] - used.get(key, 0) <= 0 or fit_count(key[1], need) == 0:
                continue
            n = new.open.pop(key)
            if n > 1:
                new.open[key] = n - 1
            dest = (key[0], _minus(key[1], shape, 1))
            new.open[dest] = new.open.get(dest, 0) + 1
            used[dest] = used.get(dest, 0) + 1
            return True
        g = self._greedy_group(new, shape, need, 1)
        if g is None:
            return False
        dest = (g, _minus(self.groups[g].capacity, shape, 1))
        new.add(g, 1, dest[1], self._avoid(g, shape))
        used[dest] = used.get(dest, 0) + 1
        return True
