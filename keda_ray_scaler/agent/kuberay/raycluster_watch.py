"""KubeRay mode: the RayCluster read continuously, one object by list and watch.

Ray's own KubeRay autoscaler re-reads the RayCluster at every loop; this watch gives the agent
the same: a worker group added, removed or given new min/max, resources or idle timeout is what
the next poll plans with (:class:`RayClusterWatch` is the loop's
:class:`~keda_ray_scaler.agent.interfaces.SpecView`), with no restart.

- Start: the CLI's first read (a ConfigError at start, as before) seeds the watch. Then
  :meth:`RayClusterWatch.run` lists the RayCluster (``fieldSelector=metadata.name=<name>``) and
  watches it (:class:`~keda_ray_scaler.agent.kube.object_watch.ObjectWatch`: re-opened when the
  server ends it, relisted on 410 Gone or any failure).
- Each version of the object is read with
:func:`~keda_ray_scaler.agent.kuberay.raycluster.cluster_spec`;
  a changed spec is logged (``worker groups changed``, with what changed) and counted.
- Each version's uid goes to ``on_uid`` (the pod cache's
  :meth:`~keda_ray_scaler.agent.kube.pod_cache.PodCache.expect_owner_uid`: a worker pod must
  name this RayCluster, not one deleted and created again under its name).
- Safety: ``fresh`` is False while the RayCluster is deleted, invalid (the last good spec is
  kept, the error logged), or unreadable (a failed watch until a relist succeeds; a plain 410
  relists without that). The loop then plans nothing and exports ``success=0``: missing or
  stale groups are never taken for an answer.
- The KubeRay applier reads the RayCluster from here (:meth:`RayClusterWatch.current`: the
  latest version as served, None while not fresh or not yet listed: it then GETs it), and hands
  back the object its own patch returned (:meth:`RayClusterWatch.wrote`).

RBAC: ``rayclusters`` ``list`` and ``watch`` (already granted for the applier).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog
import tenacity
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry, Counter, Gauge

from keda_ray_scaler.agent.kube.object_watch import ObjectWatch, WatchSettings
from keda_ray_scaler.agent.kuberay.raycluster import RAYCLUSTER_API, cluster_spec
from keda_ray_scaler.agent.metric_names import SPEC_CHANGES, SPEC_FRESH
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.model import ClusterSpec, WorkerGroup

log = structlog.get_logger(__name__)


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
    """The worker groups of one RayCluster, kept current; a ``SpecView`` (module doc) and the
    :class:`~keda_ray_scaler.agent.kube.object_watch.WatchSink` of its watch.

    Changes happen on the event loop only (the watch hands each event over), so readers need
    no lock.
    """

    def __init__(
        self,
        api: k8s.CustomObjectsApi,
        settings: WatchSettings,
        initial: ClusterSpec,
        registry: CollectorRegistry,
        *,
        wait: tenacity.wait.wait_base | None = None,
        on_uid: Callable[[str], None] | None = None,
    ) -> None:
        self._settings = settings
        self._on_uid = on_uid
        self._spec = initial
        self._fresh = True  # the caller read ``initial`` just now
        self._raw: Mapping[str, Any] | None = None  # the latest valid version, once listed
        self._watch = ObjectWatch(
            api,
            RAYCLUSTER_API,
            settings,
            self,
            field_selector=f"metadata.name={settings.name}",
            wait=wait,
        )
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

    # --- the applier's read ------------------------------------------------------------------
    def current(self) -> dict[str, Any] | None:
        """The RayCluster as last served (read only), while fresh; None before the first list
        and while not fresh."""
        return dict(self._raw) if self._fresh and self._raw is not None else None

    def wrote(self, obj: Mapping[str, Any]) -> None:
        """The RayCluster as our own patch returned it: newer than the watch's until its event
        comes (a version the watch then brings replaces it)."""
        if self._raw is not None:
            self._raw = obj

    # --- list and watch ----------------------------------------------------------------------
    async def run(self) -> None:
        """List, then watch, forever; relist on 410 Gone or any failure. Cancel to stop."""
        await self._watch.run()

    def stop(self) -> None:
        """Interrupt a blocking watch (safe from any thread)."""
        self._watch.stop()

    async def relist(self) -> str:
        """List the RayCluster (with retries) and take it in; the list's resourceVersion."""
        return await self._watch.relist()

    # --- the WatchSink -----------------------------------------------------------------------
    def listed(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A list: the RayCluster in it, or not found."""
        ours = [i for i in items if self._ours(i)]
        if ours:
            self._take(ours[0])
        else:
            self._set_fresh(False, "RayCluster not found")

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One event: the RayCluster's new version, or its deletion."""
        if not self._ours(obj):
            return
        if kind == "DELETED":
            self._set_fresh(False, "RayCluster deleted")
        else:
            self._take(obj)

    def unreadable(self, why: str, error: str) -> None:
        """The list or the watch failed: stale until a list succeeds."""
        reason = "RayCluster unreadable" if why == "list failed" else "RayCluster watch failed"
        self._set_fresh(False, reason, error=error)

    def _ours(self, obj: Mapping[str, Any]) -> bool:
        """The watched RayCluster (a field selector an emulator ignores is checked here too)."""
        return bool((obj.get("metadata") or {}).get("name") == self._settings.name)

    def _take(self, raw: Mapping[str, Any]) -> None:
        """One version of the RayCluster: its worker groups, or the last good ones kept; its
        uid to ``on_uid``."""
        uid = str((raw.get("metadata") or {}).get("uid") or "")
        if uid and self._on_uid is not None:
            self._on_uid(uid)
        try:
            spec = cluster_spec(raw)
        except (ConfigError, ValueError, TypeError) as exc:
            self._set_fresh(False, "RayCluster invalid, last worker groups kept", error=str(exc))
            return
        self._raw = raw
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
