"""Reads and writes through the kubernetes client: RayClusters, the objects the core builds, events.

RayClusters (``ray.io/v1 rayclusters``) are listed and read. The objects of each
:class:`~keda_ray_scaler.controller.objects.Kind` are listed by label selector, read by name,
written by server-side apply (the settings' field manager, ``force=false``: a field another
manager holds is a :class:`~keda_ray_scaler.controller.kube_calls.CallFailed` conflict, never
taken) and deleted with their uid as precondition. Events are created. The RayCluster's
``status`` subresource is applied holding only our conditions (force: no other manager writes
our condition type; KubeRay's status updates keep it). Each call goes through
:class:`~keda_ray_scaler.controller.kube_calls.KubeCalls`. Objects come back as plain dicts as
served (``_preload_content=False``: no client model drops a field), each stamped with its
``apiVersion`` and ``kind`` (a list's items of built-in kinds carry neither).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kubernetes import client as k8s

from keda_ray_scaler.controller.kube_calls import NOT_FOUND, CallFailed, KubeCalls
from keda_ray_scaler.controller.notices import Notice
from keda_ray_scaler.controller.objects import Kind, Manifest

RAY_CLUSTER: Final = ("ray.io", "v1", "rayclusters")
APPLY_PATCH: Final = "application/apply-patch+yaml"  # JSON is YAML: the client sends it as JSON
_PLURALS: Final = {Kind.RAY_WORKER_GROUP: "rayworkergroups", Kind.SCALED_OBJECT: "scaledobjects"}

#: condition entries (``status.conditions``), as the API spells them
Entries = Sequence[Mapping[str, Any]]
#: one call of a kind: (namespace, name or None, body or None, keyword arguments) -> response
_Call = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class _Access:
    """How one kind is listed, read, applied and deleted: ``list(ns, **kw)``,
    ``read(ns, name, **kw)``, ``patch(ns, name, body, **kw)``, ``delete(ns, name, body, **kw)``."""

    list: _Call
    read: _Call
    patch: _Call
    delete: _Call


class ObjectStore(Protocol):
    """The reads and writes a round makes (:class:`KubeObjects`; tests pass a dict-backed one).
    A failed call raises :class:`~keda_ray_scaler.controller.kube_calls.CallFailed`."""

    def list_clusters(self, namespace: str) -> tuple[list[dict[str, Any]], str]:
        """The RayClusters of ``namespace`` and the list's resourceVersion."""

    def get_cluster(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The RayCluster ``namespace/name``; None when there is none."""

    def list_objects(self, kind: Kind, namespace: str, selector: str) -> list[dict[str, Any]]:
        """The objects of ``kind`` in ``namespace`` that the label ``selector`` selects."""

    def get_object(self, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
        """The object of ``kind`` named ``name``; None when there is none."""

    def apply(self, manifest: Manifest, resource_version: str = "") -> dict[str, Any]:
        """Server-side apply, onto ``resource_version`` when given."""

    def delete(self, kind: Kind, namespace: str, name: str, uid: str) -> bool:
        """Delete if the uid is still ``uid``; False when already gone."""

    def emit(self, cluster: Mapping[str, Any], notice: Notice, now_s: float) -> None:
        """An event on the RayCluster ``cluster``."""

    def set_conditions(self, cluster: Mapping[str, Any], conditions: Entries) -> dict[str, Any]:
        """Apply ``conditions`` as all of ours on the RayCluster's status; the cluster after."""


class KubeObjects:
    """The controller's reads and writes (module doc), as ``field_manager``: an
    :class:`ObjectStore`."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        calls: KubeCalls,
        *,
        field_manager: str,
        instance: str,
        request_timeout_s: float,
    ) -> None:
        self.api_client = api_client
        self.custom = k8s.CustomObjectsApi(api_client)
        self._core = k8s.CoreV1Api(api_client)
        self._calls = calls
        self._manager = field_manager
        self._instance = instance
        self._timeout = request_timeout_s
        rbac = k8s.RbacAuthorizationV1Api(api_client)
        self._access = _access_table(self._core, rbac, self.custom)

    # -- RayClusters ---------------------------------------------------------------------------

    def list_clusters(self, namespace: str) -> tuple[list[dict[str, Any]], str]:
        """The RayClusters of ``namespace`` and the list's resourceVersion."""
        group, version, plural = RAY_CLUSTER
        body = self._json(
            "list rayclusters",
            lambda: self.custom.list_namespaced_custom_object(
                group, version, namespace, plural, **self._raw()
            ),
        )
        items = [_stamped(i, "ray.io/v1", "RayCluster") for i in body.get("items") or ()]
        return items, str((body.get("metadata") or {}).get("resourceVersion") or "")

    def get_cluster(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The RayCluster ``namespace/name``; None when there is none."""
        group, version, plural = RAY_CLUSTER
        return self._maybe(
            "get raycluster",
            lambda: self.custom.get_namespaced_custom_object(
                group, version, namespace, plural, name, **self._raw()
            ),
        )

    # -- the objects the core builds -----------------------------------------------------------

    def list_objects(self, kind: Kind, namespace: str, selector: str) -> list[dict[str, Any]]:
        """The objects of ``kind`` in ``namespace`` that ``selector`` (labels) selects."""
        access = self._access[kind]
        body = self._json(
            f"list {kind.kind}",
            lambda: access.list(namespace, label_selector=selector, **self._raw()),
        )
        return [_stamped(i, kind.api_version, kind.kind) for i in body.get("items") or ()]

    def get_object(self, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
        """The object of ``kind`` named ``name``; None when there is none."""
        access = self._access[kind]
        found = self._maybe(f"get {kind.kind}", lambda: access.read(namespace, name, **self._raw()))
        return None if found is None else _stamped(found, kind.api_version, kind.kind)

    def apply(self, manifest: Manifest, resource_version: str = "") -> dict[str, Any]:
        """Server-side apply of ``manifest`` (module doc); with ``resource_version``, only onto
        that version (else a 409: the object changed since it was read)."""
        body = json.loads(json.dumps(manifest.body))  # a copy the client may serialise
        if resource_version:
            body["metadata"]["resourceVersion"] = resource_version
        namespace = body["metadata"]["namespace"]
        access = self._access[manifest.kind]
        return self._json(
            f"apply {manifest.kind.kind}",
            lambda: access.patch(
                namespace,
                manifest.name,
                body,
                field_manager=self._manager,
                force=False,
                _content_type=APPLY_PATCH,
                **self._raw(),
            ),
        )

    def delete(self, kind: Kind, namespace: str, name: str, uid: str) -> bool:
        """Delete the object if its uid is still ``uid`` (409 otherwise); False when it was
        already gone."""
        options = k8s.V1DeleteOptions(
            preconditions=k8s.V1Preconditions(uid=uid), propagation_policy="Background"
        )
        access = self._access[kind]
        gone = self._maybe(
            f"delete {kind.kind}", lambda: access.delete(namespace, name, options, **self._raw())
        )
        return gone is not None

    def set_conditions(self, cluster: Mapping[str, Any], conditions: Entries) -> dict[str, Any]:
        """Apply (force) ``cluster``'s status: ``conditions``, all of ours; the cluster after."""
        meta = cluster.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        body = {
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": namespace},
            "status": {"conditions": [dict(c) for c in conditions]},
        }  # fmt: skip
        group, version, plural = RAY_CLUSTER
        patch = self.custom.patch_namespaced_custom_object_status
        forced: dict[str, Any] = {"field_manager": self._manager, "force": True, **self._raw()}
        forced["_content_type"] = APPLY_PATCH
        return self._json(
            "apply raycluster status",
            lambda: patch(group, version, namespace, plural, name, body, **forced),
        )

    # -- events --------------------------------------------------------------------------------

    def emit(self, cluster: Mapping[str, Any], notice: Notice, now_s: float) -> None:
        """A core/v1 Event on the RayCluster ``cluster`` (as read), at ``now_s`` (unix)."""
        meta = cluster.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        when = datetime.datetime.fromtimestamp(now_s, datetime.UTC)
        event = k8s.CoreV1Event(
            metadata=k8s.V1ObjectMeta(generate_name=f"{meta.get('name')}.", namespace=namespace),
            involved_object=k8s.V1ObjectReference(
                api_version="ray.io/v1",
                kind="RayCluster",
                name=str(meta.get("name") or ""),
                namespace=namespace,
                uid=str(meta.get("uid") or ""),
                resource_version=str(meta.get("resourceVersion") or ""),
            ),
            reason=notice.reason,
            message=notice.message[:1024],
            type=notice.type,
            source=k8s.V1EventSource(component=self._manager),
            reporting_component=self._manager,
            reporting_instance=self._instance,
            first_timestamp=when,
            last_timestamp=when,
            count=1,
        )
        create = self._core.create_namespaced_event
        self._calls.run("create event", lambda: create(namespace, event, **self._raw()))

    # -- plumbing ------------------------------------------------------------------------------

    def _raw(self) -> dict[str, Any]:
        return {"_preload_content": False, "_request_timeout": self._timeout}

    def _json(self, operation: str, call: Callable[[], Any]) -> dict[str, Any]:
        response = self._calls.run(operation, call)
        body = json.loads(response.data or b"{}")
        if not isinstance(body, dict):
            raise CallFailed(operation, 0, f"expected a JSON object, got {type(body).__name__}", ())
        return body

    def _maybe(self, operation: str, call: Callable[[], Any]) -> dict[str, Any] | None:
        try:
            return self._json(operation, call)
        except CallFailed as exc:
            if exc.status == NOT_FOUND:
                return None
            raise


def _stamped(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, **obj}


def _access_table(
    core: k8s.CoreV1Api, rbac: k8s.RbacAuthorizationV1Api, custom: k8s.CustomObjectsApi
) -> dict[Kind, _Access]:
    """Each kind's four calls, in one shape whatever its API."""

    def typed(list_: _Call, read: _Call, patch: _Call, delete: _Call) -> _Access:
        return _Access(
            list=list_,
            read=lambda ns, name, **kw: read(name, ns, **kw),
            patch=lambda ns, name, body, **kw: patch(name, ns, body, **kw),
            delete=lambda ns, name, body, **kw: delete(name, ns, body=body, **kw),
        )

    def custom_kind(kind: Kind) -> _Access:
        group, version = kind.api_version.split("/")
        where = (group, version)
        plural = _PLURALS[kind]
        return _Access(
            list=lambda ns, **kw: custom.list_namespaced_custom_object(*where, ns, plural, **kw),
            read=lambda ns, name, **kw: custom.get_namespaced_custom_object(
                *where, ns, plural, name, **kw
            ),
            patch=lambda ns, name, body, **kw: custom.patch_namespaced_custom_object(
                *where, ns, plural, name, body, **kw
            ),
            delete=lambda ns, name, body, **kw: custom.delete_namespaced_custom_object(
                *where, ns, plural, name, body=body, **kw
            ),
        )

    return {
        Kind.SERVICE_ACCOUNT: typed(
            core.list_namespaced_service_account,
            core.read_namespaced_service_account,
            core.patch_namespaced_service_account,
            core.delete_namespaced_service_account,
        ),
        Kind.ROLE: typed(
            rbac.list_namespaced_role,
            rbac.read_namespaced_role,
            rbac.patch_namespaced_role,
            rbac.delete_namespaced_role,
        ),
        Kind.ROLE_BINDING: typed(
            rbac.list_namespaced_role_binding,
            rbac.read_namespaced_role_binding,
            rbac.patch_namespaced_role_binding,
            rbac.delete_namespaced_role_binding,
        ),
        Kind.RAY_WORKER_GROUP: custom_kind(Kind.RAY_WORKER_GROUP),
        Kind.SCALED_OBJECT: custom_kind(Kind.SCALED_OBJECT),
    }
