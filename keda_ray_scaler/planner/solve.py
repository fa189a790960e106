"""``solve``: one run of the rules, start to end, and its :class:`RunResult`; pure."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from keda_ray_scaler.decisions import Unplaceable, UnplaceableReason, Why
from keda_ray_scaler.packing.packer import Packer
from keda_ray_scaler.packing.shapes import Strategies, Vec
from keda_ray_scaler.planner import rules
from keda_ray_scaler.planner.context import Context
from keda_ray_scaler.planner.placed import Tally, tally_of
from keda_ray_scaler.planner.unplaceable import explain

#: Name prefix of the stand-ins for new pods a consolidation run reserves up front.
RESERVED = "\0new:"
#: Reasons no run can change: what they leave is not counted against a run.
_NEVER = (UnplaceableReason.NO_GROUP_FITS, UnplaceableReason.NO_GROUP_MATCHES)


class Order(enum.Enum):
    """The order of placement groups and tasks in one run."""

    GANGS_FIRST = "gangs"  # Ray's: placement groups, then tasks
    TASKS_FIRST = "tasks"  # gang bundles use the leftovers of pods tasks need anyway
    ONE_QUEUE = "flat"  # STRICT_SPREAD, then every other bundle in one queue


@dataclass(frozen=True, slots=True)
class Mode:
    """How one run applies the rules."""

    order: Order = Order.GANGS_FIRST
    patterns: bool = False  # new pods by repeated best patterns instead of rollouts
    constraints_last: bool = False  # request_resources against the pods demand needs anyway


@dataclass(slots=True)
class RunResult:
    """What one run of the rules chose: new pods (per group and per rule), busy pods,
    unplaceable demand, and the figures runs are compared by (:func:`better`)."""

    new: list[int]
    by_step: dict[Why, list[int]]
    unplaceable: list[Unplaceable]
    busy: set[str]
    unplaced: int = 0
    cost: float = 0.0
    gpu_waste: int = 0  # GPU pods opened for non-GPU demand a CPU group could hold, no GPU use
    unused: float = 0.0  # free space of the new pods (shares of the largest pod)
    #: bundles placed by a fallback selector, not their first (:mod:`.admission` tiers)
    fallen: int = 0
    #: new pods per priority below the highest, lowest first (none when all groups are alike)
    demoted: tuple[int, ...] = ()
    #: labelled bundles placed, by (label id, group, admission class) (:mod:`.placed`)
    placed: Tally = field(default_factory=dict)
    valid: bool = True
    extra: list[str] = field(default_factory=list)


def better(a: RunResult, b: RunResult) -> bool:
    """Holds more demand; or as much with fewer bundles on fallback selectors; or wasting
    fewer GPU pods; or with fewer pods of lower priorities; or for less cost; or for as much,
    with less unused capacity. Without label selectors and priorities, the second and fourth
    are always equal. The order is the packer's (and Ray 2.60's: label match, then GPU
    avoidance, then utilisation and priority; ``docs/concepts/planner.md``)."""
    return rank(a) < rank(b)


def rank(r: RunResult) -> tuple[int, int, int, tuple[int, ...], float, float]:
    """What :func:`better` compares, in order."""
    return (r.unplaced, r.fallen, r.gpu_waste, r.demoted, round(r.cost, 9), round(r.unused, 9))


def solve(
    ctx: Context,
    caps: Sequence[int],
    strategies: Strategies,
    mode: Mode,
    preopen: Sequence[int] = (),
    best_fit: bool = False,
) -> RunResult:
    """The rules with at most ``caps[g]`` new pods per group.

    ``preopen``: new pods per group paid for before any demand is placed (a consolidation run:
    ``caps`` equal to it, so demand only fills them), wholly free new pods or, with
    ``best_fit``, filled like existing pods and every pod least free space first; their GPU
    pods count as wasted unless they receive GPU demand.
    """
    run = rules.start(ctx, caps, strategies, mode.patterns)
    rules.min_replicas(run)
    reserved = _preopen(run, preopen, best_fit)
    if ctx.constraints and not mode.constraints_last:
        rules.constraints(run)
    before_demand = list(run.new.count)
    packer = Packer(
        groups=ctx.specs,
        existing=[*ctx.pods_free, *reserved],
        new=run.new,
        strategies=strategies,
        gpu_index=ctx.gpu_index,
        patterns=mode.patterns,
        best_fit=bool(reserved),
    )
    if mode.order is Order.ONE_QUEUE:
        rules.demand_in_one_queue(run, packer)
    elif mode.order is Order.GANGS_FIRST:
        rules.gangs(run, packer, ctx.gangs)
        rules.tasks(run, packer)
    else:
        rules.tasks(run, packer)
        rules.gangs(run, packer, ctx.gangs)
    placed_by_demand = list(packer.new.count)
    run.new = packer.new
    if ctx.constraints and mode.constraints_last:
        rules.constraints(run)
    if mode.order is not Order.ONE_QUEUE:
        run.by_step[Why.PLACEMENT_GROUPS] = [
            p - b - t
            for p, b, t in zip(placed_by_demand, before_demand, run.by_step[Why.TASKS], strict=True)
        ]
    return _result(run, packer)


def _preopen(
    run: rules.Run, preopen: Sequence[int], best_fit: bool
) -> list[tuple[int, Vec, Vec, str]]:
    """Consolidation: new pods paid for up front; with ``best_fit`` as stand-in existing pods
    (returned), else as wholly free new pods."""
    ctx, new = run.ctx, run.new
    min_new = run.by_step[Why.MIN_REPLICAS]
    reserved: list[tuple[int, Vec, Vec, str]] = []
    for i, want in enumerate(preopen):
        cap = ctx.specs[i].capacity
        if not best_fit:  # wholly free new pods, filled after existing pods
            new.add(i, want - new.count[i], avoidable=ctx.gpu_index >= 0 and cap[ctx.gpu_index] > 0)
            continue
        new.reserve(i, max(0, want - new.count[i]))  # minReplicas pods are reserved alike
        reserved += [(i, cap, cap, f"{RESERVED}{i}.{k}") for k in range(max(want, min_new[i]))]
    return reserved


def _result(run: rules.Run, packer: Packer) -> RunResult:
    ctx, final = run.ctx, run.new
    out = RunResult(
        new=list(final.count),
        by_step=run.by_step,
        valid=run.valid,
        unplaceable=[],
        busy={p for p in packer.busy_pods() | run.needed if not p.startswith(RESERVED)},
        cost=final.cost() + run.deferred_cost,
        gpu_waste=final.wasted(ctx.gpu_index) + _reserved_waste(ctx, packer),
        unused=final.unused(),
        fallen=run.fallen,
        demoted=_demoted(ctx, final.count),
        placed=tally_of(packer.new.placed, packer.existing.placed),
    )
    speed_left = run.speed_left or rules.speed_room(ctx, final.count)
    for u in run.unplaceable:
        explained = explain(u, ctx, final.count, final.limits.cluster, speed_left)
        out.unplaceable.append(explained)
        if explained.reason not in _NEVER:
            out.unplaced += explained.count
    out.unplaced += run.hidden - run.deferred
    return out


def _demoted(ctx: Context, new: Sequence[int]) -> tuple[int, ...]:
    """New pods per priority below the highest, lowest priority first."""
    if not ctx.ranks:
        return ()
    return tuple(
        sum(n for g, n in zip(ctx.groups, new, strict=True) if g.priority == r) for r in ctx.ranks
    )


def _reserved_waste(ctx: Context, packer: Packer) -> int:
    """Reserved (consolidation) GPU pods that received no GPU demand."""
    if ctx.gpu_index < 0:
        return 0
    return sum(1 for p in packer.existing.untouched(ctx.gpu_index) if p.startswith(RESERVED))
