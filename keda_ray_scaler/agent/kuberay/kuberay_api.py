"""The Kubernetes calls of KubeRay mode: the RayCluster, its RayWorkerGroups, ScaledObjects.

Custom objects travel as JSON dicts (never the client's models). Every call runs through
:class:`~keda_ray_scaler.agent.kube.kube_retry.KubeCalls`, as the pod calls do: transient errors
(429, 5xx, transport; 409 on reads and status writes) retried with bounded exponential backoff,
every failed attempt counted (``ray_scaler_kube_api_errors_total``, operations
``get_raycluster``, ``list_rayworkergroups``, ``patch_raycluster``,
``patch_rayworkergroup_status``), the last one raised as
:class:`~keda_ray_scaler.errors.KubernetesError` and logged once until the call (a status write:
per RayWorkerGroup) succeeds again; a RayCluster patch whose precondition fails (409
resourceVersion, 422 failed ``test`` op) is raised at once as
:class:`~keda_ray_scaler.errors.PreconditionFailed`, not counted there (the applier counts
conflicts), so the caller re-reads and decides again.
The client is synchronous: every call runs in ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
import tenacity
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler.agent.kube.kube_retry import (
    KUBE_ERRORS,
    KubeApiErrors,
    KubeCalls,
    backoff,
    kube_error,
    status_of,
)
from keda_ray_scaler.agent.kuberay.raycluster import RAYCLUSTER_API, WORKER_GROUP_API
from keda_ray_scaler.agent.kuberay.scaledobject import ScaledObject, read_scaled_objects
from keda_ray_scaler.agent.metric_names import SCALED_OBJECTS_REFUSED
from keda_ray_scaler.errors import KubernetesError, ScaledObjectRefused

log = structlog.get_logger(__name__)

_JSON_PATCH = "application/json-patch+json"
_MERGE_PATCH = "application/merge-patch+json"
SCALED_OBJECT_API = ("keda.sh", "v1alpha1", "scaledobjects")


@dataclass(frozen=True, slots=True)
class KubeRaySettings:
    """Where the RayCluster is and how hard to try.

    - ``namespace`` / ``raycluster``: the RayCluster (its RayWorkerGroups live beside it).
    - ``retry_attempts`` / ``retry_initial_s`` / ``retry_max_s``: transient errors (429, 5xx,
      transport) of one call, exponential backoff with jitter.
    - ``request_timeout_s``: client read timeout per call.
    """

    namespace: str
    raycluster: str
    retry_attempts: int = 3
    retry_initial_s: float = 0.2
    retry_max_s: float = 2.0
    request_timeout_s: float = 15.0


def read_raycluster(api: k8s.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    """One RayCluster as JSON (blocking; the CLI's start-up read); KubernetesError on failure."""
    group, version, plural = RAYCLUSTER_API
    try:
        obj = api.get_namespaced_custom_object(group, version, namespace, plural, name)
    except KUBE_ERRORS as exc:  # not retried nor counted: the CLI stops with a ConfigError
        raise kube_error(f"read RayCluster {namespace}/{name}", exc) from exc
    return _obj(obj)


class ScaledObjectRefusals:
    """ScaledObjects refused at the read: each version counted (``reason``) and logged once;
    the last read's kept for the status of the RayWorkerGroups they target."""

    def __init__(self, registry: CollectorRegistry, *, cluster: str) -> None:
        self._refused = Counter(
            SCALED_OBJECTS_REFUSED.removesuffix("_total"),
            "ScaledObjects refused at the read (malformed), each version once, by reason.",
            ["cluster", "reason"],
            registry=registry,
        )
        self._cluster = cluster
        self._last: tuple[ScaledObjectRefused, ...] = ()

    def note(self, refused: Sequence[ScaledObjectRefused]) -> list[ScaledObjectRefused]:
        """One read's refusals, counted; the new ones returned to be logged. A version the
        previous read refused is not new (memory: the last read's only)."""
        seen = {(r.name, r.version) for r in self._last}
        new = [r for r in refused if (r.name, r.version) not in seen]
        for r in new:
            self._refused.labels(self._cluster, r.reason.value).inc()
        self._last = tuple(refused)
        return new

    def aimed_at(self, rayworkergroup: str) -> list[str]:
        """Why the last read refused ScaledObjects targeting ``rayworkergroup`` (none: [])."""
        return [str(r) for r in self._last if r.target == rayworkergroup]

    def read(self, items: Sequence[object], logger: Any) -> list[ScaledObject]:
        """One read of the namespace's ScaledObjects (a GET's or the watch's): the views
        (:func:`~keda_ray_scaler.agent.kuberay.scaledobject.read_scaled_objects`), each new
        refusal counted and logged on ``logger``."""
        views, refused = read_scaled_objects(items)
        for r in self.note(refused):
            logger.warning(
                "ScaledObject refused",
                scaled_object=r.name,
                resource_version=r.version,
                field=r.field,
                reason=r.reason.value,
                rayworkergroup=r.target,
                error=str(r),
            )
        return views


class KubeRayApi:
    """The calls one RayCluster's applier makes; failed ones counted in ``errors`` (the
    registry's one counter: the pod cache's
    :attr:`~keda_ray_scaler.agent.kube.pod_cache.PodCache.api_errors`), refused ScaledObjects
    in ``refusals`` (by default in a registry of its own)."""

    def __init__(
        self,
        api: k8s.CustomObjectsApi,
        settings: KubeRaySettings,
        errors: KubeApiErrors,
        *,
        wait: tenacity.wait.wait_base | None = None,
        refusals: ScaledObjectRefusals | None = None,
    ) -> None:
        self._api = api
        self._settings = settings
        self._refusals = refusals or ScaledObjectRefusals(
            CollectorRegistry(), cluster=settings.raycluster
        )
        self._calls = KubeCalls(
            errors,
            cluster=settings.raycluster,
            namespace=settings.namespace,
            attempts=settings.retry_attempts,
            wait=wait or backoff(settings.retry_initial_s, settings.retry_max_s),
        )
        self._log = log.bind(cluster=settings.raycluster, namespace=settings.namespace)

    async def raycluster(self) -> dict[str, Any]:
        """A fresh read of the RayCluster."""
        s = self._settings
        group, version, plural = RAYCLUSTER_API
        return await self._call(
            "get_raycluster",
            lambda: self._api.get_namespaced_custom_object(
                group, version, s.namespace, plural, s.raycluster,
                _request_timeout=s.request_timeout_s,
            ),
        )  # fmt: skip

    async def worker_groups(self) -> list[dict[str, Any]]:
        """The RayWorkerGroups of the namespace that name this RayCluster."""
        s = self._settings
        group, version, plural = WORKER_GROUP_API
        body = await self._call(
            "list_rayworkergroups",
            lambda: self._api.list_namespaced_custom_object(
                group, version, s.namespace, plural, _request_timeout=s.request_timeout_s
            ),
        )
        items = body.get("items") or []
        return [i for i in items if (i.get("spec") or {}).get("rayCluster") == s.raycluster]

    async def scaled_objects(self) -> list[ScaledObject]:
        """ScaledObjects of the namespace, each parsed into its view; empty when they cannot be
        read (no KEDA, no RBAC). A malformed one is left out, with every one targeting its
        RayWorkerGroup (:func:`~keda_ray_scaler.agent.kuberay.scaledobject.read_scaled_objects`),
        counted and logged once (:class:`ScaledObjectRefusals`); never raises for one."""
        s = self._settings
        group, version, plural = SCALED_OBJECT_API
        try:
            body = _obj(
                await asyncio.to_thread(
                    self._api.list_namespaced_custom_object,
                    group, version, s.namespace, plural,
                    _request_timeout=s.request_timeout_s,
                )
            )  # fmt: skip
        except KUBE_ERRORS as exc:  # optional: neither retried nor counted
            self._log.debug("ScaledObjects not readable", status=status_of(exc))
            return []
        items = body.get("items")
        return self._refusals.read(items if isinstance(items, list) else [], self._log)

    def refused_scaled_objects(self, rayworkergroup: str) -> list[str]:
        """Why the last read refused ScaledObjects targeting ``rayworkergroup`` (none: [])."""
        return self._refusals.aimed_at(rayworkergroup)

    async def patch_raycluster(self, patch: list[Any]) -> dict[str, Any]:
        """One JSON patch of the RayCluster; :class:`PreconditionFailed` on 409/422."""
        s = self._settings
        group, version, plural = RAYCLUSTER_API
        return await self._call(
            "patch_raycluster",
            lambda: self._api.patch_namespaced_custom_object(
                group, version, s.namespace, plural, s.raycluster, patch,
                _content_type=_JSON_PATCH, _request_timeout=s.request_timeout_s,
            ),
            preconditions=True,
        )  # fmt: skip

    async def patch_status(self, name: str, status: Mapping[str, Any]) -> dict[str, Any]:
        """A merge patch of one RayWorkerGroup's status subresource; the object as written."""
        s = self._settings
        group, version, plural = WORKER_GROUP_API
        return await self._call(
            "patch_rayworkergroup_status",
            lambda: self._api.patch_namespaced_custom_object_status(
                group, version, s.namespace, plural, name, {"status": dict(status)},
                _content_type=_MERGE_PATCH, _request_timeout=s.request_timeout_s,
            ),
            target=name,
        )  # fmt: skip

    async def _call(
        self,
        operation: str,
        blocking: Callable[[], object],
        *,
        preconditions: bool = False,
        target: str = "",
    ) -> dict[str, Any]:
        async def attempt() -> dict[str, Any]:
            return _obj(await asyncio.to_thread(blocking))

        return await self._calls.run(operation, attempt, preconditions=preconditions, target=target)


def _obj(value: object) -> dict[str, Any]:
    """A custom object call's JSON body (the client annotates it as ``object``)."""
    if not isinstance(value, dict):
        raise KubernetesError(f"expected a JSON object, got {type(value).__name__}")
    return value
