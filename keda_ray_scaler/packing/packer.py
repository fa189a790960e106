"""The packer: demand onto existing pods first, then onto as few, as cheap new pods; pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from keda_ray_scaler.packing.newpods import NewPods
from keda_ray_scaler.packing.patterns import place_patterns
from keda_ray_scaler.packing.shapes import (
    UNBOUNDED,
    Candidate,
    GroupSpec,
    Need,
    Strategies,
    Vec,
    fit_count,
    minus,
    need_of,
    size,
)

OldKey = tuple[int, Vec, Vec]


@dataclass(slots=True)
class OldPods:
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
       cost, then the least unused capacity of the new pods, then the best utilisation, then
       the group name, wins. With ``patterns=True``, pods are opened by repeated best
       patterns instead (see :func:`.patterns.place_patterns`).

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
        *,
        groups: Sequence[GroupSpec],
        existing: Iterable[tuple[int, Vec, Vec, str]],
        new: NewPods,
        strategies: Strategies | None = None,
        gpu_index: int = -1,
        patterns: bool = False,
        best_fit: bool = False,
    ) -> None:
        """``existing``: ``(group index, total, free, pod)`` in the order pods take demand;
        ``new``: the pods planned so far, with the :class:`Limits` on those still to open.

        ``best_fit``: existing pods take demand least free space first, wholly free or not
        (default: partly used pods first, so idle pods stay removable).
        """
        self.groups = groups
        self.new = new
        self.strategies = strategies or Strategies()
        self.gpu_index = gpu_index
        self.patterns = patterns
        self.best_fit = best_fit
        self.old: dict[OldKey, OldPods] = {}
        for g, total, free, pod in existing:
            cls = self.old.get((g, total, free))
            if cls is None:
                self.old[(g, total, free)] = OldPods(1, [pod])
            else:
                cls.count += 1
                cls.pods.append(pod)
        self.gpu_groups = [gpu_index >= 0 and gr.capacity[gpu_index] > 0 for gr in groups]
        self.order = {i: float(gpu) for i, gpu in enumerate(self.gpu_groups)}

    def avoid(self, g: int, shape: Vec) -> bool:
        """A GPU pod for a shape asking no GPU that some non-GPU group's pod can hold."""
        gpu = self.gpu_index
        if not self.gpu_groups[g] or shape[gpu]:
            return False
        need = need_of(shape)
        return any(
            not self.gpu_groups[h] and fit_count(grp.capacity, need) > 0
            for h, grp in enumerate(self.groups)
        )

    # --- state ----------------------------------------------------------------------------

    def fork(self) -> Packer:
        """An independent copy to try a choice on; :meth:`adopt` it to keep the result."""
        other = Packer.__new__(Packer)
        for name in ("groups", "strategies", "gpu_index", "patterns", "best_fit"):
            setattr(other, name, getattr(self, name))
        other.gpu_groups, other.order = self.gpu_groups, self.order
        other.old = {k: OldPods(v.count, list(v.pods)) for k, v in self.old.items()}
        other.new = self.new.copy()
        return other

    def adopt(self, trial: Packer) -> None:
        """Take the state of a :meth:`fork` (kept) as this packer's."""
        self.old, self.new = trial.old, trial.new

    def paced(self, pace: Sequence[int] | None) -> None:
        """Put new pods from now on under the rate limit ``pace`` (``None``: lift it)."""
        self.new.limits = self.new.limits.paced(pace)

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
        queue = [
            (s, need_of(s), merged[s]) for s in self.strategies.orderer(list(merged), self.groups)
        ]
        left = [(s, n, self.place_old(s, n, c)) for s, n, c in queue]
        left = [x for x in left if x[2]]
        if self.patterns:
            return place_patterns(self, left)
        out: list[tuple[Vec, int]] = []
        for pos, (shape, need, count) in enumerate(left):
            rest = count and self._place_new(shape, need, count, left[pos + 1 :])
            if rest:
                out.append((shape, rest))
        return out

    def old_keys(self) -> list[OldKey]:
        order, groups = self.order, self.groups

        def key(k: OldKey) -> tuple[bool, float, float, str, Vec]:
            g, total, free = k
            if self.best_fit:
                share = sum(f / b for f, b in zip(free, biggest, strict=True) if b)
                return (False, order[g], share, groups[g].name, free)
            return (free == total, order[g], size(free, groups[g]), groups[g].name, free)

        biggest = [max(gr.capacity[i] for gr in groups) for i in range(len(groups[0].capacity))]

        return sorted(self.old, key=key)

    def place_old(self, shape: Vec, need: Need, count: int, most: int = UNBOUNDED) -> int:
        for key in self.old_keys():
            per = min(fit_count(key[2], need), most)
            if per == 0:
                continue
            cls = self.old.pop(key)
            full, rem = divmod(min(count, per * cls.count), per)
            g, total, free = key
            self.add_old((g, total, minus(free, shape, per)), full, cls.pods[:full])
            if rem:
                self.add_old((g, total, minus(free, shape, rem)), 1, cls.pods[full : full + 1])
            taken = full + (1 if rem else 0)
            if cls.count > taken:
                self.add_old(key, cls.count - taken, cls.pods[taken:])
            count -= full * per + rem
            if count == 0:
                break
        return count

    def add_old(self, key: OldKey, n: int, pods: list[str]) -> None:
        if n <= 0:
            return
        cls = self.old.get(key)
        if cls is None:
            self.old[key] = OldPods(n, pods)
        else:
            self.old[key] = OldPods(cls.count + n, cls.pods + pods)

    def _candidates(self, new: NewPods, shape: Vec, need: Need) -> list[int]:
        """Groups that could take a new pod for ``shape`` now."""
        return [
            g
            for g, grp in enumerate(self.groups)
            if new.room(g) > 0 and fit_count(grp.capacity, need) > 0
        ]

    def _score(self, g: int, shape: Vec, copies: int) -> tuple[int, float, float]:
        grp = self.groups[g]
        return self.strategies.scorer(
            Candidate(grp.name, grp.capacity, grp.cost, shape, copies, self.gpu_index)
        )

    def greedy_group(self, new: NewPods, shape: Vec, need: Need, count: int) -> int | None:
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
        order = self.order
        while count:
            count = new.fill(shape, need, count, order)
            if not count:
                break
            g = self.greedy_group(new, shape, need, count)
            if g is None:
                break
            count = new.open_for(g, shape, need, count, False, self.avoid(g, shape))
        return count

    def _place_new(
        self, shape: Vec, need: Need, count: int, rest: Sequence[tuple[Vec, Need, int]]
    ) -> int:
        order = self.order
        ahead = rest[: self.strategies.lookahead]
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
            if len(options) == 1 or self.strategies.lookahead <= 0:
                choice = self.greedy_group(self.new, shape, need, count)
                if choice is None:
                    break
                avoid = self.avoid(choice, shape)
                count = self.new.open_for(choice, shape, need, count, False, avoid)
                continue
            best: tuple[int, int, float, float, float, float, str, bool] | None = None
            pick = options[0]
            for g, whole in options:
                trial = self.new.copy()
                left = trial.open_for(g, shape, need, count, whole, self.avoid(g, shape))
                unplaced = self._greedy(trial, shape, need, left)
                for s, n, c in ahead:
                    unplaced += self._greedy(trial, s, n, c)
                grp = self.groups[g]
                tier, lo, mean = self._score(g, shape, min(fit_count(grp.capacity, need), count))
                key = (unplaced, tier, trial.cost(), trial.unused(), -lo, -mean, grp.name, whole)
                if best is None or key < best:
                    best, pick = key, (g, whole)
            avoid = self.avoid(pick[0], shape)
            count = self.new.open_for(pick[0], shape, need, count, pick[1], avoid)
        return count
