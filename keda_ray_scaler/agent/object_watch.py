"""Custom objects of one kind in one namespace, listed then watched for as long as the agent runs.

The pattern of the pod cache (:mod:`~keda_ray_scaler.agent.kube`) for custom objects: list (with
retries), then watch from the list's resourceVersion, re-opening the watch when the server ends
it and relisting on 410 Gone or any failure; the blocking ``kubernetes`` client runs in a
thread and hands each event to the event loop (``call_soon_threadsafe``), so a
:class:`WatchSink` sees everything on the loop and needs no lock. Two sinks use it: the
RayCluster's worker groups (:mod:`~keda_ray_scaler.agent.raycluster_watch`) and the
RayWorkerGroups' replicas that wake the KubeRay applier (:mod:`~keda_ray_scaler.agent.rwg_watch`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
import tenacity
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from keda_ray_scaler.agent.kube_retry import KUBE_ERRORS, backoff, status_of, with_retries
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


class ObjectWatch:
    """Lists and watches one kind (``api``) in ``settings.namespace`` into ``sink``."""

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
        self._api = api
        self._kind = kind
        self._settings = settings
        self._sink = sink
        self._selector = field_selector
        self._wait = wait or backoff(settings.retry_initial_s, settings.retry_max_s)
        self._sleep = sleep  # between failed watches (injected: tests count the back-off)
        self._watch: k8s_watch.Watch | None = None
        self._stopping = threading.Event()
        self._log = structlog.get_logger(__name__).bind(
            kind=kind[2], cluster=settings.name, namespace=settings.namespace
        )

    async def run(self) -> None:
        """List, then watch, forever; relist at once on 410 Gone, after a back-off on any other
        failure (doubling from ``retry_initial_s`` to ``retry_max_s`` while the watches keep
        failing: a watch the server refuses, say a missing RBAC verb, must not become a loop
        of list and watch requests). Cancel to stop."""
        loop = asyncio.get_running_loop()
        self._stopping.clear()
        failed = 0  # watches failed in a row
        try:
            while True:
                try:
                    version = await self.relist()
                    while not self._stopping.is_set():
                        version = await asyncio.to_thread(self._watch_blocking, loop, version)
                        failed = 0
                except asyncio.CancelledError:
                    raise
                except KubernetesError as exc:  # the list gave up after its retries
                    self._sink.unreadable("list failed", str(exc))
                    await self._sleep(self._settings.retry_max_s)
                except (*KUBE_ERRORS, ValueError) as exc:
                    status = status_of(exc)
                    if status == "410":  # expired: relisting at once loses nothing
                        self._log.info("watch expired, relisting")
                        continue
                    failed += 1
                    self._sink.unreadable("watch failed", str(exc))
                    delay = self._settings.retry_initial_s * 2 ** (failed - 1)
                    await self._sleep(min(delay, self._settings.retry_max_s))
        finally:
            self.stop()

    def stop(self) -> None:
        """Interrupt a blocking watch (safe from any thread)."""
        self._stopping.set()
        watcher = self._watch
        if watcher is not None:
            watcher.stop()  # type: ignore[no-untyped-call]  # kubernetes.watch is untyped

    async def relist(self) -> str:
        """List (with retries) into the sink; the list's resourceVersion."""

        async def attempt() -> dict[str, Any]:
            return await asyncio.to_thread(self._list_blocking)

        try:
            body = await with_retries(
                attempt,
                attempts=self._settings.retry_attempts,
                wait=self._wait,
                before_sleep=self._log_retry,
            )
        except KUBE_ERRORS as exc:
            raise KubernetesError(f"list {self._kind[2]}: {status_of(exc)} {exc}") from exc
        self._sink.listed(list(body.get("items") or ()))
        return str((body.get("metadata") or {}).get("resourceVersion") or "")

    def _list_raw(self, *args: Any, **kwargs: Any) -> Any:
        """``list_namespaced_custom_object`` under a name without a docstring, so the Watch
        yields the JSON as served (``raw_object``) and never tries a model type."""
        return self._api.list_namespaced_custom_object(*args, **kwargs)

    def _list_blocking(self) -> dict[str, Any]:
        s = self._settings
        group, version, plural = self._kind
        body = self._api.list_namespaced_custom_object(
            group, version, s.namespace, plural,
            field_selector=self._selector, _request_timeout=s.request_timeout_s,
        )  # fmt: skip
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object, got {type(body).__name__}")
        return body

    def _watch_blocking(self, loop: asyncio.AbstractEventLoop, version: str) -> str:
        """Stream watch events into the loop until the watch ends; the last version seen."""
        s = self._settings
        group, api_version, plural = self._kind
        watcher = k8s_watch.Watch()  # type: ignore[no-untyped-call]  # untyped module
        self._watch = watcher
        try:
            if self._stopping.is_set():
                return version
            stream: Iterator[dict[str, Any]] = watcher.stream(  # type: ignore[no-untyped-call]
                self._list_raw, group, api_version, s.namespace, plural,
                field_selector=self._selector,
                resource_version=version or None,
                allow_watch_bookmarks=True,
                timeout_seconds=s.watch_timeout_s,
                _request_timeout=(s.request_timeout_s, s.watch_timeout_s + 30),
            )  # fmt: skip
            for event in stream:
                obj = event.get("raw_object") or event.get("object") or {}
                new_version = (obj.get("metadata") or {}).get("resourceVersion")
                if new_version:
                    version = str(new_version)
                if self._stopping.is_set():
                    break
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    loop.call_soon_threadsafe(self._sink.changed, event["type"], obj)
        finally:
            self._watch = None
        return version

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self._log.warning(
            "list failed, retrying",
            attempt=state.attempt_number,
            status=status_of(exc) if exc else "",
            error=str(exc),
        )
