"""Frozen values shared by every layer: resources, demand, worker groups, nodes, planner input.

Pure: no I/O, no clock, no environment. Amounts are exact integers in Ray's fixed-point
granularity (1/10000 of a unit, ``ray._private.ray_constants`` ``MEMORY_RESOURCE_UNIT`` aside),
so packing arithmetic never accumulates float error and plans are reproducible byte for byte.
The planner's answer (plans, decisions, unplaceable demand) is in :mod:`~keda_ray_scaler.decisions`.
Node labels and label selectors are in :mod:`~keda_ray_scaler.labels`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from keda_ray_scaler.labels import Labels, Selectors

#: Ray's FixedPoint granularity: every resource amount is a multiple of 1/10000.
RESOURCE_SCALE = 10_000

#: KubeRay's upscaling speed when ``upscalingMode`` is unset or ``Default``: no rate limit.
DEFAULT_UPSCALING_SPEED = 1000.0

#: KubeRay's default ``idleTimeoutSeconds``: a worker group's idle timeout when none is given.
DEFAULT_IDLE_TIMEOUT_S = 60.0

#: A worker group's relative price of one pod when none is given (all groups alike).
DEFAULT_COST = 1.0

#: The largest Kubernetes replica count (``replicas`` is an int32): a worker group's
#: ``maxReplicas`` when none is given, and the bound a larger one is clamped to.
INT32_MAX = 2**31 - 1
#: The smallest Kubernetes int32 (a pod-deletion-cost is one).
INT32_MIN = -(2**31)

#: Resources whose amounts are bytes (accepted as Kubernetes quantities in files).
BYTE_RESOURCES = frozenset({"memory", "object_store_memory"})


@dataclass(frozen=True, slots=True, order=True)
class Resources:
    """An immutable resource vector, e.g. ``{CPU: 10, memory: 32Gi}``.

    ``units`` holds ``(name, amount * RESOURCE_SCALE)`` pairs sorted by name, zero amounts
    dropped, so two equal vectors are equal and hash equal whatever order they were built in.
    """

    units: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, amounts: Mapping[str, float | int] | None = None, **kw: float | int) -> Resources:
        """Build from plain numbers (``Resources.of(CPU=5)``); rounds to Ray's 0.0001."""
        merged: dict[str, float | int] = dict(amounts or {})
        merged.update(kw)
        return cls.from_units({k: to_units(v) for k, v in merged.items()})

    @classmethod
    def from_units(cls, units: Mapping[str, int]) -> Resources:
        """Build from fixed-point integer amounts; negative amounts are a programming error."""
        for name, amount in units.items():
            if amount < 0:
                raise ValueError(f"resource {name!r} has negative amount {amount}")
        return cls(tuple(sorted((k, v) for k, v in units.items() if v)))

    def as_dict(self) -> dict[str, int]:
        """The fixed-point amounts as a dict."""
        return dict(self.units)

    def to_float_dict(self) -> dict[str, float | int]:
        """Human amounts: ints where exact (``{"CPU": 5}``), floats otherwise."""
        return {k: from_units(v) for k, v in self.units}

    def get(self, name: str) -> int:
        """Fixed-point amount of ``name`` (0 when absent)."""
        for k, v in self.units:
            if k == name:
                return v
        return 0

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self.units)

    def __bool__(self) -> bool:
        return bool(self.units)

    def fits_in(self, other: Resources) -> bool:
        """True when every amount here is at most the same amount in ``other``."""
        available = dict(other.units)
        return all(v <= available.get(k, 0) for k, v in self.units)

    def __add__(self, other: Resources) -> Resources:
        total = dict(self.units)
        for k, v in other.units:
            total[k] = total.get(k, 0) + v
        return Resources.from_units(total)

    def __sub__(self, other: Resources) -> Resources:
        """Component-wise difference; raises ``ValueError`` if any amount would go negative."""
        left = dict(self.units)
        for k, v in other.units:
            left[k] = left.get(k, 0) - v
        return Resources.from_units(left)

    def scaled(self, times: int) -> Resources:
        """This vector multiplied by a non-negative integer."""
        return Resources.from_units({k: v * times for k, v in self.units})

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}: {from_units(v)}" for k, v in self.units) + "}"


def to_units(amount: float | int) -> int:
    """A plain amount in Ray's fixed point (rounded to 0.0001, as Ray's FixedPoint does)."""
    return round(amount * RESOURCE_SCALE)


def from_units(units: int) -> float | int:
    """Fixed point back to a plain amount; an int when exact."""
    whole, frac = divmod(units, RESOURCE_SCALE)
    return whole if frac == 0 else units / RESOURCE_SCALE


class DemandKind(enum.StrEnum):
    """Where a pending bundle comes from."""

    TASK = "task"  # pending tasks and actors (Ray does not tell them apart in demand)
    PLACEMENT_GROUP = "placement_group"
    CONSTRAINT = "constraint"  # ray.autoscaler.sdk.request_resources()


class Strategy(enum.StrEnum):
    """Ray placement-group strategies."""

    PACK = "PACK"
    SPREAD = "SPREAD"
    STRICT_PACK = "STRICT_PACK"
    STRICT_SPREAD = "STRICT_SPREAD"


@dataclass(frozen=True, slots=True)
class Bundle:
    """``count`` identical pending bundles of one resource shape and one list of selectors."""

    resources: Resources
    count: int = 1
    #: the label selectors in fallback order (canonical, ``labels.selectors_of``): only a node
    #: whose labels satisfy one may hold it; empty: any node
    selectors: Selectors = ()


@dataclass(frozen=True, slots=True)
class PlacementGroup:
    """``count`` identical pending placement groups; every one needs all its bundles at once."""

    strategy: Strategy
    bundles: tuple[Resources, ...]
    count: int = 1
    #: each bundle's label selectors, in bundle order (Ray's ``bundle_label_selector``); empty
    #: when no bundle has any
    selectors: tuple[Selectors, ...] = ()

    def __post_init__(self) -> None:
        if self.selectors and len(self.selectors) != len(self.bundles):
            raise ValueError(
                f"{len(self.selectors)} selector lists for {len(self.bundles)} bundles"
            )
        if self.selectors and not any(self.selectors):
            object.__setattr__(self, "selectors", ())

    def bundle_selectors(self, i: int) -> Selectors:
        """The selectors of bundle ``i`` (none when no bundle has any)."""
        return self.selectors[i] if self.selectors else ()


@dataclass(frozen=True, slots=True)
class Demand:
    """Everything the cluster is asked to hold."""

    bundles: tuple[Bundle, ...] = ()
    placement_groups: tuple[PlacementGroup, ...] = ()
    #: request_resources() floor: measured against total, not available, capacity.
    constraints: tuple[Bundle, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkerGroup:
    """One KubeRay worker group: one Deployment, one ScaledObject."""

    name: str
    resources: Resources  # Ray logical resources of ONE pod
    min_replicas: int = 0
    max_replicas: int = INT32_MAX
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    cost: float = DEFAULT_COST  # relative price of one pod
    #: the Ray node labels of its pods (the RayCluster's, and Ray's ``ray.io/node-group``)
    labels: Mapping[str, str] = Labels()
    #: among groups that can take a demand, a higher priority is chosen first (KubeRay 1.7)
    priority: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.labels, Labels):
            object.__setattr__(self, "labels", Labels(self.labels))


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A Ray cluster's worker groups and cluster-wide limits."""

    name: str
    worker_groups: tuple[WorkerGroup, ...]
    max_workers: int | None = None  # cap on worker pods across groups
    #: Ray's meaning: pending pods per group <= max(5, speed * running). KubeRay's default
    #: (``upscalingMode`` unset or ``Default``) is 1000, i.e. no rate limit; Conservative is 1.
    upscaling_speed: float = DEFAULT_UPSCALING_SPEED

    def group(self, name: str) -> WorkerGroup | None:
        """The worker group called ``name``, if any."""
        for g in self.worker_groups:
            if g.name == name:
                return g
        return None


class NodeStatus(enum.StrEnum):
    """Lifecycle of one worker pod as the planner sees it."""

    PENDING = "pending"  # launched, not yet a Ray node: full capacity, no idle decisions
    RUNNING = "running"
    DRAINING = "draining"  # Ray is draining it: never receives demand, still counts as a pod
    VICTIM = "victim"  # drained AND marked for deletion, confirmed: the pod is going away
    #: known not to become (or stay) a Ray node (``WorkerNode.failure`` says why): no
    #: capacity, no Ray state, removable at once without a drain
    FAILING = "failing"


class JoinFailure(enum.StrEnum):
    """Why a worker pod is known not to become (or stay) a Ray node."""

    NOT_JOINED = "not_joined"  # no Ray node within the join timeout
    UNSCHEDULABLE = "unschedulable"  # PodScheduled=False, reason Unschedulable: no node fits
    CONTAINER_FAILING = "container_failing"  # ImagePullBackOff, CrashLoopBackOff, ...
    RAY_NODE_DEAD = "ray_node_dead"  # its Ray node is DEAD while the pod lives


@dataclass(frozen=True, slots=True)
class WorkerNode:
    """One current worker pod."""

    pod: str
    group: str
    total: Resources
    available: Resources
    #: seconds idle, for a node without an idle-since time (0: not idle); read through
    #: :meth:`idle_at`
    idle_s: float = 0.0
    status: NodeStatus = NodeStatus.RUNNING
    node_id: str = ""  # Ray node id (hex), empty while pending
    failure: JoinFailure | None = None  # set exactly when ``status`` is FAILING
    #: the Ray node's labels (``NodeState.labels``); empty while it is no Ray node yet (then
    #: the planner reads its group's)
    labels: Mapping[str, str] = Labels()
    #: unix seconds since when the Ray node has been idle, as the agent keeps it across polls
    #: (0: not idle, or not known: then ``idle_s`` says); an idle node the agent reads again
    #: is the same node, its series unchanged, while its idle time grows with the clock
    idle_since_s: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.labels, Labels):
            object.__setattr__(self, "labels", Labels(self.labels))

    def idle_at(self, now_s: float) -> float:
        """Seconds idle at ``now_s`` (unix seconds): since its idle-since time, at least 0,
        when it has one; else ``idle_s``."""
        since = self.idle_since_s
        return max(now_s - since, 0.0) if since > 0 else self.idle_s


@dataclass(frozen=True, slots=True)
class PlanningInput:
    """Everything a plan depends on: no clock, no environment, no I/O."""

    cluster: ClusterSpec
    demand: Demand = Demand()
    nodes: tuple[WorkerNode, ...] = ()
    #: (group, most new pods it may get now) for groups backed off after pods that failed to
    #: join (the agent's ``agent/backoff.py``); a group not listed has no such limit
    launch_limits: tuple[tuple[str, int], ...] = ()
    #: when the input was read (unix seconds): the nodes' idle times are taken at it
    #: (:meth:`WorkerNode.idle_at`); a node without an idle-since time needs none
    now_s: float = 0.0

    def launch_limit(self, group: str) -> int | None:
        """The most new pods ``group`` may get now, or None when it is not backed off."""
        for name, limit in self.launch_limits:
            if name == group:
                return limit
        return None


def total_count(bundles: Iterable[Bundle]) -> int:
    """How many bundles in all."""
    return sum(b.count for b in bundles)
