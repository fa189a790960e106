"""One refresh of Ray clusters in this process: fetch, plan, apply the safety rules, store.

Each outcome lands in the cluster's :class:`CacheEntry`: the targets of a snapshot planned on,
or the error of a failed fetch, of a snapshot from the future (never planned on) or of a failed
plan, which wins over the last targets (unknown is not zero).

Why apart from :class:`~keda_ray_scaler.rpc.targets.TargetCache`: the cache decides *which*
clusters to refresh and *when*, and answers readers; what one refresh does to one cluster's
:class:`CacheEntry` (and who is told) is the same whatever the cache decides.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import structlog

from keda_ray_scaler.clock import Now
from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.errors import DemandUnavailable, NotFound, ScalerError, UntrustedData
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import PlanningInput
from keda_ray_scaler.rpc.entry import GroupTarget, TargetEntry, check_not_future
from keda_ray_scaler.rpc.refresh_steps import (
    fetch_within,
    plan_timed,
    record_failure,
    record_ok,
)
from keda_ray_scaler.rpc.safety import group_targets
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.schema import ClusterSnapshot
from keda_ray_scaler.sources.base import BatchSource, Source
from keda_ray_scaler.telemetry import ScalerMetrics

Planner = Callable[[PlanningInput], Plan]

_log = structlog.get_logger("keda_ray_scaler.rpc.targets")  # the cache's events, as before


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The result of one successful refresh of one cluster."""

    snapshot: ClusterSnapshot
    plan: Plan
    targets: Mapping[str, GroupTarget]


@dataclass(slots=True, kw_only=True)
class CacheEntry(TargetEntry):
    """A cluster refreshed here: its outcome, plus what refreshing it needs."""

    name: ClusterRef
    view: ClusterView | None = None  # the last successful refresh, kept through failures
    fresh_since_start: bool = False  # a snapshot taken after this process started was seen
    recheck_at_s: float = 0.0  # unknown to the source (NotFound): not fetched again before
    misses: int = 0  # NotFound answers in a row: each doubles the wait before the next check
    inflight: asyncio.Task[None] | None = None


class ClusterRefresh:
    """Refreshes clusters of a cache's ``entries`` and stores each outcome in its entry.

    ``entries`` is the cache's table, shared: a cluster no longer in it when its fetch ends is
    not stored. ``started_s`` is when the scaler started (scale-down is held until a snapshot
    taken after it); ``on_change(cluster)`` is called after every stored outcome and after a
    cluster is forgotten. ``planner`` defaults to :func:`keda_ray_scaler.planner.plan`.
    """

    def __init__(
        self,
        source: Source,
        entries: dict[ClusterRef, CacheEntry],
        *,
        clock: Now,
        planner: Planner | None,
        settings: TargetSettings,
        metrics: ScalerMetrics | None,
        started_s: float,
        on_change: Callable[[ClusterRef], None] | None,
    ) -> None:
        if planner is None:
            from keda_ray_scaler.planner import plan as default_planner

            planner = default_planner
        self._source = source
        self._entries = entries
        self._clock = clock
        self._planner = planner
        self._settings = settings
        self._metrics = metrics
        self._started_s = started_s
        self._on_change = on_change
        self._planning = asyncio.Lock()

    async def one(self, cluster: ClusterRef) -> None:
        """Fetch and plan ``cluster`` (a per-cluster source)."""
        try:
            snapshot = await fetch_within(
                self._source.fetch(cluster), self._settings.fetch_timeout_s, str(cluster)
            )
        except ScalerError as exc:
            self._fail([cluster], exc)
            return
        async with self._planning:  # one plan per loop iteration: RPCs interleave with plans
            self._apply(cluster, snapshot)
            await asyncio.sleep(0)

    async def batch(self) -> None:
        """Fetch every cluster in one call (a batch source), then plan each."""
        source = self._source
        assert isinstance(source, BatchSource)
        names = list(self._entries)
        try:
            snapshots = await fetch_within(source.fetch_all(), self._settings.fetch_timeout_s, "*")
        except ScalerError as exc:
            self._fail(names, exc)
            return
        for name in names:
            snap = snapshots.get(name)
            if snap is None:
                self._fail([name], NotFound(f"Ray cluster {name} not found"))
            else:
                self._apply(name, snap)
                await asyncio.sleep(0)  # let RPCs in between two plans

    def forget(self, cluster: ClusterRef) -> None:
        """Stop refreshing ``cluster``: drop its entry and its metric series."""
        _log.info(
            "forgetting unused ray cluster", namespace=cluster.namespace, cluster=cluster.name
        )
        del self._entries[cluster]
        if self._metrics is not None:
            self._metrics.forget_cluster(str(cluster))
        if self._on_change is not None:
            self._on_change(cluster)

    def _fail(self, clusters: Iterable[ClusterRef], exc: ScalerError) -> None:
        for name in clusters:
            entry = self._entries.get(name)
            if entry is None:
                continue
            entry.error = exc
            if isinstance(exc, NotFound):
                entry.misses += 1
                entry.recheck_at_s = self._clock() + self._settings.recheck_after_s(entry.misses)
            record_failure(self._metrics, name, exc)
            self._notify(entry)

    def _apply(self, cluster: ClusterRef, snapshot: ClusterSnapshot) -> None:
        entry = self._entries.get(cluster)
        if entry is None:
            return
        try:  # a snapshot from the future is never planned on (nor ends the scale-down hold)
            check_not_future(
                cluster,
                snapshot_time_s=snapshot.snapshot_time_s,
                now=self._clock(),
                max_skew_s=self._settings.max_clock_skew_s,
            )
        except UntrustedData as exc:
            self._fail([cluster], exc)
            return
        if snapshot.snapshot_time_s >= self._started_s:
            entry.fresh_since_start = True
        try:
            plan = plan_timed(self._planner, snapshot.input, cluster, self._metrics)
        except DemandUnavailable as exc:
            self._fail([cluster], exc)
            return
        targets = group_targets(snapshot, plan, hold_scale_down=not entry.fresh_since_start)
        before = entry.view.targets if entry.view is not None else {}
        entry.view = ClusterView(snapshot=snapshot, plan=plan, targets=targets)
        entry.targets, entry.snapshot_time_s = targets, snapshot.snapshot_time_s
        entry.success, entry.error, entry.misses = snapshot.success, None, 0
        if self._metrics is not None:
            age_s = self._clock() - snapshot.snapshot_time_s
            record_ok(self._metrics, cluster, targets, before, age_s)
        self._notify(entry)

    def _notify(self, entry: CacheEntry) -> None:
        entry.notify()
        if self._on_change is not None:
            self._on_change(entry.name)
