"""The victim protocol's pod cache: the worker pods of one Ray cluster, by list and watch.

- The cache holds the worker pods of one Ray cluster (a label selector), filled by list and
  kept by watch, with a ``synced`` flag: False until the first list succeeds and again while a
  relist runs (after 410 Gone or any watch failure). Callers never act on an unsynced cache.
- Fresh reads, annotation patches and deletes are the calls of
  :class:`~keda_ray_scaler.agent.pod_api.PodApi` (retried, counted and logged), and so is the
  list; its settings and client: :mod:`~keda_ray_scaler.agent.kube_settings`.
- The ``kubernetes`` client is synchronous: every call runs in ``asyncio.to_thread``.

RBAC: a namespaced Role with ``pods`` verbs ``get``, ``list``, ``watch``, ``patch`` and, in
Deployment mode, ``delete``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import structlog
import tenacity
import urllib3
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from prometheus_client import CollectorRegistry, Counter, Gauge

from keda_ray_scaler.agent.kube_retry import status_of
from keda_ray_scaler.agent.kube_settings import KubeSettings
from keda_ray_scaler.agent.pod_api import Decide, PodApi, response_json
from keda_ray_scaler.agent.pod_info import pod_info
from keda_ray_scaler.agent.pod_store import PodStore
from keda_ray_scaler.agent.ranking import PodInfo
from keda_ray_scaler.errors import KubernetesError

log = structlog.get_logger(__name__)

#: counter {cluster}: relists after the watch expired (410 Gone) or failed
KUBE_RELISTS = "ray_scaler_kube_relists_total"
#: gauge {cluster}: 1 when the pod cache is synced
KUBE_CACHE_SYNCED = "ray_scaler_kube_cache_synced"


class PodCache(PodStore):
    """Worker pods of one Ray cluster, by list and watch, plus reads and patches.

    Mutations of the cache happen on the event loop only (the watch thread hands events over
    with ``call_soon_threadsafe``), so readers need no lock.
    """

    def __init__(
        self,
        api: k8s.CoreV1Api,
        settings: KubeSettings,
        registry: CollectorRegistry,
        *,
        wait: tenacity.wait.wait_base | None = None,
    ) -> None:
        super().__init__()
        self._api = api
        self._settings = settings
        self._calls = PodApi(api, settings, registry, self.get_cached, wait=wait)
        self._synced = False
        self._watch: k8s_watch.Watch | None = None
        self._stopping = threading.Event()
        self._log = log.bind(cluster=settings.cluster, namespace=settings.namespace)
        self._relists = Counter(
            KUBE_RELISTS,
            "Pod cache relists after watch expiry or failure.",
            ["cluster"],
            registry=registry,
        )
        self._synced_gauge = Gauge(
            KUBE_CACHE_SYNCED, "1 when the pod cache is synced.", ["cluster"], registry=registry
        )
        self._synced_gauge.labels(settings.cluster).set(0)

    # --- reading the cache -----------------------------------------------------------------
    @property
    def synced(self) -> bool:
        """True once a list succeeded and no relist is running."""
        return self._synced

    # --- list and watch --------------------------------------------------------------------
    async def run(self) -> None:
        """List, then watch, forever; relist on 410 Gone or any failure. Cancel to stop."""
        loop = asyncio.get_running_loop()
        self._stopping.clear()
        failed = 0  # watches failed in a row (not 410): each waits longer, as ObjectWatch's
        try:
            while True:
                try:
                    version = await self.relist()
                    while not self._stopping.is_set():
                        version = await asyncio.to_thread(self._watch_blocking, loop, version)
                        failed = 0
                except asyncio.CancelledError:
                    raise
                except KubernetesError as exc:  # relist gave up after its retries
                    self._log.error("pod list failed", error=str(exc))
                    await asyncio.sleep(self._settings.retry_max_s)
                except (k8s.ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                    self._unsync("watch", exc)
                    if status_of(exc) != "410":  # expired: relisting at once loses nothing
                        failed += 1
                        delay = self._settings.retry_initial_s * 2 ** (failed - 1)
                        await asyncio.sleep(min(delay, self._settings.retry_max_s))
        finally:
            self.stop()
            self._synced = False  # nothing keeps the cache fresh any more
            self._synced_gauge.labels(self._settings.cluster).set(0)

    def stop(self) -> None:
        """Interrupt a blocking watch (safe from any thread)."""
        self._stopping.set()
        watcher = self._watch
        if watcher is not None:
            # Watch.stop() also shuts the open socket down, ending the blocked read at once.
            watcher.stop()  # type: ignore[no-untyped-call]  # kubernetes.watch is untyped

    def _unsync(self, operation: str, exc: BaseException) -> None:
        self._synced = False
        self._synced_gauge.labels(self._settings.cluster).set(0)
        self._relists.labels(self._settings.cluster).inc()
        self._calls.count_error(operation, exc)
        self._log.warning("pod watch ended, relisting", status=status_of(exc), error=str(exc))

    async def relist(self) -> str:
        """List the pods (with retries), replace the cache, mark it synced; the list's version."""
        self._synced = False
        self._synced_gauge.labels(self._settings.cluster).set(0)
        body = await self._calls.call("list", self._list_blocking)
        pods = {}
        for raw in body.get("items") or ():
            info = pod_info(raw, self._settings.group_label)
            pods[info.name] = info
        self._pods = pods
        self._synced = True
        self._synced_gauge.labels(self._settings.cluster).set(1)
        self._notify()
        self._log.info("pod cache synced", pods=len(pods))
        return str((body.get("metadata") or {}).get("resourceVersion") or "")

    def _list_blocking(self) -> dict[str, Any]:
        response = self._api.list_namespaced_pod(
            self._settings.namespace,
            label_selector=self._settings.label_selector,
            _preload_content=False,
            _request_timeout=self._settings.request_timeout_s,
        )
        return response_json(response)

    def _list_raw(self, *args: Any, **kwargs: Any) -> Any:
        """``list_namespaced_pod`` without a model return type, so the Watch yields plain JSON
        (``raw_object``) instead of validating every event into ``V1Pod``: a field the model does
        not accept must not break the cache. (``deserialize=False`` loses 410 ERROR events.)"""
        return self._api.list_namespaced_pod(*args, **kwargs)

    def _watch_blocking(self, loop: asyncio.AbstractEventLoop, version: str) -> str:
        """Stream watch events into the loop until the watch ends; the last version seen."""
        watcher = k8s_watch.Watch()  # type: ignore[no-untyped-call]  # untyped module
        self._watch = watcher
        try:
            if self._stopping.is_set():
                return version
            stream: Iterator[dict[str, Any]] = watcher.stream(  # type: ignore[no-untyped-call]
                self._list_raw,
                self._settings.namespace,
                label_selector=self._settings.label_selector,
                resource_version=version or None,
                allow_watch_bookmarks=True,
                timeout_seconds=self._settings.watch_timeout_s,
                _request_timeout=(
                    self._settings.request_timeout_s,
                    self._settings.watch_timeout_s + 30,
                ),
            )
            for event in stream:
                obj = event.get("raw_object") or {}
                new_version = (obj.get("metadata") or {}).get("resourceVersion")
                if new_version:
                    version = str(new_version)
                if self._stopping.is_set():
                    break
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    loop.call_soon_threadsafe(self._apply, event["type"], obj)
        finally:
            self._watch = None
        return version

    def _apply(self, kind: str, raw: Mapping[str, Any]) -> None:
        info = pod_info(raw, self._settings.group_label)
        if kind == "DELETED":
            self._pods.pop(info.name, None)
        else:
            self._pods[info.name] = info
        self._notify()

    def _notify(self) -> None:
        self._changed.set()

    # --- reads and patches (PodApi) --------------------------------------------------------
    async def get(self, name: str) -> PodInfo | None:
        """A fresh read of one pod from the API server (not the cache); None when gone."""
        return await self._calls.get(name)

    async def update(self, name: str, decide: Decide, *, fresh: bool = False) -> PodInfo | None:
        """Change one pod's annotations as ``decide`` says, never on stale data: the first
        decision on the cached pod unless ``fresh`` (:meth:`PodApi.update`)."""
        return await self._calls.update(name, decide, fresh=fresh)

    async def delete(self, name: str, uid: str) -> bool:
        """Delete the pod ``name`` if it is still the pod ``uid`` (:meth:`PodApi.delete`)."""
        return await self._calls.delete(name, uid)
