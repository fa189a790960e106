"""What ``kubectl describe raycluster`` shows of the controller: ``keda-ray-scaler.io/Autoscaled``.

One entry of the RayCluster's ``status.conditions`` (KubeRay's ``[]metav1.Condition``, a map
keyed by ``type``; KubeRay sets and removes only its own, unprefixed types, so ours survives its
status updates), decided from a round as the events are (:mod:`~.notices`):

- True, ``ObjectsReady``: every desired object created or as desired, nothing refused;
- False, ``AutoscalingRefused``: the whole cluster refused (the refusal's message);
- False, ``WorkerGroupRefused``: some worker groups refused (named), the others served;
- False, ``ObjectConflict``: an object in the way, or a field of ours another manager holds.

A round that failed or went stale and told nothing says nothing: the condition stays as it is
until a round settles. A cluster no longer opted in loses ours. The entry is written only when
the cluster as read shows another (status, reason, message, observedGeneration);
``lastTransitionTime`` moves only when the status flips. Pure: no I/O.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from keda_ray_scaler.controller import notices
from keda_ray_scaler.controller.desired import DesiredObjects
from keda_ray_scaler.controller.notices import Notice
from keda_ray_scaler.controller.objects import Kind

#: prefixed: KubeRay owns the unprefixed condition types
AUTOSCALED: Final = "keda-ray-scaler.io/Autoscaled"
#: at most this much of a message is shown (metav1.Condition allows 32768)
MESSAGE_MAX: Final = 4096


class Reason(enum.Enum):
    """The condition's reason (the events' reasons for False)."""

    OBJECTS_READY = "ObjectsReady"
    AUTOSCALING_REFUSED = notices.CLUSTER_REFUSED
    WORKER_GROUP_REFUSED = notices.GROUP_REFUSED
    OBJECT_CONFLICT = notices.OBJECT_CONFLICT


#: the False reasons, the one shown first first
_FALSE_ORDER: Final = (
    Reason.AUTOSCALING_REFUSED,
    Reason.WORKER_GROUP_REFUSED,
    Reason.OBJECT_CONFLICT,
)


@dataclass(frozen=True, slots=True)
class Condition:
    """Our condition as decided: True or False, why, and the message (untrusted text escaped)."""

    ready: bool
    reason: Reason
    message: str

    @property
    def status(self) -> str:
        """The condition's ``status`` as the API spells it."""
        return "True" if self.ready else "False"


class Unsaid(enum.Enum):
    """A round that decides no condition."""

    #: it failed or went stale and told nothing: the condition stays as it is
    KEEP = "keep"
    #: the cluster is not (or no longer) opted in: none of ours
    REMOVE = "remove"


def of_refusal(notice: Notice) -> Condition:
    """The condition of a refused cluster: its notice's message."""
    return Condition(False, Reason.AUTOSCALING_REFUSED, notice.message[:MESSAGE_MAX])


def of_round(desired: DesiredObjects, told: Sequence[Notice], settled: bool) -> Condition | Unsaid:
    """The condition after a round of ``desired`` (none: not opted in): ``told`` every notice of
    the round (not only the fresh ones), ``settled`` when no write failed or went stale."""
    if not desired.manifests:
        return Unsaid.REMOVE
    for reason in _FALSE_ORDER:
        if any(n.reason == reason.value for n in told):
            return Condition(False, reason, _message(reason, desired, told))
    if not settled:
        return Unsaid.KEEP
    served = _served(desired)
    return Condition(
        True, Reason.OBJECTS_READY, f"{served} worker groups autoscaled: every object in place"
    )


def _message(reason: Reason, desired: DesiredObjects, told: Sequence[Notice]) -> str:
    """Every notice's message, those of ``reason`` first; a group refusal names the groups."""
    ordered = sorted(told, key=lambda n: n.reason != reason.value)
    text = "; ".join(dict.fromkeys(n.message for n in ordered))
    if reason is Reason.WORKER_GROUP_REFUSED:
        names = ", ".join(repr(r.group) for r in desired.refused)
        text = f"worker groups refused: {names} ({text}); {_served(desired)} others autoscaled"
    return text if len(text) <= MESSAGE_MAX else text[: MESSAGE_MAX - 3] + "..."


def _served(desired: DesiredObjects) -> int:
    return sum(m.kind is Kind.RAY_WORKER_GROUP for m in desired.manifests)


def shown(cluster: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Our condition as ``cluster`` was read; None when it has none."""
    for entry in (cluster.get("status") or {}).get("conditions") or ():
        if isinstance(entry, Mapping) and entry.get("type") == AUTOSCALED:
            return entry
    return None


def to_write(
    cluster: Mapping[str, Any], wanted: Condition | Unsaid, now_s: float
) -> tuple[dict[str, Any], ...] | None:
    """The conditions to apply as ours (empty: ours removed), or None when ``cluster`` as read
    already shows ``wanted``: nothing to write."""
    current = shown(cluster)
    if wanted is Unsaid.KEEP or (wanted is Unsaid.REMOVE and current is None):
        return None
    if isinstance(wanted, Unsaid):
        return ()
    generation = (cluster.get("metadata") or {}).get("generation")
    entry: dict[str, Any] = {
        "type": AUTOSCALED,
        "status": wanted.status,
        "reason": wanted.reason.value,
        "message": wanted.message,
    }
    if isinstance(generation, int):
        entry["observedGeneration"] = generation
    if current is not None and all(current.get(k) == v for k, v in entry.items()):
        return None
    kept = None if current is None or current.get("status") != wanted.status else current
    when = datetime.datetime.fromtimestamp(now_s, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entry["lastTransitionTime"] = (kept or {}).get("lastTransitionTime") or when
    return (entry,)
