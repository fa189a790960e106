"""One run of the rules, start to end, and what it leaves unplaced; pure."""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from keda_ray_scaler.model import (
    DemandKind,
    NodeStatus,
    Resources,
    Strategy,
    Unplaceable,
    UnplaceableReason,
    Why,
    WorkerNode,
)
from keda_ray_scaler.packing import Packer, Strategies, Vec, fit_count, need_of
from keda_ray_scaler.planner import rules
from keda_ray_scaler.planner.context import Context

#: Name prefix of the stand-ins for new pods a consolidation run reserves up front.
RESERVED = "\0new:"


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
class Outcome:
    """One run of the rules."""

    new: list[int]
    by_step: dict[Why, list[int]]
    unplaceable: list[Unplaceable]
    busy: set[str]
    unplaced: int = 0
    cost: float = 0.0
    gpu_waste: int = 0  # GPU pods opened for non-GPU demand a CPU group could hold, no GPU use
    unused: float = 0.0  # free space of the new pods (shares of the largest pod)
    valid: bool = True
    extra: list[str] = field(default_factory=list)


def better(a: Outcome, b: Outcome) -> bool:
    """Holds more demand; or as much, wasting fewer GPU pods; or as much for less cost; or
    for as much, with less unused capacity."""
    return (a.unplaced, a.gpu_waste, round(a.cost, 9), round(a.unused, 9)) < (
        b.unplaced,
        b.gpu_waste,
        round(b.cost, 9),
        round(b.unused, 9),
    )


def solve(
    ctx: Context,
    caps: Sequence[int],
    strategies: Strategies,
    mode: Mode,
    preopen: Sequence[int] = (),
    best_fit: bool = False,
) -> Outcome:
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
        existing=[
            (g, ctx.index.capacity(n.total), ctx.index.capacity(_free(n)), n.pod)
            for g, n in ctx.usable
        ]
        + reserved,
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
    return _outcome(run, packer)


def _free(node: WorkerNode) -> Resources:
    """What a pod can still take: a pending pod counts as wholly free (not yet a Ray node)."""
    return node.total if node.status is NodeStatus.PENDING else node.available


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


def _outcome(run: rules.Run, packer: Packer) -> Outcome:
    ctx, final = run.ctx, run.new
    out = Outcome(
        new=list(final.count),
        by_step=run.by_step,
        valid=run.valid,
        unplaceable=[],
        busy={p for p in packer.busy_pods() | run.needed if not p.startswith(RESERVED)},
        cost=final.cost() + run.deferred_cost,
        gpu_waste=final.wasted(ctx.gpu_index) + _reserved_waste(ctx, packer),
        unused=final.unused(),
    )
    speed_left = run.speed_left or rules.speed_room(ctx, final.count)
    for u in run.unplaceable:
        explained = explain(u, ctx, final.count, final.limits.cluster, speed_left)
        out.unplaceable.append(explained)
        if explained.reason is not UnplaceableReason.NO_GROUP_FITS:
            out.unplaced += explained.count
    out.unplaced += run.hidden - run.deferred
    return out


def _reserved_waste(ctx: Context, packer: Packer) -> int:
    """Reserved (consolidation) GPU pods that received no GPU demand."""
    gpu = ctx.gpu_index
    if gpu < 0:
        return 0
    return sum(
        1
        for (_, total, free), cls in packer.old.items()
        if total[gpu] and free[gpu] == total[gpu]
        for p in cls.pods
        if p.startswith(RESERVED)
    )


def explain(
    u: Unplaceable, ctx: Context, new: Sequence[int], budget: int, speed_left: Sequence[int]
) -> Unplaceable:
    """The reason: no group fits, maxWorkers, upscalingSpeed or maxReplicas.

    maxReplicas also covers demand that a group's remaining room cannot hold together with what
    was placed (a re-run trading it for as many other bundles, or a STRICT_SPREAD group needing
    more distinct pods than are left)."""
    if u.detail:
        return u  # already explained
    wgroups = ctx.groups
    need = need_of(ctx.index.vec(u.resources))
    fitting = [i for i, spec in enumerate(ctx.specs) if fit_count(spec.capacity, need) > 0]
    if not fitting:
        reason = UnplaceableReason.NO_GROUP_FITS
        detail = f"no worker group has pods that can hold {u.resources}"
    elif budget <= 0:
        reason, detail = UnplaceableReason.MAX_WORKERS, "maxWorkers reached"
    else:
        open_ = [i for i in fitting if ctx.hard[i] - new[i] > 0]
        backed_off = [i for i in fitting if ctx.backed_off[i]]
        if not open_ and backed_off:
            names = ", ".join(wgroups[i].name for i in backed_off)
            reason = UnplaceableReason.BACKED_OFF
            detail = f"backed off after pods that did not join Ray: {names}"
        elif not open_:
            names = ", ".join(f"{wgroups[i].name} ({wgroups[i].max_replicas})" for i in fitting)
            reason, detail = UnplaceableReason.MAX_REPLICAS, f"at maxReplicas: {names}"
        elif u.kind is DemandKind.TASK and all(speed_left[i] <= 0 for i in open_):
            names = ", ".join(wgroups[i].name for i in open_)
            reason, detail = UnplaceableReason.UPSCALING_SPEED, f"deferred: pods pending in {names}"
        else:  # room is left, but not enough for this together with what was placed
            names = ", ".join(f"{wgroups[i].name} ({wgroups[i].max_replicas})" for i in open_)
            reason = UnplaceableReason.MAX_REPLICAS
            detail = f"competes with other demand for maxReplicas: {names}"
    return Unplaceable(u.resources, u.count, reason, detail, u.kind, u.strategy)


def merge(items: Sequence[Unplaceable]) -> tuple[Unplaceable, ...]:
    """Unplaceable demand with equal shape, reason, kind and strategy counted together."""
    counts: dict[tuple[Resources, UnplaceableReason, str, DemandKind, str], int] = defaultdict(int)
    for u in items:
        counts[(u.resources, u.reason, u.detail, u.kind, u.strategy or "")] += u.count
    return tuple(
        Unplaceable(res, n, reason, detail, kind, Strategy(strat) if strat else None)
        for (res, reason, detail, kind, strat), n in sorted(counts.items())
    )
