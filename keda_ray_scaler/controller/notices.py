"""What a user is told about a RayCluster, and when: each problem once, again each 30 min it stands.

A refusal from the core becomes a :class:`Notice`, a core/v1 Event on the RayCluster (type
Warning, the core's message, which already shows untrusted values escaped) and one count of
``ray_scaler_controller_refusals_total{reason}``:

- ``AutoscalingRefused``: the whole cluster (a malformed annotation, Ray's own autoscaler on, a
  name the controller cannot use); nothing is written for it;
- ``WorkerGroupRefused``: one worker group (a bad name, a repeated name, bad bounds);
- ``ObjectConflict``: an object in the way that is not the controller's own, or a field of one
  of its own that another field manager holds; that object is left as it is.

:class:`NoticeMemo` decides which notices of a round are shown, so that ``kubectl describe``
lists one event per distinct problem, repeated rarely while it persists (an event is kept an hour
by default, ``--event-ttl``). A notice is shown when its reason and message were not shown yet
for that RayCluster, or were last shown :data:`RESHOW_S` or more ago. A resync every 30 s repeats
nothing, nor does a status write, KubeRay's or the controller's own condition (a new
resourceVersion, the same ``metadata.generation``). A new generation (a spec change) shows again
only what was not shown yet: the agent itself writes ``replicas`` and ``workersToDelete`` into
the spec at each scale step, so each would repeat every notice that still stands, and the
condition already shows what still stands after a user's edit. A new generation does forget
what its round no longer tells: a problem an edit mended and a later edit brings back is shown
at once. At one generation a notice missing from a round is not forgotten before ``RESHOW_S``
(a round cut short by a failed write tells less, and its spec decides the same). Pure: the time
is an argument, no I/O.
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
#: seconds after which a notice still true is shown again: twice an hour, so a problem that
#: persists keeps an event within the API server's default event TTL (one hour)
RESHOW_S: Final = 1800.0


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
    """When each message was last shown, per RayCluster uid, and the ``metadata.generation`` it
    was shown at (module doc). At most ``limit`` clusters are held, the one told longest ago
    forgotten first (shown again if still true)."""

    def __init__(self, limit: int = 4096, reshow_s: float = RESHOW_S) -> None:
        self._limit = limit
        self._reshow_s = reshow_s
        self._shown: dict[str, tuple[str, dict[str, float]]] = {}

    def fresh(
        self, uid: str, generation: str, notices: Iterable[Notice], now_s: float
    ) -> list[Notice]:
        """The ``notices`` to show for cluster ``uid`` at ``generation`` at ``now_s``: each not
        shown yet, or last shown ``reshow_s`` or more ago; remembered as shown at ``now_s``."""
        told = list(notices)
        keys = {_key(n) for n in told}
        seen_generation, shown = self._shown.pop(uid, (generation, {}))
        same = seen_generation == generation
        # kept: what this round tells, and at one generation what is not due again yet
        shown = {
            key: at
            for key, at in shown.items()
            if key in keys or (same and now_s - at < self._reshow_s)
        }
        out = []
        for notice in told:
            key = _key(notice)
            at = shown.get(key)
            if at is None or now_s - at >= self._reshow_s:
                shown[key] = now_s
                out.append(notice)
        self._shown[uid] = (generation, shown)  # the latest last
        while len(self._shown) > self._limit:
            del self._shown[next(iter(self._shown))]
        return out

    def forget(self, uid: str) -> None:
        """Cluster ``uid`` is gone."""
        self._shown.pop(uid, None)


def _key(notice: Notice) -> str:
    """What tells two notices apart: reason and message (the label follows from them)."""
    return f"{notice.reason}\0{notice.message}"
