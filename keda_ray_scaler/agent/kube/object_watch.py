"""Custom objects of one kind in one namespace, listed then watched for as long as the agent runs.

The loop is :class:`~keda_ray_scaler.agent.kube.list_watch.ListWatch` (the pod cache's too): list
(with retries, here), then watch from the list's resourceVersion, re-opening the watch when the
server ends it, relisting at once on 410 Gone and after a back-off on any other failure; a
:class:`WatchSink` sees everything on the event loop and needs no lock. What this module adds:
*what* is listed (:class:`CustomObjects`, a
:class:`~keda_ray_scaler.agent.kube.list_watch.Listing`),
the list's retries and what a sink hears (:class:`ObjectWatch`). Three sinks use it: the
RayCluster (:mod:`~keda_ray_scaler.agent.kuberay.raycluster_watch`), the RayWorkerGroups
(:mod:`~keda_ray_scaler.agent.kuberay.rwg_watch`) and the ScaledObjects
(:mod:`~keda_ray_scaler.agent.kuberay.scaledobject_watch`) the KubeRay applier reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
import tenacity
from kubernetes import client as k8s

from keda_ray_scaler.agent.kube.kube_retry import KUBE_ERRORS, backoff, status_of, with_retries
from keda_ray_scaler.agent.kube.list_watch import ListArgs, ListWatch
from keda_ray_scaler.clock import Sleep
from keda_ray_scaler.errors import KubernetesError

#: (API group, version, plural) of a custom resource
Api = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class WatchSettings:
    """Where the objects are and how the watch talks to the API server.

    ``name``: the RayCluster the objects belong to (the RayCluster itself, or the
    RayWorkerGroups naming it); ``retry_*``: a failed list, as the pod cache's;
    ``watch_timeout_s``: the server-side watch timeout (re-opened from the last
    resourceVersion); ``request_timeout_s``: the list's.
    """

    namespace: str
    name: str
    retry_attempts: int = 5
    retry_initial_s: float = 0.5
    retry_max_s: float = 10.0
    watch_timeout_s: int = 300
    request_timeout_s: float = 30.0


class WatchSink(Protocol):
    """What a watch reports, always on the event loop."""

    def listed(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A whole list (at start and at each relist)."""

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One ``ADDED``, ``MODIFIED`` or ``DELETED`` event."""

    def unreadable(self, why: str, error: str) -> None:
        """The list gave up after its retries, or a watch failed (not a plain 410)."""


@dataclass(frozen=True, slots=True)
class CustomObjects:
    """One kind (``kind``) in ``namespace``, by an optional field selector: a
    :class:`~keda_ray_scaler.agent.kube.list_watch.Listing`."""

    api: k8s.CustomObjectsApi
    kind: Api
    namespace: str
    field_selector: str | None = None
    request_timeout_s: float = 30.0

    def watch_args(self) -> ListArgs:
        """(group, version, namespace, plural) and the field selector."""
        group, version, plural = self.kind
        return (group, version, self.namespace, plural), {"field_selector": self.field_selector}

    def list_blocking(self) -> dict[str, Any]:
        """One list: the JSON list body; ValueError when the server sent something else."""
        group, version, plural = self.kind
        body = self.api.list_namespaced_custom_object(
            group, version, self.namespace, plural,
            field_selector=self.field_selector, _request_timeout=self.request_timeout_s,
        )  # fmt: skip
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object, got {type(body).__name__}")
        return body

    def list_raw(self, *args: Any, **kwargs: Any) -> Any:
        """``list_namespaced_custom_object`` under a docstring naming no return type, so the
        Watch yields the JSON as served (``raw_object``) and never tries a model type."""
        return self.api.list_namespaced_custom_object(*args, **kwargs)


class ObjectWatch:
    """Lists and watches one kind (``api``) in ``settings.namespace`` into ``sink``: the
    :class:`~keda_ray_scaler.agent.kube.list_watch.Follower` of its loop."""

    def __init__(
        self,
        api: k8s.CustomObjectsApi,
        kind: Api,
        settings: WatchSettings,
        sink: WatchSink,
        *,
        field_selector: str | None = None,
        wait: tenacity.wait.wait_base | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._settings = settings
        self._sink = sink
        self._listing = CustomObjects(
            api, kind, settings.namespace, field_selector, settings.request_timeout_s
        )
        self._loop = ListWatch(self._listing, self, settings, sleep=sleep)
        self._wait = wait or backoff(settings.retry_initial_s, settings.retry_max_s)
        self._log = structlog.get_logger(__name__).bind(
            kind=kind[2], cluster=settings.name, namespace=settings.namespace
        )

    async def run(self) -> None:
        """List, then watch, forever; relist at once on 410 Gone, after a back-off on any other
        failure (doubling from ``retry_initial_s`` to ``retry_max_s`` while the watches keep
        failing: a watch the server refuses, say a missing RBAC verb, must not become a loop
        of list and watch requests). Cancel to stop."""
        await self._loop.run()

    def stop(self) -> None:
        """Interrupt a blocking watch (safe from any thread)."""
        self._loop.stop()

    async def relist(self) -> str:
        """List (with retries) into the sink; the list's resourceVersion."""
        return await self._loop.relist()

    # --- the Follower ------------------------------------------------------------------------
    async def fetch_list(self) -> dict[str, Any]:
        """One list, retried; KubernetesError when the retries gave up."""

        async def attempt() -> dict[str, Any]:
            return await asyncio.to_thread(self._listing.list_blocking)

        try:
            return await with_retries(
                attempt,
                attempts=self._settings.retry_attempts,
                wait=self._wait,
                before_sleep=self._log_retry,
            )
        except KUBE_ERRORS as exc:
            kind = self._listing.kind[2]
            raise KubernetesError(f"list {kind}: {status_of(exc)} {exc}") from exc

    def listed(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A whole list, to the sink."""
        self._sink.listed(items)

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One event, to the sink."""
        self._sink.changed(kind, obj)

    def list_failed(self, exc: KubernetesError) -> None:
        """The sink hears the objects are unreadable."""
        self._sink.unreadable("list failed", str(exc))

    def watch_ended(self, exc: BaseException) -> None:
        """A plain 410 is only logged (the relist follows at once); the sink hears any other."""
        if status_of(exc) == "410":
            self._log.info("watch expired, relisting")
        else:
            self._sink.unreadable("watch failed", str(exc))

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self._log.warning(
            "list failed, retrying",
            attempt=state.attempt_number,
            status=status_of(exc) if exc else "",
            error=str(exc),
        )
