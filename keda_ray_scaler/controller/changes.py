"""The writes that give a RayCluster exactly its desired objects: ``plan_changes``.

An existing object is the controller's when it carries both marks: the label
``app.kubernetes.io/managed-by: keda-ray-scaler-controller`` and an owner reference to this
RayCluster's uid. Only those are ever updated or deleted. One of another's in the way of a
desired object (same kind, namespace and name) is a :class:`Collision`, typed: a user's or
another tool's (the hand-written example's objects have the same names), or the controller's for
another RayCluster (a cluster deleted and made again under the same name, its objects not yet
collected; or two clusters whose names run together, ``a`` + group ``b-c`` and ``a-b`` + ``c``).
A collision blocks the other objects of its unit (one group's RayWorkerGroup and ScaledObject;
the agent's ServiceAccount, Role and RoleBinding): a ScaledObject never targets a RayWorkerGroup
that is not ours, and a Role is never bound to a ServiceAccount that is not ours.

An owned object is updated only when a field the controller writes differs: its labels (ours
among the object's), its owner reference (among the object's), and per kind the fields below,
compared as "what we write is contained in what is there" (fields the API server or KEDA add
never cause a write; a field the template stops writing is left until the next update, except
the retired fields below, whose presence alone is a difference: the server-side apply that
follows drops them, being the controller's fields no longer applied). An
immutable field that differs (a RayWorkerGroup's spec, a RoleBinding's roleRef) means replace:
delete with the uid as precondition, then create. An owned object no longer desired is deleted,
unless its group is held (:attr:`~keda_ray_scaler.controller.desired.DesiredObjects.held_groups`).
Existing objects of other kinds or namespaces are ignored. Pure: no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from keda_ray_scaler.controller.desired import DesiredObjects
from keda_ray_scaler.controller.objects import (
    GROUP_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    Kind,
    Manifest,
    Owner,
)

#: per kind, the top-level fields the controller writes, and whether each is immutable
OWNED_FIELDS: Final[Mapping[Kind, tuple[tuple[str, bool], ...]]] = {
    Kind.SERVICE_ACCOUNT: (("automountServiceAccountToken", False),),
    Kind.ROLE: (("rules", False),),
    Kind.ROLE_BINDING: (("roleRef", True), ("subjects", False)),
    Kind.RAY_WORKER_GROUP: (("spec", True),),  # rayCluster, groupName: immutable in the CRD
    Kind.SCALED_OBJECT: (("spec", False),),
}

#: per kind, fields an earlier controller wrote and this one does not: (top-level field, key).
#: ScaledObject ``spec.fallback``: any fallback makes KEDA 2.19+ start a pod in a group at zero
#: (docs/design/keda-fallback.md); written until 2026-11-28.
RETIRED_FIELDS: Final[Mapping[Kind, tuple[tuple[str, str], ...]]] = {
    Kind.SCALED_OBJECT: (("spec", "fallback"),),
}


class Ownership(enum.Enum):
    """Whose an object in the way of a desired one is."""

    #: no ``managed-by: keda-ray-scaler-controller`` label: a user's or another tool's
    NOT_MANAGED = "not_managed"
    #: the controller's, but owned by another RayCluster (another uid)
    OTHER_OWNER = "other_owner"


@dataclass(frozen=True, slots=True)
class Collision:
    """An object the controller wants to make is taken by one that is not its own."""

    kind: Kind
    name: str
    ownership: Ownership
    message: str


@dataclass(frozen=True, slots=True)
class Update:
    """An owned object to write: the desired manifest, the existing object's uid and
    resourceVersion (preconditions) and the fields that differ."""

    manifest: Manifest
    uid: str
    resource_version: str
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Deletion:
    """An owned object to delete; ``uid`` is the precondition."""

    kind: Kind
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Changes:
    """The writes that make a cluster's objects its desired ones, and what stands in the way."""

    create: tuple[Manifest, ...] = ()
    update: tuple[Update, ...] = ()
    replace: tuple[Update, ...] = ()  # an immutable field differs: delete (uid), then create
    delete: tuple[Deletion, ...] = ()
    conflicts: tuple[Collision, ...] = ()
    blocked: tuple[Manifest, ...] = ()  # neither made nor written: its unit has a collision
    unchanged: tuple[Manifest, ...] = ()

    @property
    def writes(self) -> int:
        """How many objects this changes."""
        return len(self.create) + len(self.update) + len(self.replace) + len(self.delete)


def plan_changes(desired: DesiredObjects, existing: Sequence[Mapping[str, Any]]) -> Changes:
    """The changes from ``existing`` (objects as the API returns them, any kinds) to ``desired``
    (module doc: ownership, collisions, what is compared)."""
    owner = desired.owner
    found = {key: obj for obj in existing if (key := _key(obj, owner)) is not None}
    conflicts: list[Collision] = []
    for manifest in desired.manifests:
        obj = found.get((manifest.kind, manifest.name))
        if obj is not None and (ownership := _ownership(obj, owner)) is not None:
            conflicts.append(_collision(manifest, obj, ownership))
    blocked_units = {m.group for m in desired.manifests if _collides(m, conflicts)}
    create: list[Manifest] = []
    update: list[Update] = []
    replace: list[Update] = []
    blocked: list[Manifest] = []
    unchanged: list[Manifest] = []
    for manifest in desired.manifests:
        obj = found.get((manifest.kind, manifest.name))
        if manifest.group in blocked_units:
            blocked.append(manifest)
        elif obj is None:
            create.append(manifest)
        elif not (differ := _differences(manifest, obj, owner)):
            unchanged.append(manifest)
        else:
            write = Update(manifest, _meta(obj, "uid"), _meta(obj, "resourceVersion"), differ)
            immutable = {f for f, frozen in OWNED_FIELDS[manifest.kind] if frozen}
            (replace if immutable.intersection(differ) else update).append(write)
    wanted = {(m.kind, m.name) for m in desired.manifests}
    delete = [
        Deletion(kind, name, _meta(obj, "uid"))
        for (kind, name), obj in found.items()
        if (kind, name) not in wanted
        and _ownership(obj, owner) is None
        and _labels(obj).get(GROUP_LABEL) not in desired.held_groups
    ]
    return Changes(
        tuple(create),
        tuple(update),
        tuple(replace),
        tuple(delete),
        tuple(conflicts),
        tuple(blocked),
        tuple(unchanged),
    )


def _key(obj: Mapping[str, Any], owner: Owner) -> tuple[Kind, str] | None:
    """(kind, name) of an object in the owner's namespace of a kind the controller makes."""
    kind = Kind.of(obj)
    if kind is None or _meta(obj, "namespace") != owner.namespace:
        return None
    return kind, _meta(obj, "name")


def _meta(obj: Mapping[str, Any], key: str) -> str:
    return str((obj.get("metadata") or {}).get(key) or "")


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _ownership(obj: Mapping[str, Any], owner: Owner) -> Ownership | None:
    """None when the object is the controller's for this cluster; else whose it is."""
    if _labels(obj).get(MANAGED_BY_LABEL) != MANAGED_BY:
        return Ownership.NOT_MANAGED
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    mine = any(
        isinstance(r, Mapping) and r.get("kind") == "RayCluster" and r.get("uid") == owner.uid
        for r in refs
    )
    return None if mine else Ownership.OTHER_OWNER


def _collision(manifest: Manifest, obj: Mapping[str, Any], ownership: Ownership) -> Collision:
    whose = (
        "is not managed by keda-ray-scaler-controller (delete it, or rename it, to let the "
        "controller make its own)"
        if ownership is Ownership.NOT_MANAGED
        else "belongs to another RayCluster (not this one's uid); left alone"
    )
    where = f"{_meta(obj, 'namespace')}/{manifest.name}"
    return Collision(
        manifest.kind, manifest.name, ownership, f"{manifest.kind.kind} {where} {whose}"
    )


def _collides(manifest: Manifest, conflicts: Sequence[Collision]) -> bool:
    return any(c.kind is manifest.kind and c.name == manifest.name for c in conflicts)


def _differences(manifest: Manifest, obj: Mapping[str, Any], owner: Owner) -> tuple[str, ...]:
    """The fields the controller writes that differ on ``obj`` (module doc)."""
    differ = []
    if not _contains(_labels(obj), manifest.body["metadata"]["labels"]):
        differ.append("metadata.labels")
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    if not any(_contains(r, owner.reference()) for r in refs):
        differ.append("metadata.ownerReferences")
    for field, _ in OWNED_FIELDS[manifest.kind]:
        if not _contains(obj.get(field), manifest.body.get(field)):
            differ.append(field)
    for field, key in RETIRED_FIELDS.get(manifest.kind, ()):
        if key in (obj.get(field) or {}) and f"{field}.{key}" not in differ:
            differ.append(f"{field}.{key}")
    return tuple(differ)


def _contains(there: object, wanted: object) -> bool:
    """``wanted`` is contained in ``there``: a mapping's keys each contained, a list of the same
    length item by item, anything else equal."""
    if isinstance(wanted, Mapping):
        return isinstance(there, Mapping) and all(
            k in there and _contains(there[k], v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(there, list)
            and len(there) == len(wanted)
            and all(_contains(t, w) for t, w in zip(there, wanted, strict=True))
        )
    return there == wanted and type(there) is type(wanted)
