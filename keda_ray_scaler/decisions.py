"""The planner's answer: a plan per worker group, its typed decisions, and unplaceable demand.

Pure, like :mod:`~keda_ray_scaler.model` whose values it is built from: no I/O, no clock, no
environment.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from keda_ray_scaler.labels import LabelSelector, Selectors
from keda_ray_scaler.model import DemandKind, Resources, Strategy, WorkerGroup


class UnplaceableReason(enum.StrEnum):
    """Why demand could not be given a pod."""

    NO_GROUP_FITS = "no_group_fits"  # bigger than every pod of every group: never placeable
    MAX_REPLICAS = "max_replicas"  # a group could hold it, but is at maxReplicas
    MAX_WORKERS = "max_workers"  # the cluster-wide maxWorkers cap is reached
    UPSCALING_SPEED = "upscaling_speed"  # deferred: too many pods pending already
    BACKED_OFF = "backed_off"  # a group could hold it, but is backed off after join failures
    #: no worker group's labels satisfy any of its label selectors: never placeable on a new pod
    NO_GROUP_MATCHES = "no_group_matches_selector"


@dataclass(frozen=True, slots=True)
class Unplaceable:
    """Demand left over, with a reason; never silently dropped."""

    resources: Resources
    count: int
    reason: UnplaceableReason
    detail: str = ""
    kind: DemandKind = DemandKind.TASK
    strategy: Strategy | None = None  # for placement-group bundles
    selectors: Selectors = ()  # the demand's label selectors, in fallback order


@dataclass(frozen=True, slots=True)
class Placed:
    """Bundles of demand with label selectors given pods of one worker group, and the selector
    that admitted them there: the first of the list the pods' labels satisfy."""

    group: str
    count: int
    selectors: Selectors  # the demand's list, in fallback order
    by: LabelSelector  # the one of them the pods satisfy first (the list's first, or a fallback)
    shapes: tuple[Resources, ...]  # the shapes of the demand with this list (one, mostly)
    existing: bool = False  # on pods that exist (their free capacity), else on new pods


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
    #: tasks, actors and placement-group bundles with label selectors: where each went, and why
    placed: tuple[Placed, ...] = ()
