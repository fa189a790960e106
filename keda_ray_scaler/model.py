"""Frozen values shared by every layer: resources, demand, worker groups, nodes and plans.

Pure: no I/O, no clock, no environment. Amounts are exact integers in Ray's fixed-point
granularity (1/10000 of a unit, ``ray._private.ray_constants`` ``MEMORY_RESOURCE_UNIT`` aside),
so packing arithmetic never accumulates float error and plans are reproducible byte for byte.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

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
    """``count`` identical pending bundles of one resource shape."""

    resources: Resources
    count: int = 1


@dataclass(frozen=True, slots=True)
class PlacementGroup:
    """``count`` identical pending placement groups; every one needs all its bundles at once."""

    strategy: Strategy
    bundles: tuple[Resources, ...]
    count: int = 1


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
    idle_s: float = 0.0
    status: NodeStatus = NodeStatus.RUNNING
    node_id: str = ""  # Ray node id (hex), empty while pending
    failure: JoinFailure | None = None  # set exactly when ``status`` is FAILING


@dataclass(frozen=True, slots=True)
class PlanningInput:
    """Everything a plan depends on: no clock, no environment, no I/O."""

    cluster: ClusterSpec
    demand: Demand = Demand()
    nodes: tuple[WorkerNode, ...] = ()
    #: (group, most new pods it may get now) for groups backed off after pods that failed to
    #: join (the agent's ``agent/backoff.py``); a group not listed has no such limit
    launch_limits: tuple[tuple[str, int], ...] = ()

    def launch_limit(self, group: str) -> int | None:
        """The most new pods ``group`` may get now, or None when it is not backed off."""
        for name, limit in self.launch_limits:
            if name == group:
                return limit
        return None


class UnplaceableReason(enum.StrEnum):
    """Why demand could not be given a pod."""

    NO_GROUP_FITS = "no_group_fits"  # bigger than every pod of every group: never placeable
    MAX_REPLICAS = "max_replicas"  # a group could hold it, but is at maxReplicas
    MAX_WORKERS = "max_workers"  # the cluster-wide maxWorkers cap is reached
    UPSCALING_SPEED = "upscaling_speed"  # deferred: too many pods pending already
    BACKED_OFF = "backed_off"  # a group could hold it, but is backed off after join failures


@dataclass(frozen=True, slots=True)
class Unplaceable:
    """Demand left over, with a reason; never silently dropped."""

    resources: Resources
    count: int
    reason: UnplaceableReason
    detail: str = ""
    kind: DemandKind = DemandKind.TASK
    strategy: Strategy | None = None  # for placement-group bundles


class DecisionKind(enum.StrEnum):
    """What the planner decided about some pods of a group."""

    ADD = "add"  # new pods
    REMOVE = "remove"  # existing pods that may go (listed, in the order they go)
    KEEP = "keep"  # pods that would go but stay
    HOLD = "hold"  # the target held above what is desired
    IGNORE = "ignore"  # pods the planner does not count


class Why(enum.StrEnum):
    """Why the planner decided it (a log field; the ``plan`` command renders it as text)."""

    MIN_REPLICAS = "min_replicas"
    CONSTRAINTS = "constraints"  # request_resources()
    PLACEMENT_GROUPS = "placement_groups"
    TASKS = "tasks"
    DEMAND = "demand"  # placement groups and tasks placed in one queue
    IDLE_TIMEOUT = "idle_timeout"  # idle at least idleTimeoutSeconds
    MAX_REPLICAS = "max_replicas"  # the group is above maxReplicas
    MAX_WORKERS = "max_workers"  # the cluster is above maxWorkers
    BUSY_ABOVE_CAP = "busy_above_cap"  # busy pods alone exceed a cap: they stay
    NEW_PODS = "new_pods"  # idle pods stay while the group gets new pods
    NOT_VICTIMS = "not_victims"  # the target never goes below pods that are not victims
    # pods that will not be (or stay) Ray nodes, by JoinFailure: removable at once
    NOT_JOINED = "not_joined"
    UNSCHEDULABLE = "unschedulable"
    CONTAINER_FAILING = "container_failing"
    RAY_NODE_DEAD = "ray_node_dead"
    UNKNOWN_GROUP = "unknown_group"


@dataclass(frozen=True, slots=True)
class Decision:
    """One typed decision: ``count`` pods (``pods`` named when known), what and why."""

    kind: DecisionKind
    count: int
    reason: Why
    pods: tuple[str, ...] = ()
    limit: int | None = None  # the bound involved (minReplicas, maxReplicas, maxWorkers)


def clamp_target(planned: int, group: WorkerGroup, *, floor: int, hold_at: int = 0) -> int:
    """The replicas to report: ``planned`` within ``[minReplicas, maxReplicas]``, then at
    least ``hold_at`` and ``floor`` (pods that are not victims).

    The one place of this rule (the planner and the scaler's safety rules both use it). The
    floor wins over maxReplicas: reporting fewer would let the ReplicaSet pick a pod that may
    be busy; pods above a cap leave by the victim protocol, which lowers the floor.
    """
    return max(min(max(planned, group.min_replicas), group.max_replicas), hold_at, floor)


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """The decision for one worker group."""

    name: str
    target: int  # replicas to report now: never below ``floor``
    desired: int  # replicas once every removable pod is gone (clamped to min/max)
    floor: int  # pods that are not victims: the target may never go below this
    current: int  # pods now, victims included
    busy: int  # existing pods kept because demand or use needs them
    new: int  # pods to add
    removable: tuple[str, ...] = ()  # pods that may go, in the order they go
    #: the removable pods that go because the group or cluster is above a cap: not protected
    #: by the idle timeout, to be removed at once (pending pods among them have no Ray node)
    over_cap: tuple[str, ...] = ()
    decisions: tuple[Decision, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """The planner's answer."""

    groups: Mapping[str, GroupPlan]
    unplaceable: tuple[Unplaceable, ...] = ()
    decisions: tuple[Decision, ...] = field(default=())  # about no group (unknown groups)


def total_count(bundles: Iterable[Bundle]) -> int:
    """How many bundles in all."""
    return sum(b.count for b in bundles)
