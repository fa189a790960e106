"""The search for a better plan, apart from the rules, under an explicit work budget; pure.

On small inputs only (live plus new pods and distinct shapes within :class:`SearchLimits`),
the rules are also run in other orders (tasks before placement groups; every bundle but
STRICT_SPREAD in one queue; request_resources after demand), with pattern packing, and
smallest-first when bounds block demand (the *portfolio*); then a *descent* (one group allowed
one pod fewer, going on up to ``depth`` pods fewer, with other shape orders where the packer
fails to fit) and a *consolidation* (all new pods but one bought up front: if the demand fits
them, that pod goes). Runs are memoised; at most ``runs`` of them.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from keda_ray_scaler.decisions import Why
from keda_ray_scaler.packing.shapes import ResourceFirstOrderer, Strategies, smallest_first_orderer
from keda_ray_scaler.planner import rules
from keda_ray_scaler.planner.context import Context
from keda_ray_scaler.planner.solve import Mode, Order, RunResult, better, solve


@dataclass(frozen=True, slots=True)
class SearchLimits:
    """When and how far to search: inputs up to ``max_pods`` live plus new pods and
    ``max_shapes`` distinct shapes, at most ``runs`` extra runs, descents ``depth`` deep."""

    max_pods: int = 128
    max_shapes: int = 16
    runs: int = 64
    depth: int = 3


_Key = tuple[tuple[int, ...], Strategies, Mode, tuple[int, ...], bool]


@dataclass(slots=True)
class Search:
    """The best run so far, its caps, and the work left."""

    ctx: Context
    strategies: Strategies
    caps: list[int]
    best: RunResult
    runs_left: int
    modes: list[Mode] = field(default_factory=list)
    seen: dict[_Key, RunResult | None] = field(default_factory=dict)

    def run(
        self,
        caps: Sequence[int],
        strategies: Strategies,
        mode: Mode,
        preopen: Sequence[int] = (),
        best_fit: bool = False,
    ) -> RunResult | None:
        """One memoised run of the rules; ``None`` when invalid or out of budget."""
        key = (tuple(caps), strategies, mode, tuple(preopen), best_fit)
        if key in self.seen:
            return self.seen[key]
        if self.runs_left <= 0:
            return None
        self.runs_left -= 1
        out = solve(self.ctx, caps, strategies, mode, preopen, best_fit)
        self.seen[key] = out if out.valid else None
        return self.seen[key]


def shape_count(ctx: Context) -> int:
    """Distinct task shapes plus placement-group bundles."""
    return len({v for v, _ in ctx.tasks}) + sum(len(pg.bundles) for pg in ctx.gangs)


def search(ctx: Context, strategies: Strategies, limits: SearchLimits) -> RunResult:
    """The best run found: Ray's order first, then the portfolio, descent and
    consolidation while the budget lasts."""
    first = solve(ctx, ctx.hard, strategies, Mode())
    small = (
        sum(ctx.staying) + sum(first.new) <= limits.max_pods
        and shape_count(ctx) <= limits.max_shapes
    )
    if not small:
        return first
    s = Search(ctx, strategies, list(ctx.hard), first, limits.runs, _modes(ctx))
    portfolio(s)
    depth = 1
    while s.runs_left > 0:
        if descend(s, depth) or consolidate(s):
            depth = 1
        elif depth < limits.depth:
            depth = limits.depth
        else:
            break
    return s.best


def _modes(ctx: Context) -> list[Mode]:
    orders = [Order.GANGS_FIRST]
    if ctx.gangs:
        orders += [Order.TASKS_FIRST, Order.ONE_QUEUE] if ctx.tasks else [Order.ONE_QUEUE]
    late = (False, True) if ctx.constraints else (False,)
    return [Mode(o, p, c) for c in late for p in (False, True) for o in orders]


def portfolio(s: Search) -> None:
    """Other orders and pattern packing; smallest first when bounds block demand."""
    for mode in s.modes[1:]:
        other = s.run(s.caps, s.strategies, mode)
        if other and better(other, s.best):
            s.best = other
    if s.best.unplaced:
        few = dataclasses.replace(s.strategies, orderer=smallest_first_orderer)
        for mode in s.modes:
            other = s.run(s.caps, few, mode)
            if other and better(other, s.best):
                s.best, s.strategies = other, few


def descend(s: Search, depth: int) -> bool:
    """One pod fewer of a group, then (``depth`` > 1) fewer again from the best of those runs
    while it holds as much; True on a better plan."""
    for g in range(len(s.ctx.specs)):
        cur, caps = s.best, list(s.caps)
        for _ in range(depth):
            if cur.new[g] <= cur.by_step[Why.MIN_REPLICAS][g]:
                break
            caps = list(caps)
            caps[g] = cur.new[g] - 1
            step = _best_step(s, caps, deep=depth > 1)
            if step is None:
                break
            if better(step, s.best):
                s.best, s.caps = step, caps
                return True
            cur = step
    return False


def _best_step(s: Search, caps: list[int], deep: bool) -> RunResult | None:
    """The best run at ``caps`` over the modes, then (``deep``, only when no bound blocks
    demand) other shape orders where the packer fails to fit it all."""
    step: RunResult | None = None
    for mode in s.modes:
        trial = s.run(caps, s.strategies, mode)
        if trial and (step is None or better(trial, step)):
            step = trial
        if step and better(step, s.best):
            return step
    if deep and not s.best.unplaced and (step is None or step.unplaced):
        for i in _demand_resources(s.ctx):
            alt = dataclasses.replace(s.strategies, orderer=ResourceFirstOrderer(i))
            trial = s.run(caps, alt, s.modes[0])
            if trial and (step is None or better(trial, step)):
                step = trial
            if step and not step.unplaced:
                break
    return step


def consolidate(s: Search) -> bool:
    """Every pod of the plan but one of a group exists before demand is placed: if the demand
    still fits them as well, that pod is dropped (whatever step bought it)."""
    if not all(r > 0 for r in rules.speed_room(s.ctx, s.best.new)):
        return False  # pods the speed rule counts would move between steps
    for g in range(len(s.ctx.specs)):
        if s.best.new[g] <= s.best.by_step[Why.MIN_REPLICAS][g]:
            continue
        fewer = list(s.best.new)
        fewer[g] -= 1
        for fit, mode in itertools.product((False, True), s.modes):
            trial = s.run(fewer, s.strategies, mode, fewer, fit)
            if trial and better(trial, s.best):
                by_step = _one_less(s.best.by_step, g)
                s.best, s.caps = dataclasses.replace(trial, by_step=by_step), fewer
                return True
    return False


def _one_less(by_step: dict[Why, list[int]], g: int) -> dict[Why, list[int]]:
    """``by_step`` with one pod of group ``g`` taken from its last step that added one."""
    out = {step: list(counts) for step, counts in by_step.items()}
    for step in reversed(list(out)):
        if step is not Why.MIN_REPLICAS and out[step][g] > 0:
            out[step][g] -= 1
            break
    return out


def _demand_resources(ctx: Context) -> list[int]:
    """Positions of the resources demand names, when it names more than one."""
    vecs = [v for v, _ in (*ctx.tasks, *ctx.constraints)]
    vecs += [v for pg in ctx.gangs for v in ctx.gang_vecs[pg]]
    width = ctx.index.width  # resources only: no admission class, no label id
    used = sorted({i for v in vecs for i, a in enumerate(v[:width]) if a})
    return used if len(used) > 1 else []
