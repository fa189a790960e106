"""What the victim protocol decided about one pod: a typed outcome and a human reason."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Outcome(enum.StrEnum):
    """What happened to one candidate pod (a metric label and a log field)."""

    NOT_SYNCED = "not_synced"  # the pod cache is not synced: nothing done
    FROZEN = "frozen"  # the group's scale-down is frozen after a wrong victim
    RAY_UNAVAILABLE = "ray_unavailable"  # the re-check could not read Ray: nothing done
    KUBE_ERROR = "kube_error"  # an API call failed after retries: marks rolled back
    POD_GONE = "pod_gone"  # not an active pod of the group any more
    NO_NODE = "no_node"  # no Ray node for the pod
    TWO_RAY_NODES = "two_ray_nodes"  # two live Ray nodes name the pod: which is its own is unknown
    NOT_IDLE = "not_idle"  # the re-check found the node busy, draining or idle too briefly
    NOT_OWNED = "not_owned"  # someone else owns the pod's deletion cost
    SERVING = "serving"  # a Ready serve Service endpoint: its Serve proxy has not drained yet
    NOT_CONFIRMED = "not_confirmed"  # marks not seen, or the ranking would take another pod
    DRAIN_REJECTED = "drain_rejected"  # Ray refused the drain: cost restored
    AWAITING_DELETION = "awaiting_deletion"  # the group's published victims are not gone yet
    VICTIM = "victim"  # drained and confirmed: published
    RESTORED = "restored"  # a stale victim mark was removed
    RESURRECTED = "resurrected"  # a victim's pod runs a new Ray node: unpublished, restored
    DELETED = "deleted"  # a published victim's pod is gone: the scale-down took it
    RELEASED = "released"  # a victim no scale-down would take, deleted by the agent: replaced
    WRONG_VICTIM = "wrong_victim"  # a pod that was not a victim went: group frozen
    FENCED = "fenced"  # the pod is being deleted: its Ray node drained so it takes no new work
    REFUSED = "refused"  # the applier refuses scale-down of the group (e.g. in-tree autoscaler)


@dataclass(frozen=True, slots=True)
class Verdict:
    """One decision, with the reason a human needs."""

    group: str
    pod: str
    outcome: Outcome
    reason: str = ""
