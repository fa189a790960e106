"""Kubernetes access for the victim protocol: one namespaced pod cache and annotation patches.

- The cache holds the worker pods of one Ray cluster (a label selector), filled by list and
  kept by watch, with a ``synced`` flag: False until the first list succeeds and again while a
  relist runs (after 410 Gone or any watch failure). Callers never act on an unsynced cache.
- Annotation changes are JSON merge patches of ``metadata.annotations`` carrying
  ``metadata.resourceVersion`` as a precondition, so a pod changed since it was read answers
  409 Conflict; the change is then re-decided on a fresh read (see :meth:`PodCache.update`).
- Every API call retries with bounded exponential backoff (tenacity) on 409, 429, 5xx and
  connection errors; failures are logged (structlog) and counted, never raised past the agent
  loop as anything but :class:`~keda_ray_scaler.errors.KubernetesError`.
- A drained victim the scale-down will never take (``choose.to_release``) is deleted by name
  with its uid as a precondition (:meth:`PodCache.delete`), Deployment mode only.
- The ``kubernetes`` client is synchronous: every call runs in ``asyncio.to_thread``.

RBAC: a namespaced Role with ``pods`` verbs ``get``, ``list``, ``watch``, ``patch`` and, in
Deployment mode, ``delete``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
import tenacity
import urllib3
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from prometheus_client import CollectorRegistry, Counter, Gauge

from keda_ray_scaler.agent.kube_retry import KUBE_ERRORS, backoff, status_of, with_retries
from keda_ray_scaler.agent.pod_info import pod_info
from keda_ray_scaler.agent.pod_store import PodStore
from keda_ray_scaler.agent.ranking import PodInfo
from keda_ray_scaler.errors import KubernetesError

log = structlog.get_logger(__name__)

T = TypeVar("T")

#: counter {cluster, operation, code}: failed Kubernetes API calls (each attempt)
KUBE_API_ERRORS = "ray_scaler_kube_api_errors_total"
#: counter {cluster}: relists after the watch expired (410 Gone) or failed
KUBE_RELISTS = "ray_scaler_kube_relists_total"
#: gauge {cluster}: 1 when the pod cache is synced
KUBE_CACHE_SYNCED = "ray_scaler_kube_cache_synced"

#: User-Agent of the agent's API calls (shows in audit logs).
USER_AGENT = "keda-ray-scaler"
_MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True, slots=True)
class KubeSettings:
    """How the agent talks to the Kubernetes API.

    - ``namespace``: where the Ray cluster's worker pods live (the Role is namespaced).
    - ``label_selector``: selects the worker pods of ONE Ray cluster, e.g.
      ``ray.io/cluster=demo,ray.io/node-type=worker``.
    - ``group_label``: the pod label naming its worker group (KubeRay: ``ray.io/group``).
    - ``retry_attempts``: attempts per API call (1 = no retry); bounded so a broken API server
      stalls one protocol step, not the agent.
    - ``retry_initial_s`` / ``retry_max_s``: exponential backoff with jitter between attempts.
    - ``watch_timeout_s``: server-side watch timeout; the watch is re-opened from the last
      resourceVersion when it ends (Kubernetes caps watches anyway).
    - ``request_timeout_s``: client read timeout for non-watch calls.
    """

    namespace: str
    label_selector: str
    cluster: str = ""
    group_label: str = "ray.io/group"
    retry_attempts: int = 5
    retry_initial_s: float = 0.5
    retry_max_s: float = 10.0
    watch_timeout_s: int = 300
    request_timeout_s: float = 30.0


def load_api(kubeconfig: str | None = None, context: str | None = None) -> k8s.CoreV1Api:
    """A CoreV1Api from in-cluster config (``kubeconfig`` None) or a kubeconfig file.

    Called by the CLI only: the choice is the caller's.
    """
    from kubernetes import config

    configuration = k8s.Configuration()
    if kubeconfig is None:
        # kubernetes.config ships no annotations.
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]  # no annotations
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
    api_client = k8s.ApiClient(configuration)
    api_client.user_agent = USER_AGENT
    return k8s.CoreV1Api(api_client)


def _json(response: object) -> dict[str, Any]:
    """The body of a ``_preload_content=False`` call: the client then returns the raw urllib3
    response although its annotations name the model type."""
    assert isinstance(response, urllib3.HTTPResponse), type(response)
    return dict(json.loads(response.data))


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
        self._wait = wait or backoff(settings.retry_initial_s, settings.retry_max_s)
        self._synced = False
        self._watch: k8s_watch.Watch | None = None
        self._stopping = threading.Event()
        self._log = log.bind(cluster=settings.cluster, namespace=settings.namespace)
        self._errors = Counter(
            KUBE_API_ERRORS,
            "Failed Kubernetes API calls, each attempt.",
            ["cluster", "operation", "code"],
            registry=registry,
        )
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
        try:
            while True:
                try:
                    version = await self.relist()
                    while not self._stopping.is_set():
                        version = await asyncio.to_thread(self._watch_blocking, loop, version)
                except asyncio.CancelledError:
                    raise
                except k8s.ApiException as exc:
                    self._unsync("watch", exc)
                except KubernetesError as exc:  # relist gave up after its retries
                    self._log.error("pod list failed", error=str(exc))
                    await asyncio.sleep(self._settings.retry_max_s)
                except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                    self._unsync("watch", exc)
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
        self._errors.labels(self._settings.cluster, operation, status_of(exc)).inc()
        self._log.warning("pod watch ended, relisting", status=status_of(exc), error=str(exc))

    async def relist(self) -> str:
        """List the pods (with retries), replace the cache, mark it synced; the list's version."""
        self._synced = False
        self._synced_gauge.labels(self._settings.cluster).set(0)
        body = await self._call("list", self._list_blocking)
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
        return _json(response)

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

    # --- reads and patches -----------------------------------------------------------------
    async def get(self, name: str) -> PodInfo | None:
        """A fresh read of one pod from the API server (not the cache); None when gone."""
        try:
            raw = await self._call("get", lambda: self._get_blocking(name))
        except KubernetesError as exc:
            if isinstance(exc.__cause__, k8s.ApiException) and exc.__cause__.status == 404:
                return None
            raise
        return pod_info(raw, self._settings.group_label)

    def _get_blocking(self, name: str) -> dict[str, Any]:
        response = self._api.read_namespaced_pod(
            name,
            self._settings.namespace,
            _preload_content=False,
            _request_timeout=self._settings.request_timeout_s,
        )
        return _json(response)

    def _patch_blocking(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        response = self._api.patch_namespaced_pod(
            name,
            self._settings.namespace,
            dict(body),
            _content_type=_MERGE_PATCH,
            _preload_content=False,
            _request_timeout=self._settings.request_timeout_s,
        )
        return _json(response)

    async def update(
        self,
        name: str,
        decide: Callable[[PodInfo], Mapping[str, str | None]],
        *,
        fresh: bool = False,
    ) -> PodInfo | None:
        """Change one pod's annotations as ``decide`` says, never on stale data.

        ``decide(pod)`` returns the annotation changes (value None deletes) for the pod as read;
        an empty mapping means nothing to write. The first decision uses the cached pod (a
        fresh GET when ``fresh``, for decisions where "nothing to write" must not come from a
        stale cache), each retry a fresh GET. The merge patch carries the pod's
        resourceVersion, so a pod changed in between answers 409 and the change is decided
        again. Returns the pod as written (or
        as read when nothing changed), None when the pod is gone.
        """
        first = not fresh

        async def attempt() -> PodInfo | None:
            nonlocal first
            pod = self._pods.get(name) if first else None
            first = False
            if pod is None:
                try:
                    raw = await asyncio.to_thread(self._get_blocking, name)
                except k8s.ApiException as exc:
                    if exc.status == 404:
                        return None
                    raise
                pod = pod_info(raw, self._settings.group_label)
            changes = {k: v for k, v in decide(pod).items() if pod.annotations.get(k) != v}
            if not changes:
                return pod
            body = {"metadata": {"resourceVersion": pod.resource_version, "annotations": changes}}
            self._log.info("patching pod annotations", pod=name, annotations=changes)
            raw = await asyncio.to_thread(self._patch_blocking, name, body)
            return pod_info(raw, self._settings.group_label)

        return await self._retrying("update", attempt)

    async def delete(self, name: str, uid: str) -> bool:
        """Delete the pod ``name`` if it is still the pod ``uid`` (a precondition): True when
        deleted, False when it is gone (404) or the name is another pod's now (409)."""

        async def attempt() -> bool:
            try:
                await asyncio.to_thread(self._delete_blocking, name, uid)
            except k8s.ApiException as exc:
                if exc.status in (404, 409):
                    return False
                raise
            return True

        self._log.info("deleting pod", pod=name, uid=uid)
        return await self._retrying("delete", attempt)

    def _delete_blocking(self, name: str, uid: str) -> None:
        self._api.delete_namespaced_pod(
            name,
            self._settings.namespace,
            body=k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=uid)),
            _preload_content=False,
            _request_timeout=self._settings.request_timeout_s,
        )

    # --- retries -----------------------------------------------------------------------------
    async def _call(self, operation: str, blocking: Callable[[], T]) -> T:
        async def attempt() -> T:
            return await asyncio.to_thread(blocking)

        return await self._retrying(operation, attempt)

    async def _retrying(self, operation: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """Every failed attempt counted and logged; the last one a KubernetesError."""
        try:
            return await with_retries(
                attempt,
                attempts=self._settings.retry_attempts,
                wait=self._wait,
                on_error=functools.partial(self._count_error, operation),
                before_sleep=functools.partial(self._log_retry, operation),
            )
        except KUBE_ERRORS as exc:
            self._log.error(
                "kubernetes call failed", operation=operation, status=status_of(exc), error=str(exc)
            )
            raise KubernetesError(f"{operation} failed: {status_of(exc)} {exc}") from exc

    def _count_error(self, operation: str, exc: BaseException) -> None:
        self._errors.labels(self._settings.cluster, operation, status_of(exc)).inc()

    def _log_retry(self, operation: str, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self._log.warning(
            "kubernetes call failed, retrying",
            operation=operation,
            attempt=state.attempt_number,
            status=status_of(exc) if exc else "",
            error=str(exc),
        )
