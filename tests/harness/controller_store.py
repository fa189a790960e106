"""A dict-backed :class:`~keda_ray_scaler.controller.kube_io.ObjectStore` for the controller's
round: RayClusters and objects as the API server would hold them (uid, resourceVersion bumped on
each write, a server-side apply refused on a stale version), every write and event recorded, and
failures planted per call (``store.fail[("apply", "ScaledObject", "ray-demo-cpu")] = ...``).
A condition write replaces the entries of the types it held or holds, and is recorded apart
(``status_writes``)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from keda_ray_scaler.controller.kube_calls import CallFailed
from keda_ray_scaler.controller.notices import Notice
from keda_ray_scaler.controller.objects import Kind, Manifest

_uids = itertools.count(1)


def conflict(*fields: str) -> CallFailed:
    """What a server-side apply without force answers when another manager holds ``fields``."""
    return CallFailed("apply ScaledObject", 409, "Apply failed with conflicts", fields)


class FakeStore:
    """RayClusters by (namespace, name); objects by (kind, namespace, name)."""

    def __init__(self, *clusters: dict[str, Any]) -> None:
        self.clusters = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in clusters}
        self.objects: dict[tuple[Kind, str, str], dict[str, Any]] = {}
        self.events: list[tuple[str, Notice]] = []
        self.writes: list[tuple[str, str, str]] = []  # (operation, kind, name)
        self.status_writes: list[tuple[str, tuple[dict[str, Any], ...]]] = []  # (name, entries)
        self._ours: dict[tuple[str, str], set[str]] = {}  # condition types applied, per cluster
        self.fail: dict[tuple[str, str, str], CallFailed] = {}
        self._version = itertools.count(100)

    def put(self, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        """Store ``obj`` as it is (a user's, or one being deleted), with its kind."""
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        meta = obj["metadata"]
        meta.setdefault("uid", f"uid-{next(_uids)}")
        meta.setdefault("resourceVersion", str(next(self._version)))
        self.objects[(kind, meta["namespace"], meta["name"])] = obj
        return obj

    def list_clusters(self, namespace: str) -> tuple[list[dict[str, Any]], str]:
        """The clusters of ``namespace``."""
        return [c for (ns, _), c in self.clusters.items() if ns == namespace], "1"

    def get_cluster(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One cluster."""
        return self.clusters.get((namespace, name))

    def list_objects(self, kind: Kind, namespace: str, selector: str) -> list[dict[str, Any]]:
        """The objects whose labels hold every ``k=v`` of ``selector``."""
        wanted = dict(term.split("=", 1) for term in selector.split(","))
        return [
            copy.deepcopy(o)
            for (k, ns, _), o in self.objects.items()
            if k is kind
            and ns == namespace
            and wanted.items() <= (o["metadata"].get("labels") or {}).items()
        ]

    def get_object(self, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
        """One object."""
        found = self.objects.get((kind, namespace, name))
        return None if found is None else copy.deepcopy(found)

    def apply(self, manifest: Manifest, resource_version: str = "") -> dict[str, Any]:
        """Merge ``manifest`` in (our fields replace), bump the version; 409 on a stale one."""
        self._planted("apply", manifest.kind, manifest.name)
        key = (manifest.kind, manifest.body["metadata"]["namespace"], manifest.name)
        old = self.objects.get(key)
        if resource_version and (
            old is None or old["metadata"]["resourceVersion"] != resource_version
        ):
            raise CallFailed("apply", 409, "the object has been modified", ())
        obj = copy.deepcopy(dict(manifest.body))
        if old is not None:
            obj["metadata"] = {**old["metadata"], **obj["metadata"]}
            obj["metadata"]["resourceVersion"] = str(next(self._version))
        self.writes.append(("apply", manifest.kind.kind, manifest.name))
        return self.put(manifest.kind, obj)

    def delete(self, kind: Kind, namespace: str, name: str, uid: str) -> bool:
        """Delete when the uid matches (409 otherwise); False when already gone."""
        self._planted("delete", kind, name)
        old = self.objects.get((kind, namespace, name))
        if old is None:
            return False
        if old["metadata"]["uid"] != uid:
            raise CallFailed("delete", 409, "Precondition failed: UID", ())
        del self.objects[(kind, namespace, name)]
        self.writes.append(("delete", kind.kind, name))
        return True

    def emit(self, cluster: Mapping[str, Any], notice: Notice, now_s: float) -> None:
        """Record the event."""
        self._planted("emit", "Event", cluster["metadata"]["name"])
        self.events.append((cluster["metadata"]["name"], notice))

    def set_conditions(
        self, cluster: Mapping[str, Any], conditions: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """Our condition types replaced by ``conditions`` (server-side apply), version bumped."""
        meta = cluster["metadata"]
        self._planted("apply", "RayCluster/status", meta["name"])
        key = (meta["namespace"], meta["name"])
        stored = self.clusters[key]
        entries = tuple(copy.deepcopy(dict(c)) for c in conditions)
        dropped = self._ours.get(key, set()) | {c["type"] for c in entries}
        status = stored.setdefault("status", {})
        kept = [c for c in status.get("conditions") or () if c["type"] not in dropped]
        status["conditions"] = kept + list(entries)
        self._ours[key] = {c["type"] for c in entries}
        stored["metadata"]["resourceVersion"] = str(next(self._version))
        self.status_writes.append((meta["name"], entries))
        return copy.deepcopy(stored)

    def _planted(self, operation: str, kind: Kind | str, name: str) -> None:
        kind_name = kind.kind if isinstance(kind, Kind) else kind
        failure = self.fail.get((operation, kind_name, name))
        if failure is not None:
            raise failure
