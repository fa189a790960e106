"""The planning context: everything derived once from a ``PlanningInput``; pure.

Like Ray v2's ``ScheduleContext``: built once, read by every rule. Resource names become
vector positions (:mod:`.index`, with Ray's implicit resources); pods above a cap are set aside
(:mod:`.caps`).

Label selectors are label ids and admission classes (:mod:`.admission`): labelled demand ends
in its label id, a pod's vector in its admission class, a group's spec lists what each class
admits. The existing pods' vectors are built once here, for every run.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from keda_ray_scaler.decisions import Decision, DecisionKind, Unplaceable, UnplaceableReason, Why
from keda_ray_scaler.labels import Selectors
from keda_ray_scaler.model import (
    Bundle,
    DemandKind,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.packing.shapes import (
    UNBOUNDED,
    GroupSpec,
    Vec,
    fit_count,
    label_of,
    need_of,
    scarcity_rank,
)
from keda_ray_scaler.planner.admission import Admission, gang_items
from keda_ray_scaler.planner.caps import CapCut, cut_to_caps
from keda_ray_scaler.planner.index import Index, Pod


@dataclass(frozen=True, slots=True)
class Context:
    """Everything derived once from the input (per-group lists are indexed like the groups)."""

    inp: PlanningInput
    index: Index
    specs: tuple[GroupSpec, ...]
    gpu_index: int
    current: tuple[int, ...]  # pods, victims included
    floor: tuple[int, ...]  # pods that are not victims
    staying: tuple[int, ...]  # pods that are not victims and not above a cap
    running: tuple[int, ...]
    pending: tuple[int, ...]
    usable: tuple[tuple[int, WorkerNode], ...]  # (group, node) in the order they take demand
    #: the usable pods as the packer takes them, ``(group, total, free, pod)``; a pending pod
    #: wholly free (not yet a Ray node); and with ``free`` their total (request_resources)
    pods_free: tuple[Pod, ...]
    pods_total: tuple[Pod, ...]
    hard: tuple[int, ...]  # new pods maxReplicas (and a launch back-off) allow
    backed_off: tuple[bool, ...]  # the group's new pods are limited by a launch back-off
    budget: int  # new pods maxWorkers allows
    tasks: tuple[tuple[Vec, int], ...]
    constraints: tuple[tuple[Vec, int], ...]
    gangs: tuple[PlacementGroup, ...]
    caps: CapCut
    ignored: tuple[Decision, ...]  # pods of unknown groups
    adm: Admission  # the label ids (none without label selectors)
    next_tier: Mapping[Vec, Vec]  # a demand vector -> its selectors' next fallback tier
    gang_vecs: Mapping[PlacementGroup, tuple[Vec, ...]]  # the vectors of gang_shapes(pg)
    ranks: tuple[int, ...]  # the groups' priorities below the highest, lowest first
    #: a demand vector -> its resources and selectors (:meth:`unplaced`, memoised)
    seen: dict[Vec, tuple[Resources, Selectors]]

    @property
    def groups(self) -> tuple[WorkerGroup, ...]:
        """The worker groups, in input order."""
        return self.inp.cluster.worker_groups

    def fits_a_group(self, vec: Vec) -> bool:
        """Some group's new pod can hold ``vec`` (labels admitting)."""
        need, label = need_of(vec, self.index.entries), label_of(vec, self.index.entries)
        return any(s.takes(label) and fit_count(s.capacity, need) > 0 for s in self.specs)

    def pod_vec(self, g: int, node: WorkerNode, res: Resources) -> Vec:
        """Pod ``node``'s (of group ``g``) ``res`` in its admission class (by its labels; a
        pod without labels has its group's)."""
        if not len(self.adm):
            return self.index.capacity(res)
        return self.index.pod(res, self.adm.pod_class(g, node))

    def selectors_of(self, vec: Vec) -> Selectors:
        """The selectors of a demand vector (its label id's)."""
        return self.adm.owner(label_of(vec, self.index.entries))

    def unplaced(
        self,
        vec: Vec,
        count: int,
        kind: DemandKind,
        strategy: Strategy | None,
        why: UnplaceableReason = UnplaceableReason.NO_GROUP_FITS,
        detail: str = "",
    ) -> Unplaceable:
        """Unplaced demand; without ``detail``, its reason decided later
        (:func:`.unplaceable.explain`)."""
        known = self.seen.get(vec)
        if known is None:
            known = self.seen[vec] = (self.index.res(vec), self.selectors_of(vec))
        return Unplaceable(known[0], count, why, detail, kind, strategy, known[1])


def gang_shapes(pg: PlacementGroup) -> list[Resources]:
    """The shapes a placement group is placed as: STRICT_PACK is one combined bundle."""
    bundles = [b for b in pg.bundles if b]
    if pg.strategy is not Strategy.STRICT_PACK:
        return bundles
    total = Resources()
    for b in bundles:
        total = total + b
    return [total]


def build_context(inp: PlanningInput) -> Context:
    """The context of one planning run."""
    cluster = inp.cluster
    wgroups = cluster.worker_groups
    gidx = {g.name: i for i, g in enumerate(wgroups)}
    d = inp.demand
    bundles, floors, pgs = d.bundles, d.constraints, d.placement_groups
    adm = Admission(inp)
    index = Index(_resource_names(inp, [*bundles, *floors], pgs), len(adm) > 0)
    specs = tuple(_spec(index, adm, i, g) for i, g in enumerate(wgroups))
    pods, current, ignored = _by_group(inp, gidx)
    caps = cut_to_caps(cluster, pods, inp.now_s)
    leaving = {p for group in caps.leaving for p in group}
    floor = [len(p) for p in pods]
    staying = [f - len(gone) for f, gone in zip(floor, caps.leaving, strict=True)]
    budget = (
        UNBOUNDED if cluster.max_workers is None else max(0, cluster.max_workers - sum(staying))
    )
    gangs = [pg for pg in pgs if pg.count > 0 and any(pg.bundles)]
    gang_vecs = {pg: _gang_vecs(index, adm, pg) for pg in gangs}
    tasks, next_tasks = _shapes(index, adm, bundles)
    floor_shapes, next_floors = _shapes(index, adm, floors)
    usable = _usable(wgroups, pods, leaving, inp.now_s)
    pods_free, pods_total = index.pods(usable, adm.pod_class if len(adm) else None)
    return Context(
        inp=inp,
        index=index,
        specs=specs,
        gpu_index=index.pos.get("GPU", -1),
        current=tuple(current),
        floor=tuple(floor),
        staying=tuple(staying),
        running=tuple(_count(p, NodeStatus.RUNNING, leaving) for p in pods),
        pending=tuple(_count(p, NodeStatus.PENDING, leaving) for p in pods),
        usable=usable,
        pods_free=pods_free,
        pods_total=pods_total,
        hard=tuple(_new_pods_allowed(inp, g, staying[i]) for i, g in enumerate(wgroups)),
        backed_off=tuple(inp.launch_limit(g.name) is not None for g in wgroups),
        budget=budget,
        tasks=tasks,
        constraints=floor_shapes,
        gangs=_order_gangs(specs, gangs, gang_vecs),
        caps=caps,
        ignored=tuple(
            Decision(DecisionKind.IGNORE, 1, Why.UNKNOWN_GROUP, (pod,)) for pod in ignored
        ),
        adm=adm,
        next_tier={**next_tasks, **next_floors},
        gang_vecs=gang_vecs,
        ranks=tuple(sorted({g.priority for g in wgroups}))[:-1],
        seen={},
    )


def _by_group(
    inp: PlanningInput, gidx: Mapping[str, int]
) -> tuple[list[list[WorkerNode]], list[int], list[str]]:
    """Per group its pods that are not victims, and its pods; the pods of unknown groups."""
    n = len(inp.cluster.worker_groups)
    pods: list[list[WorkerNode]] = [[] for _ in range(n)]
    current = [0] * n
    ignored: list[str] = []
    for node in inp.nodes:
        gi = gidx.get(node.group)
        if gi is None:
            ignored.append(node.pod)
            continue
        current[gi] += 1
        if node.status is not NodeStatus.VICTIM:
            pods[gi].append(node)
    return pods, current, ignored


def _usable(
    wgroups: Sequence[WorkerGroup],
    pods: Sequence[Sequence[WorkerNode]],
    leaving: set[str],
    now_s: float,
) -> tuple[tuple[int, WorkerNode], ...]:
    """(group, pod) of the pods that may take demand, in the order they take it (idle times
    at ``now_s``)."""
    usable = sorted(
        (
            (_pod_order(n, wgroups[gi], now_s), gi, n)
            for gi, group_pods in enumerate(pods)
            for n in group_pods
            if n.pod not in leaving and n.status in (NodeStatus.RUNNING, NodeStatus.PENDING)
        ),
        key=lambda t: (t[0], t[1]),
    )
    return tuple((g, node) for _, g, node in usable)


def _spec(index: Index, adm: Admission, g: int, group: WorkerGroup) -> GroupSpec:
    capacity = index.capacity(group.resources)
    return GroupSpec(group.name, capacity, group.cost, group.priority, admits=adm.classes(g))


def _new_pods_allowed(inp: PlanningInput, group: WorkerGroup, staying: int) -> int:
    """New pods maxReplicas allows, at most the group's launch limit when it is backed off."""
    room = max(0, group.max_replicas - staying)
    limit = inp.launch_limit(group.name)
    return room if limit is None else min(room, max(0, limit))


def _count(pods: Sequence[WorkerNode], status: NodeStatus, leaving: set[str]) -> int:
    return sum(1 for n in pods if n.status is status and n.pod not in leaving)


def _resource_names(
    inp: PlanningInput, bundles: Sequence[Bundle], pgs: Sequence[PlacementGroup]
) -> set[str]:
    vectors = {g.resources.units for g in inp.cluster.worker_groups}
    vectors.update(n.total.units for n in inp.nodes)
    vectors.update(n.available.units for n in inp.nodes)
    vectors.update(b.resources.units for b in bundles)
    vectors.update(r.units for pg in pgs for r in pg.bundles)
    return {name for units in vectors for name, _ in units}


def _pod_order(node: WorkerNode, group: WorkerGroup, now_s: float) -> tuple[int, float, str]:
    """Which pods take demand first: pending, then not yet idle long enough, least idle."""
    if node.status is NodeStatus.PENDING:
        return (0, 0.0, node.pod)
    idle = node.idle_at(now_s)
    return (1 if idle >= group.idle_timeout_s else 0, idle, node.pod)


def _shapes(
    index: Index, adm: Admission, bundles: Sequence[Bundle]
) -> tuple[tuple[tuple[Vec, int], ...], dict[Vec, Vec]]:
    """Demand as vectors at its first tier, and each tier's next (:mod:`.admission`)."""
    if not len(adm):
        kept = (b for b in bundles if b.resources and b.count > 0)
        return tuple((index.vec(b.resources), b.count) for b in kept), {}
    out: list[tuple[Vec, int]] = []
    next_tier: dict[Vec, Vec] = {}
    for b in bundles:
        if not b.resources or b.count <= 0:
            continue
        base = index.vec(b.resources)
        tiers = [index.labelled(base, i) for i in adm.ids(b.selectors, True)] or [base]
        out.append((tiers[0], b.count))
        next_tier.update(itertools.pairwise(tiers))
    return tuple(out), next_tier


def _gang_vecs(index: Index, adm: Admission, pg: PlacementGroup) -> tuple[Vec, ...]:
    return tuple(
        index.labelled(index.vec(r), next(iter(adm.ids(sels, tiered)), 0))
        for r, (sels, tiered) in zip(gang_shapes(pg), gang_items(pg), strict=True)
    )


def _order_gangs(
    specs: Sequence[GroupSpec],
    gangs: Sequence[PlacementGroup],
    vecs: Mapping[PlacementGroup, tuple[Vec, ...]],
) -> tuple[PlacementGroup, ...]:
    """Most constrained first: STRICT_SPREAD, then by the scarcest, largest bundle."""

    def key(pg: PlacementGroup) -> tuple[bool, tuple[float, ...], int, str, str]:
        first = min(scarcity_rank(v, specs) for v in vecs[pg])
        return (
            pg.strategy is not Strategy.STRICT_SPREAD,
            first,
            -len(pg.bundles),
            pg.strategy.value,
            repr(pg.bundles),
        )

    return tuple(sorted(gangs, key=key))
