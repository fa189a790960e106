"""The writes of one round: the core's :class:`~keda_ray_scaler.controller.changes.Changes` done.

In this order: objects no longer desired deleted (ScaledObjects first, so KEDA lets a target go
before it goes), each with its uid as precondition; replacements deleted the same way (made
again by a later round, once the old one is gone: it may hold a finalizer); then every object
to create or update applied, creates and updates together in the core's order (the agent's
identity, then per group the RayWorkerGroup before its ScaledObject), an update only onto the
resourceVersion the core read. Together: a group appended to a served cluster updates the
agent's Role (which names the group's RayWorkerGroup) before that RayWorkerGroup is made, so
the agent is never shown a group whose status it may not write yet.

An object being deleted (``deletionTimestamp``) is not written: the round is *stale* and looked
at again soon. So is one that changed or went since it was read (a 409 or 404). A field another
field manager holds is a notice, that object left as it is; the others are still written. Any
other failure is logged and makes the round failed; the others are still written.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from keda_ray_scaler.controller import notices
from keda_ray_scaler.controller.changes import Changes
from keda_ray_scaler.controller.kube_calls import CONFLICT, NOT_FOUND, CallFailed
from keda_ray_scaler.controller.kube_io import ObjectStore
from keda_ray_scaler.controller.notices import Notice
from keda_ray_scaler.controller.objects import Kind, Manifest

log = structlog.get_logger(__name__)


class Operation(enum.Enum):
    """A write: a server-side apply (create or update) or a delete."""

    APPLY = "apply"
    DELETE = "delete"


@dataclass(slots=True)
class Written:
    """What one round's writes did."""

    done: list[tuple[Kind, str, Operation]] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    #: something changed, went or is being deleted since it was read: look again soon
    stale: bool = False
    #: a write failed for another reason (logged)
    failed: bool = False


def _deleting(existing: Sequence[Mapping[str, Any]]) -> set[tuple[Kind, str]]:
    """(kind, name) of the objects being deleted."""
    out = set()
    for obj in existing:
        meta = obj.get("metadata") or {}
        kind = Kind.of(obj)
        if kind is not None and meta.get("deletionTimestamp"):
            out.add((kind, str(meta.get("name") or "")))
    return out


def write_changes(
    io: ObjectStore, namespace: str, changes: Changes, existing: Sequence[Mapping[str, Any]]
) -> Written:
    """Do ``changes`` in ``namespace`` (module doc); ``existing`` as the core was given it."""
    written = Written()
    deleting = _deleting(existing)
    deletions = [(d.kind, d.name, d.uid) for d in changes.delete]
    deletions.sort(key=lambda d: d[0] is not Kind.SCALED_OBJECT)
    deletions += [(u.manifest.kind, u.manifest.name, u.uid) for u in changes.replace]
    for kind, name, uid in deletions:
        if (kind, name) in deleting:
            written.stale = True
            continue
        _delete(io, namespace, kind, name, uid, written)
    if changes.replace:
        written.stale = True  # made again once the old one is gone
    for manifest in changes.unchanged:
        if (manifest.kind, manifest.name) in deleting:
            written.stale = True  # made again once it is gone
    applies = [(m, "") for m in changes.create]
    applies += [(u.manifest, u.resource_version) for u in changes.update]
    applies.sort(key=lambda a: _KIND_ORDER[a[0].kind])  # stable: a group's RWG before its SO
    for manifest, version in applies:
        if (manifest.kind, manifest.name) in deleting:
            written.stale = True
            continue
        _apply(io, namespace, manifest, version, written)
    return written


#: the order objects are applied in: an object's grant or target before what uses it
_KIND_ORDER: Final = {kind: rank for rank, kind in enumerate(Kind)}


def _delete(
    io: ObjectStore, namespace: str, kind: Kind, name: str, uid: str, written: Written
) -> None:
    try:
        if io.delete(kind, namespace, name, uid):
            written.done.append((kind, name, Operation.DELETE))
    except CallFailed as exc:
        _failed(exc, kind, namespace, name, written)


def _apply(
    io: ObjectStore, namespace: str, manifest: Manifest, version: str, written: Written
) -> None:
    try:
        io.apply(manifest, version)
    except CallFailed as exc:
        if exc.field_conflict:
            where = f"{namespace}/{manifest.name}"
            written.notices.append(notices.field_conflict(manifest.kind, where, exc.fields))
            return
        _failed(exc, manifest.kind, namespace, manifest.name, written)
        return
    written.done.append((manifest.kind, manifest.name, Operation.APPLY))


def _failed(exc: CallFailed, kind: Kind, namespace: str, name: str, written: Written) -> None:
    fields = {"kind": kind.kind, "namespace": namespace, "name": name, "status": exc.status}
    if exc.status in (CONFLICT, NOT_FOUND):  # changed or gone since read: decide again
        written.stale = True
        log.info("object changed since read", error=exc.message, **fields)
        return
    written.failed = True
    log.error("write failed", operation=exc.operation, error=exc.message, **fields)
