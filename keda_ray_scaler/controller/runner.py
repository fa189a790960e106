"""The controller's loop: a pass over every RayCluster each ``resync_s``, and a round at once for
a RayCluster a watch sees change.

Tasks on one event loop, the blocking client always in a thread:

- per namespace, a watch of its RayClusters: an event that changes what a round reads (uid,
  ``generation``: the spec; annotations and labels; deletion) queues that cluster's round, so
  KubeRay's status writes queue nothing. A watch the server ends is opened again from the last
  version seen; on 410 Gone (that version expired) at once, after any other failure after a
  doubling wait (``retry_initial_s`` to ``watch_retry_max_s``), and the namespace is passed
  again (events may have been missed);
- a ticker queueing a pass of every namespace each ``resync_s``, the first at start: level
  triggered, a missed event or an object edited by hand waits at most that long;
- one worker running queued work one at a time (no two rounds of one cluster at once in a
  process; two processes are safe: each writes by server-side apply as the same field manager,
  an update only onto the version it read, and deletes by uid). Work already queued is not
  queued twice. A stale round's cluster is queued again after ``requeue_s``, doubling while it
  stays stale, at most ``resync_s``.

Work that raises something unexpected (a bug) is logged with its traceback and counted failed;
the loop goes on with the other clusters.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import structlog
import tenacity
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from prometheus_client import CollectorRegistry

from keda_ray_scaler.backoff import DoublingBackoff
from keda_ray_scaler.clock import Now, Sleep
from keda_ray_scaler.controller.kube_calls import (
    GONE,
    KUBE_ERRORS,
    CallFailed,
    KubeCalls,
    backoff,
    status_of,
)
from keda_ray_scaler.controller.kube_io import RAY_CLUSTER, KubeObjects
from keda_ray_scaler.controller.metrics import ControllerMetrics
from keda_ray_scaler.controller.reconcile import Outcome, Reconciler
from keda_ray_scaler.controller.settings import ControllerSettings

log = structlog.get_logger(__name__)

#: (namespace, RayCluster name); the name empty: the whole namespace
Work = tuple[str, str]


def fingerprint(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a round reads of a RayCluster, apart from the spec's content (its generation)."""
    meta = obj.get("metadata") or {}

    def pairs(key: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((str(k), str(v)) for k, v in (meta.get(key) or {}).items()))

    return (
        meta.get("uid"),
        meta.get("generation"),
        pairs("annotations"),
        pairs("labels"),
        bool(meta.get("deletionTimestamp")),
    )


class Runner:
    """Runs ``reconciler`` over ``settings.namespaces`` (module doc) until cancelled; ``kube``
    lists and watches the RayClusters."""

    def __init__(
        self,
        reconciler: Reconciler,
        kube: KubeObjects,
        settings: ControllerSettings,
        metrics: ControllerMetrics,
        *,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._reconciler = reconciler
        self._kube = kube
        self._settings = settings
        self._metrics = metrics
        self._sleep = sleep
        self._queue: asyncio.Queue[Work] = asyncio.Queue()
        self._queued: set[Work] = set()
        self._stale: dict[Work, int] = {}
        self._seen: dict[Work, tuple[Any, ...]] = {}
        self._later: set[asyncio.Task[None]] = set()
        self._watches: dict[str, k8s_watch.Watch] = {}
        self._stopping = threading.Event()

    async def run(self) -> None:
        """The loop (module doc); cancel to stop (open watches are closed on the way out)."""
        self._stopping.clear()
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._tick())
                tasks.create_task(self._work())
                for namespace in self._settings.namespaces:
                    tasks.create_task(self._watch(namespace))
        finally:
            self.stop()

    def stop(self) -> None:
        """Close the open watches (safe from any thread)."""
        self._stopping.set()
        for watcher in list(self._watches.values()):
            watcher.stop()  # type: ignore[no-untyped-call]  # shuts the socket: the read ends

    def enqueue(self, work: Work) -> None:
        """Queue ``work`` unless it is queued already."""
        if work not in self._queued:
            self._queued.add(work)
            self._queue.put_nowait(work)

    # -- the ticker and the worker --------------------------------------------------------------

    async def _tick(self) -> None:
        while True:
            for namespace in self._settings.namespaces:
                self.enqueue((namespace, ""))
            await self._sleep(self._settings.resync_s)

    async def _work(self) -> None:
        while True:
            work = await self._queue.get()
            self._queued.discard(work)
            outcomes = await asyncio.to_thread(self._do, work)
            for done, outcome in outcomes.items():
                self._after(done, outcome)

    def _do(self, work: Work) -> dict[Work, Outcome]:
        """One unit of work (blocking): each cluster's outcome."""
        namespace, name = work
        try:
            if not name:
                results = self._reconciler.namespace(namespace)
                return {(namespace, n): r.outcome for n, r in results.items()}
            result = self._reconciler.cluster(namespace, name)
            return {} if result is None else {work: result.outcome}
        except CallFailed as exc:
            return {work: self._reconciler.failed(namespace, name, exc).outcome}
        except Exception as exc:  # a bug: logged with its traceback, the loop goes on
            log.exception("round crashed", namespace=namespace, cluster=name)
            failed = CallFailed("round", 0, f"{type(exc).__name__}: {exc}", ())
            return {work: self._reconciler.failed(namespace, name, failed).outcome}

    def _after(self, work: Work, outcome: Outcome) -> None:
        """Queue a stale cluster again, later each time it stays stale."""
        if outcome is not Outcome.STALE:
            self._stale.pop(work, None)
            return
        count = self._stale[work] = self._stale.get(work, 0) + 1
        s = self._settings
        delay_s = DoublingBackoff(s.requeue_s, s.resync_s).delay_s(count)
        task = asyncio.create_task(self._requeue(work, delay_s))
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def _requeue(self, work: Work, delay_s: float) -> None:
        await self._sleep(delay_s)
        self.enqueue(work)

    # -- the watches ---------------------------------------------------------------------------

    async def _watch(self, namespace: str) -> None:
        loop = asyncio.get_running_loop()
        s = self._settings
        backoff = DoublingBackoff(s.retry_initial_s, s.watch_retry_max_s)
        failures = 0
        version = ""
        while True:
            try:
                if not version:
                    _, version = await asyncio.to_thread(self._kube.list_clusters, namespace)
                version = await asyncio.to_thread(self._stream, loop, namespace, version)
                failures = 0
            except (CallFailed, *KUBE_ERRORS, ValueError) as exc:
                self._metrics.watch_restarts.labels(namespace).inc()
                version = ""
                gone = status_of(exc) == GONE or getattr(exc, "status", 0) == GONE
                failures = 0 if gone else failures + 1
                log.warning("raycluster watch ended", namespace=namespace, error=str(exc))
                await self._sleep(backoff.delay_s(failures))
                self.enqueue((namespace, ""))

    def _stream(self, loop: asyncio.AbstractEventLoop, namespace: str, version: str) -> str:
        """Hand the watch's events to the loop until the server ends it; the last version."""
        s = self._settings
        group, api_version, plural = RAY_CLUSTER
        custom = self._kube.custom

        def list_raw(*args: Any, **kwargs: Any) -> Any:
            """The list call under a docstring naming no type: the Watch yields JSON as served."""
            return custom.list_namespaced_custom_object(*args, **kwargs)

        watcher = k8s_watch.Watch()  # type: ignore[no-untyped-call]  # untyped module
        self._watches[namespace] = watcher
        try:
            if self._stopping.is_set():
                return version
            stream: Iterator[dict[str, Any]] = watcher.stream(  # type: ignore[no-untyped-call]
                list_raw, group, api_version, namespace, plural,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=s.watch_timeout_s,
                _request_timeout=(s.request_timeout_s, s.watch_timeout_s + 30),
            )  # fmt: skip
            for event in stream:
                obj = event.get("raw_object") or event.get("object") or {}
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    loop.call_soon_threadsafe(self._changed, namespace, event["type"], obj)
        finally:
            self._watches.pop(namespace, None)
        return version

    def _changed(self, namespace: str, kind: str, obj: Mapping[str, Any]) -> None:
        """A watch event, on the loop: queue the cluster's round if a round reads the change."""
        meta = obj.get("metadata") or {}
        work = (namespace, str(meta.get("name") or ""))
        if kind == "DELETED":  # its objects go by their owner reference
            self._seen.pop(work, None)
            self._reconciler.forget(str(meta.get("uid") or ""))
            return
        seen = fingerprint(obj)
        if self._seen.get(work) != seen:
            self._seen[work] = seen
            self.enqueue(work)


def build_runner(
    api_client: k8s.ApiClient,
    settings: ControllerSettings,
    registry: CollectorRegistry,
    *,
    now: Now,
    wait: tenacity.wait.wait_base | None = None,
) -> Runner:
    """The controller on ``api_client``: its calls, reads and writes, reconciler and loop;
    ``wait`` spaces a call's retries (default: the settings' backoff)."""
    metrics = ControllerMetrics(registry)
    retry_wait = wait or backoff(settings.retry_initial_s, settings.retry_max_s)
    calls = KubeCalls(metrics, attempts=settings.attempts, wait=retry_wait)
    io = KubeObjects(
        api_client,
        calls,
        field_manager=settings.field_manager,
        instance=settings.reporting_instance,
        request_timeout_s=settings.request_timeout_s,
    )
    return Runner(Reconciler(io, settings.template, metrics, now), io, settings, metrics)
