"""One RayWorkerGroup's round in KubeRay mode, the pure part: filter, lead, typed verdict.

The applier (:mod:`~keda_ray_scaler.agent.kuberay.applier`) reads a group (:class:`GroupRead`),
asks :func:`screen` whether this round scales it at all, asks :func:`lead_for` for the replicas
to carry into the RayCluster, and decides the patch with
:func:`~keda_ray_scaler.agent.kuberay.raycluster_scale.decide`. Each group's round ends in a
:class:`GroupVerdict` whose ``action`` is a scale :class:`Action` or an :class:`Undecided`
reason; its value is the ``action`` label of ``ray_scaler_kuberay_decisions_total``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from keda_ray_scaler.agent.kuberay.raycluster_scale import (
    Action,
    GroupState,
    Lead,
    ScaleDecision,
)
from keda_ray_scaler.agent.kuberay.scale_down_lead import lead_down
from keda_ray_scaler.agent.kuberay.scale_up_lead import lead_replicas
from keda_ray_scaler.agent.kuberay.scaledobject import ScaledObject


@dataclass(frozen=True, slots=True)
class ApplierSettings:
    """How one RayCluster's applier decides.

    - ``cluster``: the RayCluster's name (a metric label and a log field).
    - ``conflict_attempts``: decisions per group and round when patches keep meeting a changed
      RayCluster (each on a fresh read); the next round starts over.
    - ``lead_up`` / ``lead_down``: the agent's own targets lead a scale-up
      (:mod:`~keda_ray_scaler.agent.kuberay.scale_up_lead`) and a drained victim's deletion
      (:mod:`~keda_ray_scaler.agent.kuberay.scale_down_lead`) ahead of the HPA, when the
      applier is given them; each on by default.
    """

    cluster: str
    conflict_attempts: int = 5
    lead_up: bool = True
    lead_down: bool = True


class Undecided(enum.StrEnum):
    """Why a group's round took no scale decision (a metric label beside :class:`Action`'s)."""

    REFUSED = "refused"  # Ray's in-tree autoscaler owns the RayCluster
    NO_GROUP = "no_group"  # the RayCluster has no such group (or lost it mid-round)
    NOT_SYNCED = "not_synced"  # the pod cache is not synced
    UNSET = "unset"  # the RayWorkerGroup's spec.replicas is unset
    KUBE_ERROR = "kube_error"  # a Kubernetes call failed
    CLAIMED = "claimed"  # an older RayWorkerGroup holds the group (group_claims.py)


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """One group's round: the decision taken (or why none), a metric label and a log field."""

    group: str
    action: Action | Undecided
    reason: str
    replicas: int = 0
    named: tuple[str, ...] = ()


def verdict_of(group: str, decision: ScaleDecision) -> GroupVerdict:
    """The verdict of a scale decision."""
    return GroupVerdict(
        group, decision.action, decision.reason, decision.replicas, decision.workers_to_delete
    )


@dataclass(frozen=True, slots=True)
class GroupRead:
    """One RayWorkerGroup as a round reads it, with its group in the RayCluster."""

    group: str  # spec.groupName
    name: str  # metadata.name
    replicas: int | None  # spec.replicas (the HPA's, through /scale); None when unset
    pods: tuple[str, ...]  # the group's active pods
    state: GroupState | None  # the RayCluster's group; None when it has none
    synced: bool  # the pod cache is synced
    claimed_by: str = ""  # the RayWorkerGroup holding the group when not this one


@dataclass(frozen=True, slots=True)
class Ready:
    """A group's ``Ready`` condition: its status and reason (its message is the verdict's)."""

    ok: bool
    reason: str


#: the Ready condition of a group the round scaled (whatever the decision)
RECONCILED = Ready(True, "Reconciled")


@dataclass(frozen=True, slots=True)
class Held:
    """A group this round does not scale: its verdict and its ``Ready`` condition."""

    verdict: GroupVerdict
    ready: Ready


def screen(read: GroupRead, refused: str, cluster: str) -> Held | int:
    """The filter: a :class:`Held` group (refused, claimed by another RayWorkerGroup, missing,
    unsynced, unset, in this order), or the replicas the HPA asks of a group to scale. Pure."""
    group = read.group
    if refused:
        return Held(
            GroupVerdict(group, Undecided.REFUSED, refused), Ready(False, "InTreeAutoscaling")
        )
    if read.claimed_by:
        claimed = f"group {group} is claimed by RayWorkerGroup {read.claimed_by} (the oldest)"
        verdict = GroupVerdict(group, Undecided.CLAIMED, claimed)
        return Held(verdict, Ready(False, "GroupClaimedByAnother"))
    if read.state is None:
        missing = f"RayCluster {cluster} has no group {group}"
        return Held(GroupVerdict(group, Undecided.NO_GROUP, missing), Ready(False, "GroupNotFound"))
    if not read.synced:
        unsynced = GroupVerdict(group, Undecided.NOT_SYNCED, "pod cache not synced")
        return Held(unsynced, Ready(False, "PodsNotSynced"))
    if read.replicas is None:
        unset = GroupVerdict(group, Undecided.UNSET, "spec.replicas unset", read.state.replicas)
        return Held(unset, RECONCILED)
    return read.replicas


def lead_for(
    desired: int,
    planned: int | None,
    zero_for_s: float,
    scaled: Sequence[ScaledObject],
    settings: ApplierSettings,
) -> Lead:
    """The HPA's ``desired`` moved to the agent's ``planned`` target where the ScaledObjects
    targeting the group allow it (:func:`~keda_ray_scaler.agent.kuberay.scale_up_lead.lead_replicas`
    up, :func:`~keda_ray_scaler.agent.kuberay.scale_down_lead.lead_down` down; ``zero_for_s``:
    how long the plan has asked 0); ``desired`` unmoved without a plan. Pure."""
    lead = Lead(desired)
    if settings.lead_up:
        lead = lead_replicas(desired, planned, scaled)
    if settings.lead_down and planned is not None and planned < desired:
        lead = lead_down(desired, planned, scaled, zero_for_s)
    return lead
