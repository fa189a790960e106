"""The rules, one module-level function each, in the order a plan applies them; pure.

Like Ray v2's ``ResourceDemandScheduler.schedule()`` steps (``_enforce_min_workers_per_type``,
``_enforce_resource_constraints``, ``_sched_gang_resource_requests``,
``_sched_resource_requests``): each rule reads the :class:`Run`, places what it can on its
packer and records what it could not in ``run.unplaceable``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from keda_ray_scaler.decisions import Unplaceable, UnplaceableReason, Why
from keda_ray_scaler.model import DemandKind, PlacementGroup, Strategy
from keda_ray_scaler.packing.limits import Limits
from keda_ray_scaler.packing.newpods import NewPods
from keda_ray_scaler.packing.packer import Packer
from keda_ray_scaler.packing.shapes import Strategies, Vec
from keda_ray_scaler.packing.spread import place_spread, place_spread_copies
from keda_ray_scaler.planner.admission import place_tiers
from keda_ray_scaler.planner.context import Context
from keda_ray_scaler.planner.unplaceable import no_fit

#: Ray's AUTOSCALER_UPSCALING_INITIAL_NUM_NODES: pods a group may have pending at any speed.
UPSCALING_INITIAL_PODS = 5


@dataclass(slots=True)
class Run:
    """The state of one run of the rules."""

    ctx: Context
    strategies: Strategies
    patterns: bool
    new: NewPods  # the new pods so far (the packer's, once it exists)
    unplaceable: list[Unplaceable] = field(default_factory=list)
    by_step: dict[Why, list[int]] = field(default_factory=dict)  # new pods each rule added
    needed: set[str] = field(default_factory=set)  # existing pods request_resources needs
    speed_left: list[int] = field(default_factory=list)  # pods upscalingSpeed still allows
    hidden: int = 0  # bundles of unplaced STRICT_PACK groups beyond the one combined entry
    #: task bundles upscalingSpeed defers, and the price of the pods they wait for: a run is
    #: judged by the pods it chose, not by what the rate limit lets it buy this round
    deferred: int = 0
    deferred_cost: float = 0.0
    valid: bool = True  # False: the run broke a rule it cannot check up front (flat order)
    fallen: int = 0  # bundles placed by a fallback selector (a later tier, :mod:`.admission`)


def start(ctx: Context, caps: Sequence[int], strategies: Strategies, patterns: bool) -> Run:
    """A run with at most ``caps[g]`` new pods per group (and the cluster's budget)."""
    return Run(ctx, strategies, patterns, NewPods(ctx.specs, Limits(caps, ctx.budget)))


def speed_room(ctx: Context, planned: Sequence[int]) -> list[int]:
    """New pods upscalingSpeed still allows per group with ``planned`` new pods already.

    Ray: pending pods per group at most ``max(5, int(speed * max(running, 1)))``.
    """
    speed = ctx.inp.cluster.upscaling_speed
    return [
        max(
            0, max(UPSCALING_INITIAL_PODS, int(speed * max(ctx.running[i], 1))) - ctx.pending[i] - n
        )
        for i, n in enumerate(planned)
    ]


def min_replicas(run: Run) -> None:
    """New pods for every group below its minReplicas (not held back by any limit)."""
    ctx = run.ctx
    for i, g in enumerate(ctx.groups):
        run.new.add(i, g.min_replicas - ctx.staying[i])
    run.by_step[Why.MIN_REPLICAS] = list(run.new.count)


def constraints(run: Run) -> None:
    """request_resources(): packed against the TOTAL capacity of the pods and the new pods so
    far, adding pods if needed; all or nothing (a floor that cannot be met adds no pod)."""
    ctx = run.ctx
    before = list(run.new.count)
    totals = Packer(
        groups=ctx.specs,
        existing=ctx.pods_total,
        new=run.new.blank(),
        strategies=run.strategies,
        gpu_index=ctx.gpu_index,
        patterns=run.patterns,
    )
    left, moved = place_tiers(totals, ctx.constraints, ctx.next_tier)
    if left:
        for shape, count in ctx.constraints:
            run.unplaceable.append(ctx.unplaced(shape, count, DemandKind.CONSTRAINT, None))
    else:
        run.new = run.new.grown(totals.new)
        run.needed = totals.busy_pods()
        run.fallen += sum(moved.values())
    run.by_step[Why.CONSTRAINTS] = [a - b for a, b in zip(run.new.count, before, strict=True)]


def gangs(run: Run, packer: Packer, which: Sequence[PlacementGroup]) -> None:
    """Placement groups, one at a time, all or nothing (as many whole copies as fit)."""
    ctx = run.ctx
    kind = DemandKind.PLACEMENT_GROUP
    for pg in which:
        vecs = ctx.gang_vecs[pg]
        too_big = [v for v in vecs if not ctx.fits_a_group(v)]
        if too_big:
            first = ctx.unplaced(too_big[0], pg.count, kind, pg.strategy)
            reason, why = no_fit(ctx, first.resources, first.selectors)
            detail = "placement group with a bundle " + (
                f"that cannot be placed: {why}"
                if first.selectors
                else f"no worker group can hold: {first.resources}"
            )
            run.unplaceable += [
                ctx.unplaced(v, pg.count, kind, pg.strategy, reason, detail) for v in vecs
            ]
            continue
        missing = pg.count - _place_gang(packer, vecs, pg)
        if missing and pg.strategy is Strategy.STRICT_PACK:
            run.hidden += (len(pg.bundles) - 1) * missing  # counted as bundles
        for v in vecs if missing else ():
            run.unplaceable.append(ctx.unplaced(v, missing, kind, pg.strategy))


def tasks(run: Run, packer: Packer) -> None:
    """Tasks and actors: free capacity first, then new pods, under upscalingSpeed.

    The rate limit defers, it never buys other pods (Ray's launcher rate-limits the pods the
    scheduler chose): demand is placed without it first, then each group keeps at most what
    the limit allows of the pods it got, and what they cannot hold waits for the next round
    (``UnplaceableReason.UPSCALING_SPEED``). minReplicas, constraint and placement-group pods
    are exempt, as in Ray's ``_get_concurrent_resource_demand_to_launch``.
    """
    ctx = run.ctx
    before = list(packer.new.count)
    room = speed_room(ctx, before)
    trial = packer.fork()
    eager_left, moved = place_tiers(trial, ctx.tasks, ctx.next_tier)
    eager: dict[Vec, int] = {}
    for shape, count in eager_left:
        eager[shape] = eager.get(shape, 0) + count
    added = [a - b for a, b in zip(trial.new.count, before, strict=True)]
    if all(a <= r for a, r in zip(added, room, strict=True)):
        packer.adopt(trial)
        left = eager_left
    else:
        packer.paced([min(a, r) for a, r in zip(added, room, strict=True)])
        left, moved = place_tiers(packer, ctx.tasks, ctx.next_tier, moved)
        packer.paced(None)
        run.deferred_cost += trial.new.cost() - packer.new.cost()
    for shape, count in left:
        deferred = min(count, max(0, count - eager.get(shape, 0)))
        if deferred:
            run.deferred += deferred
            run.unplaceable.append(_deferred(ctx, shape, deferred))
        if count > deferred:
            run.unplaceable.append(ctx.unplaced(shape, count - deferred, DemandKind.TASK, None))
    added = [a - b for a, b in zip(packer.new.count, before, strict=True)]
    run.by_step[Why.TASKS] = added
    run.fallen += sum(moved.values())
    run.speed_left = [r - a for r, a in zip(room, added, strict=True)]


def demand_in_one_queue(run: Run, packer: Packer) -> None:
    """STRICT_SPREAD groups, then every other bundle and task in one first-fit-decreasing
    queue; the run is valid only if every placement group is placed whole and upscalingSpeed
    holds."""
    ctx = run.ctx
    gangs(run, packer, [pg for pg in ctx.gangs if pg.strategy is Strategy.STRICT_SPREAD])
    before = list(packer.new.count)
    room = speed_room(ctx, before)
    queue = list(ctx.tasks)
    gang_vecs: set[Vec] = set()
    for pg in ctx.gangs:
        if pg.strategy is Strategy.STRICT_SPREAD:
            continue
        vecs = ctx.gang_vecs[pg]
        if not all(ctx.fits_a_group(v) for v in vecs):
            gangs(run, packer, [pg])  # reported whole as no_group_fits
            continue
        for v in vecs:
            gang_vecs.add(v)
            queue.append((v, pg.count))
    left, moved = place_tiers(packer, queue, ctx.next_tier)
    run.fallen += sum(moved.values())
    for shape, count in left:
        run.valid = run.valid and shape not in gang_vecs
        run.unplaceable.append(ctx.unplaced(shape, count, DemandKind.TASK, None))
    added = [a - b for a, b in zip(packer.new.count, before, strict=True)]
    run.valid = run.valid and all(a <= r for a, r in zip(added, room, strict=True))
    run.by_step[Why.DEMAND] = added
    run.speed_left = [r - a for r, a in zip(room, added, strict=True)]


def _place_gang(packer: Packer, vecs: Sequence[Vec], pg: PlacementGroup) -> int:
    """Place as many whole copies of one placement group (its shapes as ``vecs``) as fit;
    returns how many."""
    count = pg.count
    if pg.strategy is Strategy.STRICT_SPREAD:
        if (
            count > 1
            and len(set(vecs)) == 1
            and place_spread_copies(packer, vecs[0], len(vecs), count)
        ):
            return count
        for done in range(count):
            if not place_spread(packer, vecs):
                return done
        return count
    shape = [(v, 1) for v in vecs]

    def fits(n: int) -> Packer | None:
        trial = packer.fork()
        return None if trial.place([(v, c * n) for v, c in shape]) else trial

    whole = fits(count)
    if whole is not None:
        packer.adopt(whole)
        return count
    lo, hi, best = 0, count - 1, None  # the largest n in [lo, hi] that fits, each on a fork
    while lo < hi:
        mid = (lo + hi + 1) // 2
        trial = fits(mid)
        if trial is not None:
            lo, best = mid, trial
        else:
            hi = mid - 1
    if best is not None:
        packer.adopt(best)
    return lo


def _deferred(ctx: Context, shape: Vec, count: int) -> Unplaceable:
    why, detail = UnplaceableReason.UPSCALING_SPEED, "deferred to the next round: upscalingSpeed"
    return ctx.unplaced(shape, count, DemandKind.TASK, None, why, detail)
