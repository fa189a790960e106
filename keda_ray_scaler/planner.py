"""``plan(PlanningInput) -> Plan``: replicas per worker group, removable pods, unplaceable demand.

Pure: no I/O, no clock, no environment. The steps follow Ray's autoscaler
(``ResourceDemandScheduler.schedule`` in ``ray/autoscaler/v2/scheduler.py``):

1. minReplicas: new pods for every group below its minimum.
2. request_resources constraints: bin-packed against the TOTAL capacity of running and pending
   pods plus the new pods so far; new pods are added if they do not fit. Pods they touch are
   needed (never removable).
3. Placement groups, one gang at a time, all or nothing: STRICT_PACK as one combined bundle,
   PACK and SPREAD as their bundles (Ray flattens both), STRICT_SPREAD on distinct pods.
4. Tasks and actors: free capacity of running and pending pods first, then new pods.
   upscalingSpeed caps the pods these add (Ray: pending pods per group at most
   ``max(5, int(speed * max(running, 1)))``; minReplicas, constraint and placement-group pods
   are exempt, as in Ray).
5. Scale-down: idle pods nothing needs become removable, longest idle first.

Draining and victim pods never receive demand; victims also give no capacity and are not
counted toward ``desired``. The safety floor (pods that are not victims) wins over
maxReplicas: the HPA clamps to the ScaledObject's maxReplicaCount itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from keda_ray_scaler.model import (
    Bundle,
    DemandKind,
    GroupPlan,
    NodeStatus,
    Plan,
    PlanningInput,
    Resources,
    Strategy,
    Unplaceable,
    UnplaceableReason,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.packing import (
    GroupScorer,
    GroupSpec,
    NewPods,
    Packer,
    ShapeOrderer,
    Vec,
    dominant_share_orderer,
    fit_count,
    need_of,
    ray_scorer,
)

#: Ray's AUTOSCALER_UPSCALING_INITIAL_NUM_NODES: pods a group may have pending at any speed.
UPSCALING_INITIAL_PODS = 5

_NO_CAP = 1 << 62


class _Index:
    """Resource names <-> vector positions, sorted so vectors are deterministic."""

    def __init__(self, names: set[str]) -> None:
        self.names = tuple(sorted(names))
        self.pos = {n: i for i, n in enumerate(self.names)}

    def vec(self, res: Resources) -> Vec:
        out = [0] * len(self.names)
        for name, amount in res.units:
            out[self.pos[name]] = amount
        return tuple(out)

    def res(self, vec: Vec) -> Resources:
        return Resources(tuple((n, a) for n, a in zip(self.names, vec, strict=True) if a))


def _resource_names(inp: PlanningInput) -> set[str]:
    names: set[str] = set()
    for g in inp.cluster.worker_groups:
        names.update(k for k, _ in g.resources)
    for node in inp.nodes:
        names.update(k for k, _ in node.total)
        names.update(k for k, _ in node.available)
    d = inp.demand
    for b in (*d.bundles, *d.constraints):
        names.update(k for k, _ in b.resources)
    for pg in d.placement_groups:
        for r in pg.bundles:
            names.update(k for k, _ in r)
    return names


def _pod_order(node: WorkerNode, group: WorkerGroup) -> tuple[int, float, str]:
    """Which pods take demand first: pending, then not yet idle long enough, least idle."""
    if node.status is NodeStatus.PENDING:
        return (0, 0.0, node.pod)
    return (1 if node.idle_s >= group.idle_timeout_s else 0, node.idle_s, node.pod)


def _combined(bundles: Sequence[Resources]) -> Resources:
    total = Resources()
    for b in bundles:
        total = total + b
    return total


def plan(
    inp: PlanningInput,
    *,
    scorer: GroupScorer = ray_scorer,
    orderer: ShapeOrderer = dominant_share_orderer,
    lookahead: int = 8,
) -> Plan:
    """Decide every worker group's replicas for ``inp``; see the module docstring."""
    cluster = inp.cluster
    wgroups = cluster.worker_groups
    gidx = {g.name: i for i, g in enumerate(wgroups)}
    index = _Index(_resource_names(inp))
    specs = [GroupSpec(g.name, index.vec(g.resources), g.cost) for g in wgroups]
    gpu_index = index.pos.get("GPU", -1)
    reasons: list[str] = []

    current = [0] * len(wgroups)
    floor = [0] * len(wgroups)
    running = [0] * len(wgroups)
    pending = [0] * len(wgroups)
    usable: list[tuple[tuple[int, float, str], int, WorkerNode]] = []
    for node in inp.nodes:
        gi = gidx.get(node.group)
        if gi is None:
            reasons.append(f"pod {node.pod}: unknown worker group {node.group!r}, ignored")
            continue
        current[gi] += 1
        if node.status is NodeStatus.VICTIM:
            continue
        floor[gi] += 1
        if node.status is NodeStatus.PENDING:
            pending[gi] += 1
        elif node.status is NodeStatus.RUNNING:
            running[gi] += 1
        if node.status in (NodeStatus.RUNNING, NodeStatus.PENDING):
            usable.append((_pod_order(node, wgroups[gi]), gi, node))
    usable.sort(key=lambda t: (t[0], t[1]))

    hard = [max(0, g.max_replicas - floor[i]) for i, g in enumerate(wgroups)]
    budget = _NO_CAP if cluster.max_workers is None else max(0, cluster.max_workers - sum(floor))
    new = NewPods(specs, hard, budget)

    # 1. minReplicas
    for i, g in enumerate(wgroups):
        short = g.min_replicas - floor[i]
        if short > 0:
            new.add(i, short)  # minReplicas is not held back by maxWorkers or maxReplicas
            new.budget = max(0, new.budget)
            new.headroom[i] = max(0, new.headroom[i])
            reasons.append(f"{g.name}: {short} new pod(s) to reach minReplicas {g.min_replicas}")
    min_new = list(new.count)

    unplaceable: list[Unplaceable] = []

    # 2. request_resources constraints, against total capacity
    needed: set[str] = set()
    if inp.demand.constraints:
        totals = Packer(
            specs,
            [(g, index.vec(n.total), index.vec(n.total), n.pod) for _, g, n in usable],
            new,
            scorer=scorer,
            orderer=orderer,
            lookahead=lookahead,
            gpu_index=gpu_index,
        )
        left = totals.place(_shapes(index, inp.demand.constraints))
        new = totals.new
        needed = totals.busy_pods()
        for shape, count in left:
            unplaceable.append(_unplaceable(index, shape, count, DemandKind.CONSTRAINT, None))
        for i, g in enumerate(wgroups):
            added = new.count[i] - min_new[i]
            if added:
                reasons.append(f"{g.name}: {added} new pod(s) for request_resources constraints")
        # the constraint pods are new and wholly free for demand
        fresh = NewPods(specs, new.headroom, new.budget)
        fresh.count = list(new.count)
        fresh.open = {
            (i, s.capacity): n for i, (s, n) in enumerate(zip(specs, new.count, strict=True)) if n
        }
        new = fresh
    before_demand = list(new.count)

    packer = Packer(
        specs,
        [(g, index.vec(n.total), index.vec(n.available), n.pod) for _, g, n in usable],
        new,
        scorer=scorer,
        orderer=orderer,
        lookahead=lookahead,
        gpu_index=gpu_index,
    )

    # 3. placement groups, all or nothing per gang
    pgs = sorted(
        inp.demand.placement_groups,
        key=lambda p: (
            p.strategy is not Strategy.STRICT_SPREAD,
            -len(p.bundles),
            p.strategy,
            p.bundles,
        ),
    )
    for pg in pgs:
        if pg.count <= 0 or not pg.bundles:
            continue
        placed = _place_gangs(packer, index, pg.strategy, pg.bundles, pg.count)
        if placed < pg.count:
            missing = pg.count - placed
            shapes = (
                [_combined(pg.bundles)] if pg.strategy is Strategy.STRICT_PACK else list(pg.bundles)
            )
            for res in shapes:
                unplaceable.append(
                    _unplaceable(
                        index, index.vec(res), missing, DemandKind.PLACEMENT_GROUP, pg.strategy
                    )
                )
    for i, g in enumerate(wgroups):
        added = packer.new.count[i] - before_demand[i]
        if added:
            reasons.append(f"{g.name}: {added} new pod(s) for placement groups")
    exempt = list(packer.new.count)

    # 4. tasks and actors, with upscalingSpeed
    speed = cluster.upscaling_speed
    hard_left = list(packer.new.headroom)
    for i in range(len(wgroups)):
        allowed = max(UPSCALING_INITIAL_PODS, int(speed * max(running[i], 1)))
        packer.new.headroom[i] = min(hard_left[i], max(0, allowed - pending[i] - exempt[i]))
    tasks = [b for b in inp.demand.bundles if b.resources]
    left = packer.place(_shapes(index, tasks))
    for i, g in enumerate(wgroups):
        added = packer.new.count[i] - exempt[i]
        if added:
            reasons.append(f"{g.name}: {added} new pod(s) for pending tasks and actors")
        packer.new.headroom[i] = hard_left[i] - added
    for shape, count in left:
        unplaceable.append(_unplaceable(index, shape, count, DemandKind.TASK, None))

    # reasons for what is left, now that the limits are known
    final = packer.new
    unplaceable = [_explain(u, index, specs, final, hard_left, wgroups) for u in unplaceable]

    busy = packer.busy_pods() | needed
    groups = _group_plans(inp, wgroups, gidx, floor, current, final.count, busy, reasons)
    return Plan(groups=groups, unplaceable=_merge(unplaceable), reasons=tuple(reasons))


def _shapes(index: _Index, bundles: Sequence[Bundle]) -> list[tuple[Vec, int]]:
    return [(index.vec(b.resources), b.count) for b in bundles if b.resources and b.count > 0]


def _place_gangs(
    packer: Packer, index: _Index, strategy: Strategy, bundles: Sequence[Resources], count: int
) -> int:
    """Place as many whole copies of one placement group as fit; returns how many."""
    if strategy is Strategy.STRICT_SPREAD:
        vecs = [index.vec(b) for b in bundles]
        for done in range(count):
            if not packer.place_spread(vecs):
                return done
        return count
    if strategy is Strategy.STRICT_PACK:
        shape = [(index.vec(_combined(bundles)), 1)]
    else:
        shape = [(index.vec(b), 1) for b in bundles]

    def attempt(n: int) -> bool:
        state = packer.snapshot()
        if packer.place([(s, c * n) for s, c in shape]):
            packer.restore(state)
            return False
        return True

    if attempt(count):
        return count
    lo, hi = 0, count - 1  # largest n in [lo, hi] that fits, found on a clean state
    while lo < hi:
        mid = (lo + hi + 1) // 2
        state = packer.snapshot()
        ok = attempt(mid)
        packer.restore(state)
        if ok:
            lo = mid
        else:
            hi = mid - 1
    if lo:
        attempt(lo)
    return lo


def _unplaceable(
    index: _Index, shape: Vec, count: int, kind: DemandKind, strategy: Strategy | None
) -> Unplaceable:
    return Unplaceable(index.res(shape), count, UnplaceableReason.NO_GROUP_FITS, "", kind, strategy)


def _explain(
    u: Unplaceable,
    index: _Index,
    specs: Sequence[GroupSpec],
    new: NewPods,
    hard_left: Sequence[int],
    wgroups: Sequence[WorkerGroup],
) -> Unplaceable:
    """Fill in the reason: no group fits, maxWorkers, upscalingSpeed, or maxReplicas."""
    need = need_of(index.vec(u.resources))
    fitting = [i for i, s in enumerate(specs) if fit_count(s.capacity, need) > 0]
    if not fitting:
        detail = f"no worker group has pods that can hold {u.resources}"
        reason = UnplaceableReason.NO_GROUP_FITS
    elif new.budget <= 0:
        reason, detail = UnplaceableReason.MAX_WORKERS, "maxWorkers reached"
    elif u.kind is DemandKind.TASK and any(
        hard_left[i] - new.count[i] > 0 and new.headroom[i] > 0 for i in fitting
    ):
        names = ", ".join(wgroups[i].name for i in fitting)
        reason, detail = UnplaceableReason.UPSCALING_SPEED, f"deferred: pods pending in {names}"
    else:
        names = ", ".join(f"{wgroups[i].name} ({wgroups[i].max_replicas})" for i in fitting)
        reason, detail = UnplaceableReason.MAX_REPLICAS, f"at maxReplicas: {names}"
    return Unplaceable(u.resources, u.count, reason, detail, u.kind, u.strategy)


def _merge(items: Sequence[Unplaceable]) -> tuple[Unplaceable, ...]:
    counts: dict[tuple[Resources, UnplaceableReason, str, DemandKind, str], int] = defaultdict(int)
    for u in items:
        counts[(u.resources, u.reason, u.detail, u.kind, u.strategy or "")] += u.count
    return tuple(
        Unplaceable(res, n, reason, detail, kind, Strategy(strat) if strat else None)
        for (res, reason, detail, kind, strat), n in sorted(counts.items())
    )


def _group_plans(
    inp: PlanningInput,
    wgroups: Sequence[WorkerGroup],
    gidx: Mapping[str, int],
    floor: Sequence[int],
    current: Sequence[int],
    new: Sequence[int],
    busy: set[str],
    reasons: list[str],
) -> dict[str, GroupPlan]:
    by_group: dict[int, list[WorkerNode]] = defaultdict(list)
    for node in inp.nodes:
        gi = gidx.get(node.group)
        if gi is not None and node.status is not NodeStatus.VICTIM:
            by_group[gi].append(node)
    out: dict[str, GroupPlan] = {}
    for i, g in enumerate(wgroups):
        nodes = by_group[i]
        lines = [r.split(": ", 1)[1] for r in reasons if r.startswith(g.name + ": ")]
        idle = sorted(
            (
                n
                for n in nodes
                if n.status is NodeStatus.RUNNING
                and n.pod not in busy
                and n.available == n.total
                and n.idle_s >= g.idle_timeout_s
            ),
            key=lambda n: (-n.idle_s, n.pod),
        )
        room = max(0, floor[i] - g.min_replicas) if new[i] == 0 else 0
        removable = tuple(n.pod for n in idle[:room])
        if len(idle) > len(removable):
            lines.append(
                f"{len(idle) - len(removable)} idle pod(s) kept for minReplicas {g.min_replicas}"
            )
        for n in idle[:room]:
            lines.append(f"pod {n.pod} removable: idle {n.idle_s:g}s >= {g.idle_timeout_s:g}s")
        n_busy = sum(1 for n in nodes if n.pod in busy)
        kept = floor[i] - len(removable)
        desired = min(max(kept + new[i], g.min_replicas), g.max_replicas)
        target = max(desired, floor[i])
        if target > desired:
            lines.append(f"target held at {floor[i]} pods that are not victims (desired {desired})")
        out[g.name] = GroupPlan(
            name=g.name,
            target=target,
            desired=desired,
            floor=floor[i],
            current=current[i],
            busy=n_busy,
            new=new[i],
            removable=removable,
            reasons=tuple(lines),
        )
    return out
