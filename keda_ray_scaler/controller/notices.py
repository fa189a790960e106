"""What a user is told about a RayCluster, and when: the events of a round, once per version.

A refusal from the core becomes a :class:`Notice`, a core/v1 Event on the RayCluster (type
Warning, the core's message, which already shows untrusted values escaped) and one count of
``ray_scaler_controller_refusals_total{reason}``:

- ``AutoscalingRefused``: the whole cluster (a malformed annotation, Ray's own autoscaler on, a
  name the controller cannot use); nothing is written for it;
- ``WorkerGroupRefused``: one worker group (a bad name, a repeated name, bad bounds);
- ``ObjectConflict``: an object in the way that is not the controller's own, or a field of one
  of its own that another field manager holds; that object is left as it is.

:class:`NoticeMemo` shows each message once per RayCluster resourceVersion: a resync every 30 s
repeats nothing, an edit of the cluster shows what still stands (the controller's own write of
its condition is no edit: :meth:`NoticeMemo.moved`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from keda_ray_scaler.controller.changes import Collision
from keda_ray_scaler.controller.desired import GroupRefused
from keda_ray_scaler.controller.objects import Kind
from keda_ray_scaler.controller.optin import Refusal, printable

CLUSTER_REFUSED: Final = "AutoscalingRefused"
GROUP_REFUSED: Final = "WorkerGroupRefused"
OBJECT_CONFLICT: Final = "ObjectConflict"
#: the counter's reason for a RayCluster name the controller cannot use (desired.owner_of)
BAD_CLUSTER_NAME: Final = "bad_cluster_name"
#: the counter's reason for a field of our own object that another field manager holds
FIELD_CONFLICT: Final = "field_conflict"


@dataclass(frozen=True, slots=True)
class Notice:
    """One event: its ``reason``, the counter's ``label`` (a fixed set), and the message."""

    reason: str
    label: str
    message: str
    type: str = "Warning"


def cluster_refused(refusal: Refusal) -> Notice:
    """The notice of a refused cluster."""
    return Notice(CLUSTER_REFUSED, refusal.reason.value, refusal.message)


def bad_cluster(problem: str) -> Notice:
    """The notice of an opted-in cluster whose metadata the core cannot use."""
    return Notice(CLUSTER_REFUSED, BAD_CLUSTER_NAME, f"{problem}; nothing is made for it")


def group_refused(refused: GroupRefused) -> Notice:
    """The notice of one refused worker group."""
    return Notice(GROUP_REFUSED, refused.problem.value, refused.message)


def collision(found: Collision) -> Notice:
    """The notice of an object in the way that is not the controller's own."""
    return Notice(OBJECT_CONFLICT, found.ownership.value, found.message + "; left alone")


def field_conflict(kind: Kind, where: str, fields: Sequence[str]) -> Notice:
    """The notice of our own object whose ``fields`` another field manager holds."""
    shown = ", ".join(printable(f) for f in fields[:5]) + (", ..." if len(fields) > 5 else "")
    return Notice(
        OBJECT_CONFLICT,
        FIELD_CONFLICT,
        f"{kind.kind} {where}: another field manager holds {shown}; the controller leaves "
        "them as they are (undo the edit, or delete the object to let it be made again)",
    )


class NoticeMemo:
    """The messages already shown, per RayCluster uid, at its resourceVersion. At most ``limit``
    clusters are held, the one shown longest ago forgotten first (shown again if still true)."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._shown: dict[str, tuple[str, set[str]]] = {}

    def fresh(self, uid: str, version: str, notices: Iterable[Notice]) -> list[Notice]:
        """The ``notices`` not yet shown for cluster ``uid`` at ``version``; remembered as
        shown."""
        seen_version, messages = self._shown.pop(uid, (version, set()))
        if seen_version != version:
            messages = set()
        out = []
        for notice in notices:
            key = f"{notice.reason}\0{notice.message}"
            if key not in messages:
                messages.add(key)
                out.append(notice)
        self._shown[uid] = (version, messages)  # the latest last
        while len(self._shown) > self._limit:
            del self._shown[next(iter(self._shown))]
        return out

    def moved(self, uid: str, version: str, new_version: str) -> None:
        """Cluster ``uid`` went from ``version`` to ``new_version`` by the controller's own
        write (its condition): what was told at the one stays told at the other."""
        seen = self._shown.get(uid)
        if seen is not None and seen[0] == version and new_version:
            self._shown[uid] = (new_version, seen[1])

    def forget(self, uid: str) -> None:
        """Cluster ``uid`` is gone."""
        self._shown.pop(uid, None)
