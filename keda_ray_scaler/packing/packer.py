"""The packer: demand onto existing pods first, then onto as few, as cheap new pods; pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from keda_ray_scaler.packing.existingpods import ExistingPods
from keda_ray_scaler.packing.memo import Holding, Memo
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
    need_of,
)

#: Immutable values a fork shares with its packer; every other field is copied.
_SHARED = (bool, int, float, str, tuple, Strategies)


@dataclass(slots=True, init=False)
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
       the group name, wins. Options are the groups of the highest ``priority``
       (:attr:`GroupSpec.priority`; all alike by default) among those that fit and have room,
       among the GPU groups and among the others apart for a shape asking no GPU: the order is
       unplaced bundles, GPU avoidance, priority, cost, unused capacity, utilisation. Options
       of the avoided tier are not rolled out once one of the better tier leaves nothing
       unplaced, and the lookahead covers only the shapes linked to the current one by groups
       both can use (:meth:`.memo.Memo.linked`; all of them while maxWorkers binds): neither
       changes a comparison. With ``patterns=True``,
       pods are opened by repeated best patterns instead (see :func:`.patterns.place_patterns`).

    Labels: a shape with a label id goes only on pods that admit it (:mod:`.shapes`); groups
    that do not are no options for it.

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

    State: :attr:`existing` and :attr:`new`, each changed only by its own methods; the other
    fields are fixed at construction (:attr:`memo` only remembers what they imply).
    """

    groups: tuple[GroupSpec, ...]
    strategies: Strategies
    gpu_index: int  # -1: no GPU resource
    patterns: bool
    gpu_groups: tuple[bool, ...]  # per group: its pods have GPUs
    ranked: bool  # some group has a priority: new pods only from the highest that can take one
    width: int  # entries of a pod vector: a longer shape's next entry is its label id
    memo: Memo  # what follows from a shape alone (shared by forks)
    order: tuple[float, ...]  # per group: its rank when pods tie (GPU groups last)
    existing: ExistingPods  # the pods that run, as classes of identical free space
    new: NewPods  # the pods planned so far

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
        self.groups = tuple(groups)
        self.strategies = strategies or Strategies()
        self.gpu_index = gpu_index
        self.patterns = patterns
        self.gpu_groups = tuple(gpu_index >= 0 and gr.capacity[gpu_index] > 0 for gr in groups)
        self.order = tuple(float(gpu) for gpu in self.gpu_groups)
        self.ranked = len({gr.priority for gr in groups}) > 1
        self.width = len(self.groups[0].capacity) if self.groups else 0
        self.memo = Memo(self.groups, self.gpu_groups)
        self.existing = ExistingPods(self.groups, self.order, existing, best_fit)
        self.new = new

    def avoid(self, g: int, shape: Vec) -> bool:
        """A GPU pod for a shape asking no GPU that some non-GPU group's pod can hold."""
        gpu = self.gpu_index
        if not self.gpu_groups[g] or shape[gpu]:
            return False
        return self.holding(shape)[1]

    def holding(self, shape: Vec) -> Holding:
        """The groups whose pods can hold ``shape`` (labels and size), and whether a non-GPU
        group is among them (remembered: :class:`~.memo.Memo`)."""
        return self.memo.holding(shape)

    # --- state ----------------------------------------------------------------------------

    def fork(self) -> Packer:
        """An independent copy to try a choice on; :meth:`adopt` it to keep the result.

        Every field, enumerated by :func:`dataclasses.fields`: immutable values are shared,
        anything else is copied by its own ``copy()`` (a new mutable field without one fails
        on the first fork, not silently shared).
        """
        other = object.__new__(Packer)
        for name in _FIELDS:
            value: Any = getattr(self, name)
            setattr(other, name, value if isinstance(value, _SHARED) else value.copy())
        return other

    def adopt(self, trial: Packer) -> None:
        """Take the state of a :meth:`fork` (kept) as this packer's: every field."""
        for name in _FIELDS:
            setattr(self, name, getattr(trial, name))

    def paced(self, pace: Sequence[int] | None) -> None:
        """Put new pods from now on under the rate limit ``pace`` (``None``: lift it)."""
        self.new.paced(pace)

    def busy_pods(self) -> set[str]:
        """Existing pods with anything used: in use before, or given demand here."""
        return self.existing.busy_pods()

    # --- placing ----------------------------------------------------------------------------

    def place(self, demand: Sequence[tuple[Vec, int]]) -> list[tuple[Vec, int]]:
        """Place every ``(shape, count)``; returns what could not be placed, same order."""
        merged: dict[Vec, int] = {}
        for shape, count in demand:
            if count > 0:
                merged[shape] = merged.get(shape, 0) + count
        width = self.width
        queue = [
            (s, need_of(s, width), merged[s])
            for s in self.strategies.orderer(list(merged), self.groups)
        ]
        left = [(s, n, self.existing.place(s, n, c)) for s, n, c in queue]
        left = [x for x in left if x[2]]
        if self.patterns:
            return place_patterns(self, left)
        out: list[tuple[Vec, int]] = []
        for pos, (shape, need, count) in enumerate(left):
            rest = count and self._place_new(shape, need, count, left[pos + 1 :])
            if rest:
                out.append((shape, rest))
        return out

    def _candidates(self, new: NewPods, shape: Vec) -> list[int]:
        """Groups that could take a new pod for ``shape`` now (room, labels, size): of those,
        the highest priority among the GPU groups and among the others when the shape asks no
        GPU (GPU avoidance ranks before priority), else the highest of all."""
        cands = [g for g in self.holding(shape)[0] if new.room(g) > 0]
        if not self.ranked or len(cands) < 2:
            return cands
        gpu = self.gpu_index
        tier = self.gpu_groups if gpu >= 0 and not shape[gpu] else (False,) * len(self.groups)
        top: dict[bool, int] = {}
        for g in cands:
            p = self.groups[g].priority
            top[tier[g]] = max(top.get(tier[g], p), p)
        return [g for g in cands if self.groups[g].priority == top[tier[g]]]

    def _score(self, g: int, shape: Vec, copies: int) -> tuple[int, float, float]:
        key = (g, shape, copies)
        known = self.memo.scores.get(key)
        if known is None:
            grp = self.groups[g]
            known = self.memo.scores[key] = self.strategies.scorer(
                Candidate(grp.name, grp.shares, grp.cost, shape, copies, self.gpu_index)
            )
        return known

    def greedy_group(self, new: NewPods, shape: Vec, need: Need, count: int) -> int | None:
        """Cheapest cost per placed copy, then best score, then name."""
        best: tuple[int, float, float, float, str] | None = None
        choice = None
        for g in self._candidates(new, shape):
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
        if ahead and self.new.limits.cluster >= UNBOUNDED // 2:  # no maxWorkers binds
            ahead = self.memo.linked(shape, ahead)
        while count:
            count = self.new.fill(shape, need, count, order)
            if not count:
                break
            cands = self._candidates(self.new, shape)
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
            scored = [
                (self._score(g, shape, min(fit_count(self.groups[g].capacity, need), count)), g, w)
                for g, w in options
            ]
            for (tier, lo, mean), g, whole in sorted(scored, key=lambda o: o[0][0]):
                if best is not None and best[0] == 0 and best[1] < tier:
                    break  # nothing left unplaced at a better tier: no later option can win
                trial = self.new.copy()
                left = trial.open_for(g, shape, need, count, whole, self.avoid(g, shape))
                unplaced = self._greedy(trial, shape, need, left)
                for s, n, c in ahead:
                    unplaced += self._greedy(trial, s, n, c)
                grp = self.groups[g]
                key = (unplaced, tier, trial.cost(), trial.unused(), -lo, -mean, grp.name, whole)
                if best is None or key < best:
                    best, pick = key, (g, whole)
            avoid = self.avoid(pick[0], shape)
            count = self.new.open_for(pick[0], shape, need, count, pick[1], avoid)
        return count


_FIELDS = tuple(f.name for f in fields(Packer))
