"""The planning context: everything derived once from a ``PlanningInput``; pure.

Like Ray v2's ``ScheduleContext``: built once, read by every rule. Resource names become
vector positions; pods above a cap are set aside (:mod:`.caps`).

Ray's implicit resources (``node:__internal_implicit_resource_*``, Ray Serve's
``max_replicas_per_node``: each replica asks ``1 / max_replicas_per_node`` of one) are kept in
demand and given to every pod as Ray's autoscaler (v1 ``_fits`` / ``_inplace_subtract``, v2
``_can_fit_any_request``) gives them: a node that does not list one has 1 of it. So demand
that asks only for one is planned one such resource per pod, and demand asking more than 1 is
unplaceable with a reason, never dropped. A node's explicit 0 of one cannot be told from an
absent one (``Resources`` drops zeros): read as 1, as Ray reads the node states it gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from keda_ray_scaler.decisions import Decision, DecisionKind, Why
from keda_ray_scaler.model import (
    RESOURCE_SCALE,
    Bundle,
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
    need_of,
    scarcity_rank,
)
from keda_ray_scaler.planner.caps import CapCut, cut_to_caps

#: Ray's ``IMPLICIT_RESOURCE_PREFIX``: a resource every node has as much of as asked.
IMPLICIT_RESOURCE_PREFIX = "node:__internal_implicit_resource_"


class Index:
    """Resource names <-> vector positions, sorted so vectors are deterministic."""

    def __init__(self, names: set[str]) -> None:
        self.names = tuple(sorted(names))
        self.pos = {n: i for i, n in enumerate(self.names)}
        self._memo: dict[tuple[tuple[str, int], ...], Vec] = {}
        self._capacity_memo: dict[tuple[tuple[str, int], ...], Vec] = {}
        #: What a pod has of each name when it does not list it: 1 of an implicit resource.
        self._implicit: Vec = tuple(
            RESOURCE_SCALE if n.startswith(IMPLICIT_RESOURCE_PREFIX) else 0 for n in self.names
        )

    def vec(self, res: Resources) -> Vec:
        """``res`` as a vector over this index."""
        units = res.units
        known = self._memo.get(units)
        if known is not None:
            return known
        out = [0] * len(self.names)
        for name, amount in units:
            out[self.pos[name]] = amount
        self._memo[units] = vec = tuple(out)
        return vec

    def capacity(self, res: Resources) -> Vec:
        """A pod's (or a group's) ``res`` as a vector, with 1 of each implicit resource unlisted.

        Demand goes through :meth:`vec`: a bundle that does not ask for one needs none.
        """
        known = self._capacity_memo.get(res.units)
        if known is not None:
            return known
        vec = self.vec(res)
        if any(self._implicit):
            vec = tuple(a or d for a, d in zip(vec, self._implicit, strict=True))
        self._capacity_memo[res.units] = vec
        return vec

    def res(self, vec: Vec) -> Resources:
        """A vector over this index as ``Resources``."""
        return Resources(tuple((n, a) for n, a in zip(self.names, vec, strict=True) if a))


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
    hard: tuple[int, ...]  # new pods maxReplicas (and a launch back-off) allow
    backed_off: tuple[bool, ...]  # the group's new pods are limited by a launch back-off
    budget: int  # new pods maxWorkers allows
    tasks: tuple[tuple[Vec, int], ...]
    constraints: tuple[tuple[Vec, int], ...]
    gangs: tuple[PlacementGroup, ...]
    caps: CapCut
    ignored: tuple[Decision, ...]  # pods of unknown groups

    @property
    def groups(self) -> tuple[WorkerGroup, ...]:
        """The worker groups, in input order."""
        return self.inp.cluster.worker_groups

    def fits_a_group(self, res: Resources) -> bool:
        """Some group's pod can hold ``res``."""
        need = need_of(self.index.vec(res))
        return any(fit_count(spec.capacity, need) > 0 for spec in self.specs)


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
    index = Index(_resource_names(inp, [*bundles, *floors], pgs))
    specs = tuple(GroupSpec(g.name, index.capacity(g.resources), g.cost) for g in wgroups)
    pods: list[list[WorkerNode]] = [[] for _ in wgroups]
    current = [0] * len(wgroups)
    ignored: list[str] = []
    for node in inp.nodes:
        gi = gidx.get(node.group)
        if gi is None:
            ignored.append(node.pod)
            continue
        current[gi] += 1
        if node.status is not NodeStatus.VICTIM:
            pods[gi].append(node)
    caps = cut_to_caps(cluster, pods)
    leaving = {p for group in caps.leaving for p in group}
    floor = [len(p) for p in pods]
    staying = [f - len(gone) for f, gone in zip(floor, caps.leaving, strict=True)]
    usable = sorted(
        (
            (_pod_order(n, wgroups[gi]), gi, n)
            for gi, group_pods in enumerate(pods)
            for n in group_pods
            if n.pod not in leaving and n.status in (NodeStatus.RUNNING, NodeStatus.PENDING)
        ),
        key=lambda t: (t[0], t[1]),
    )
    budget = (
        UNBOUNDED if cluster.max_workers is None else max(0, cluster.max_workers - sum(staying))
    )
    gangs = [pg for pg in pgs if pg.count > 0 and any(pg.bundles)]
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
        usable=tuple((g, node) for _, g, node in usable),
        hard=tuple(_new_pods_allowed(inp, g, staying[i]) for i, g in enumerate(wgroups)),
        backed_off=tuple(inp.launch_limit(g.name) is not None for g in wgroups),
        budget=budget,
        tasks=_shapes(index, bundles),
        constraints=_shapes(index, floors),
        gangs=_order_gangs(index, specs, gangs),
        caps=caps,
        ignored=tuple(
            Decision(DecisionKind.IGNORE, 1, Why.UNKNOWN_GROUP, (pod,)) for pod in ignored
        ),
    )


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


def _pod_order(node: WorkerNode, group: WorkerGroup) -> tuple[int, float, str]:
    """Which pods take demand first: pending, then not yet idle long enough, least idle."""
    if node.status is NodeStatus.PENDING:
        return (0, 0.0, node.pod)
    return (1 if node.idle_s >= group.idle_timeout_s else 0, node.idle_s, node.pod)


def _shapes(index: Index, bundles: Sequence[Bundle]) -> tuple[tuple[Vec, int], ...]:
    return tuple((index.vec(b.resources), b.count) for b in bundles if b.resources and b.count > 0)


def _order_gangs(
    index: Index, specs: Sequence[GroupSpec], gangs: Sequence[PlacementGroup]
) -> tuple[PlacementGroup, ...]:
    """Most constrained first: STRICT_SPREAD, then by the scarcest, largest bundle."""

    def key(pg: PlacementGroup) -> tuple[bool, tuple[float, ...], int, str, str]:
        first = min(scarcity_rank(index.vec(r), specs) for r in gang_shapes(pg))
        return (
            pg.strategy is not Strategy.STRICT_SPREAD,
            first,
            -len(pg.bundles),
            pg.strategy.value,
            repr(pg.bundles),
        )

    return tuple(sorted(gangs, key=key))
