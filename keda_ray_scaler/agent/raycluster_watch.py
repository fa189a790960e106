"""KubeRay mode: the RayCluster read continuously, one object by list and watch.

Ray's own KubeRay autoscaler re-reads the RayCluster at every loop; this watch gives the agent
the same: a worker group added, removed or given new min/max, resources or idle timeout is what
the next poll plans with (:class:`RayClusterWatch` is the loop's
:class:`~keda_ray_scaler.agent.ports.SpecView`), with no restart.

- Start: the CLI's first read (a ConfigError at start, as before) seeds the watch. Then
  :meth:`RayClusterWatch.run` lists the RayCluster (``fieldSelector=metadata.name=<name>``) and
  watches it from the list's resourceVersion, re-opening the watch when the server ends it,
  relisting on 410 Gone or any failure (the pod cache's pattern: :mod:`~keda_ray_scaler.agent.kube`,
  the blocking client in a thread, events handed to the event loop).
- Each version of the object is read with :func:`~keda_ray_scaler.agent.raycluster.cluster_spec`;
  a changed spec is logged (``worker groups changed``, with what changed) and counted.
- Safety: ``fresh`` is False while the RayCluster is deleted, invalid (the last good spec is
  kept, the error logged), or unreadable (a failed watch until a relist succeeds; a plain 410
  relists without that). The loop then plans nothing and exports ``success=0``: missing or
  stale groups are never taken for an answer.

RBAC: ``rayclusters`` ``list`` and ``watch`` (already granted for the applier).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
import tenacity
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from prometheus_client import CollectorRegistry, Counter, Gauge

from keda_ray_scaler.agent.kube_retry import KUBE_ERRORS, backoff, status_of, with_retries
from keda_ray_scaler.agent.raycluster import RAYCLUSTER_API, cluster_spec
from keda_ray_scaler.errors import ConfigError, KubernetesError
from keda_ray_scaler.model import ClusterSpec, WorkerGroup

log = structlog.get_logger(__name__)

#: counter {cluster}: times the RayCluster's worker groups changed while the agent ran
SPEC_CHANGES = "ray_scaler_agent_spec_changes_total"
#: gauge {cluster}: 1 while the worker groups are fresh (the RayCluster watched and valid)
SPEC_FRESH = "ray_scaler_agent_spec_fresh"


@dataclass(frozen=True, slots=True)
class WatchSettings:
    """Where the RayCluster is and how the watch talks to the API server.

    ``retry_*``: a failed list, as the pod cache's; ``watch_timeout_s``: the server-side watch
    timeout (re-opened from the last resourceVersion); ``request_timeout_s``: the list's.
    """

    namespace: str
    name: str
    retry_attempts: int = 5
    retry_initial_s: float = 0.5
    retry_max_s: float = 10.0
    watch_timeout_s: int = 300
    request_timeout_s: float = 30.0


def group_changes(old: ClusterSpec, new: ClusterSpec) -> dict[str, Any]:
    """What differs between two specs, for the log line: groups added, removed, and for each
    changed group its changed fields as ``[old, new]``; cluster-wide fields likewise."""
    before = {g.name: g for g in old.worker_groups}
    after = {g.name: g for g in new.worker_groups}
    out: dict[str, Any] = {}
    if added := sorted(after.keys() - before.keys()):
        out["added"] = added
    if removed := sorted(before.keys() - after.keys()):
        out["removed"] = removed
    changed = {}
    for name in sorted(before.keys() & after.keys()):
        fields = _fields(before[name], after[name])
        if fields:
            changed[name] = fields
    if changed:
        out["changed"] = changed
    for attr in ("max_workers", "upscaling_speed"):
        a, b = getattr(old, attr), getattr(new, attr)
        if a != b:
            out[attr] = [a, b]
    return out


def _fields(a: WorkerGroup, b: WorkerGroup) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for attr in ("min_replicas", "max_replicas", "idle_timeout_s", "cost"):
        if getattr(a, attr) != getattr(b, attr):
            out[attr] = [getattr(a, attr), getattr(b, attr)]
    if a.resources != b.resources:
        out["resources"] = [str(a.resources), str(b.resources)]
    return out


class RayClusterWatch:
    """The worker groups of one RayCluster, kept current; a ``SpecView`` (module doc).

    Changes happen on the event loop only (the watch thread hands each event over with
    ``call_soon_threadsafe``), so readers need no lock.
    """

    def __init__(
        self,
        api: k8s.CustomObjectsApi,
        settings: WatchSettings,
        initial: ClusterSpec,
        registry: CollectorRegistry,
        *,
        wait: tenacity.wait.wait_base | None = None,
    ) -> None:
        self._api = api
        self._settings = settings
        self._spec = initial
        self._fresh = True  # the caller read ``initial`` just now
        self._wait = wait or backoff(settings.retry_initial_s, settings.retry_max_s)
        self._watch: k8s_watch.Watch | None = None
        self._stopping = threading.Event()
        self._log = log.bind(cluster=settings.name, namespace=settings.namespace)
        self._changes = Counter(
            SPEC_CHANGES.removesuffix("_total"),
            "Times the RayCluster's worker groups changed while the agent ran.",
            ["cluster"],
            registry=registry,
        ).labels(settings.name)
        self._fresh_gauge = Gauge(
            SPEC_FRESH,
            "1 while the worker groups are fresh: the RayCluster watched, present and valid.",
            ["cluster"],
            registry=registry,
        ).labels(settings.name)
        self._fresh_gauge.set(1)

    # --- the SpecView ------------------------------------------------------------------------
    @property
    def spec(self) -> ClusterSpec:
        """The latest valid worker groups seen."""
        return self._spec

    @property
    def fresh(self) -> bool:
        """False while the RayCluster is deleted, invalid or unreadable."""
        return self._fresh

    # --- list and watch ----------------------------------------------------------------------
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
                except KubernetesError as exc:  # the list gave up after its retries
                    self._set_fresh(False, "RayCluster unreadable", error=str(exc))
                    await asyncio.sleep(self._settings.retry_max_s)
                except (*KUBE_ERRORS, ValueError) as exc:
                    status = status_of(exc)
                    if status != "410":  # expired: relisting at once loses nothing
                        self._set_fresh(False, "RayCluster watch failed", error=str(exc))
                    self._log.info("RayCluster watch ended, relisting", status=status)
        finally:
            self.stop()

    def stop(self) -> None:
        """Interrupt a blocking watch (safe from any thread)."""
        self._stopping.set()
        watcher = self._watch
        if watcher is not None:
            watcher.stop()  # type: ignore[no-untyped-call]  # kubernetes.watch is untyped

    async def relist(self) -> str:
        """List the RayCluster (with retries) and take it in; the list's resourceVersion."""

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
            raise KubernetesError(f"list RayCluster: {status_of(exc)} {exc}") from exc
        items = [i for i in body.get("items") or () if self._ours(i)]
        if items:
            self._take(items[0])
        else:
            self._set_fresh(False, "RayCluster not found")
        return str((body.get("metadata") or {}).get("resourceVersion") or "")

    def _list_raw(self, *args: Any, **kwargs: Any) -> Any:
        """``list_namespaced_custom_object`` under a name without a docstring, so the Watch
        yields the JSON as served (``raw_object``) and never tries a model type."""
        return self._api.list_namespaced_custom_object(*args, **kwargs)

    def _list_blocking(self) -> dict[str, Any]:
        s = self._settings
        group, version, plural = RAYCLUSTER_API
        body = self._api.list_namespaced_custom_object(
            group, version, s.namespace, plural,
            field_selector=f"metadata.name={s.name}", _request_timeout=s.request_timeout_s,
        )  # fmt: skip
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object, got {type(body).__name__}")
        return body

    def _watch_blocking(self, loop: asyncio.AbstractEventLoop, version: str) -> str:
        """Stream watch events into the loop until the watch ends; the last version seen."""
        s = self._settings
        group, api_version, plural = RAYCLUSTER_API
        watcher = k8s_watch.Watch()  # type: ignore[no-untyped-call]  # untyped module
        self._watch = watcher
        try:
            if self._stopping.is_set():
                return version
            stream: Iterator[dict[str, Any]] = watcher.stream(  # type: ignore[no-untyped-call]
                self._list_raw, group, api_version, s.namespace, plural,
                field_selector=f"metadata.name={s.name}",
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
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and self._ours(obj):
                    loop.call_soon_threadsafe(self._apply, event["type"], obj)
        finally:
            self._watch = None
        return version

    def _ours(self, obj: Mapping[str, Any]) -> bool:
        """The watched RayCluster (a field selector an emulator ignores is checked here too)."""
        return bool((obj.get("metadata") or {}).get("name") == self._settings.name)

    def _apply(self, kind: str, raw: Mapping[str, Any]) -> None:
        if kind == "DELETED":
            self._set_fresh(False, "RayCluster deleted")
        else:
            self._take(raw)

    def _take(self, raw: Mapping[str, Any]) -> None:
        """One version of the RayCluster: its worker groups, or the last good ones kept."""
        try:
            spec = cluster_spec(raw)
        except (ConfigError, ValueError, TypeError) as exc:
            self._set_fresh(False, "RayCluster invalid, last worker groups kept", error=str(exc))
            return
        if spec != self._spec:
            changes = group_changes(self._spec, spec)
            self._spec = spec
            self._changes.inc()
            self._log.info("worker groups changed", **changes)
        self._set_fresh(True, "RayCluster read")

    def _set_fresh(self, fresh: bool, why: str, **fields: Any) -> None:
        if fresh != self._fresh:
            if fresh:
                self._log.info("worker groups fresh", reason=why)
            else:
                self._log.error("worker groups not fresh", reason=why, **fields)
            self._fresh = fresh
            self._fresh_gauge.set(1 if fresh else 0)
        elif not fresh and fields:
            self._log.warning("worker groups still not fresh", reason=why, **fields)

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self._log.warning(
            "RayCluster list failed, retrying",
            attempt=state.attempt_number,
            status=status_of(exc) if exc else "",
            error=str(exc),
        )
