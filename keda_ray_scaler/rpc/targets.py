"""Per-cluster targets, refreshed in the background and shared by every ScaledObject.

Gather, decide, apply: a refresh fetches one :class:`~keda_ray_scaler.schema.ClusterSnapshot`
per Ray cluster (or one ``fetch_all()`` for every cluster when the source supports it), runs the
planner once, and stores each worker group's :class:`GroupTarget`. KEDA requests only read that
memory, so source queries per interval do not grow with the number of ScaledObjects or scaler
replicas' requests. The first request for a cluster nobody asked about yet triggers one fetch,
shared by every concurrent request (single flight).

This module decides *which* clusters are refreshed and *when*, and answers readers; one
cluster's refresh is :mod:`keda_ray_scaler.rpc.cluster_refresh`, the safety rules applied to
the planner's targets are :mod:`keda_ray_scaler.rpc.safety`.

Unknown is not zero: a failed fetch, an agent snapshot with ``success=False``, or one older
than the maximum age (judged from the agent's snapshot time, not the fetch time) raises
:class:`~keda_ray_scaler.errors.DemandUnavailable` for every group of the cluster. A snapshot
time further in the future than ``max_clock_skew_s`` is refused too
(:class:`~keda_ray_scaler.errors.UntrustedData`, ``future_snapshot``): it would otherwise look
fresh for longer than the maximum age, and no sane agent clock produces it. Such a snapshot is
never planned on, so it cannot end the scale-down hold either.

Clusters are keyed by :class:`~keda_ray_scaler.identity.ClusterRef` (namespace and name); the
``cluster`` label of the metrics here is ``namespace/name``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Protocol

import structlog

from keda_ray_scaler.clock import Now, Sleep
from keda_ray_scaler.errors import NotFound, ScalerError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc.budget import TokenBucket
from keda_ray_scaler.rpc.cluster_refresh import (
    CacheEntry,
    ClusterRefresh,
    ClusterView,
    Planner,
)
from keda_ray_scaler.rpc.entry import GroupTarget, pick, wait_first
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.sources.base import BatchSource, Source
from keda_ray_scaler.telemetry import ScalerMetrics

_log = structlog.get_logger(__name__)


class TargetReader(Protocol):
    """What the servicer reads: :class:`TargetCache` or the refresher process's mirror."""

    settings: TargetSettings

    async def get(
        self, cluster: ClusterRef, group: str, max_age_s: float | None = None
    ) -> GroupTarget: ...

    def version(self, cluster: ClusterRef) -> int: ...

    async def wait_changed(self, cluster: ClusterRef, after: int) -> int: ...


class TargetCache:
    """Shared, background-refreshed targets of every Ray cluster a ScaledObject asked about.

    ``started_s`` (default: now) is when the scaler started, for holding scale-down until a
    snapshot taken after it arrives; ``on_change(cluster)`` is called on the event loop after
    every finished refresh of ``cluster`` and after it is forgotten (read it with
    :meth:`latest`): the refresher process publishes outcomes with it.
    """

    def __init__(
        self,
        source: Source,
        *,
        clock: Now,
        planner: Planner | None = None,
        settings: TargetSettings | None = None,
        metrics: ScalerMetrics | None = None,
        sleep: Sleep = asyncio.sleep,
        started_s: float | None = None,
        on_change: Callable[[ClusterRef], None] | None = None,
    ) -> None:
        self._clock = clock
        self.settings = settings or TargetSettings()
        self._metrics = metrics
        self._sleep = sleep
        self._entries: dict[ClusterRef, CacheEntry] = {}
        self._refresher = ClusterRefresh(
            source,
            self._entries,
            clock=clock,
            planner=planner,
            settings=self.settings,
            metrics=metrics,
            started_s=clock() if started_s is None else started_s,
            on_change=on_change,
        )
        self._batch = isinstance(source, BatchSource)
        # one round may spend one interval's worth: the rounds are that far apart
        rate = self.settings.unknown_rechecks_per_s
        burst = max(1.0, rate * self.settings.refresh_interval_s)
        self._rechecks = TokenBucket(rate_per_s=rate, burst=burst)

    # --- reading -----------------------------------------------------------------------

    async def get(
        self, cluster: ClusterRef, group: str, max_age_s: float | None = None
    ) -> GroupTarget:
        """The current target of ``group``; raises DemandUnavailable or NotFound.

        ``max_age_s`` may only tighten the configured maximum age.
        """
        view = await self.view(cluster, max_age_s)
        return pick(view.targets, cluster, group)

    async def view(self, cluster: ClusterRef, max_age_s: float | None = None) -> ClusterView:
        """The cluster's current fresh view; waits for the first fetch of a new cluster."""
        entry = self._touch(cluster)
        if entry.view is None and entry.error is None and entry.inflight is not None:
            await wait_first(asyncio.shield(entry.inflight), cluster, self.settings.first_wait_s)
        entry.targets_now(
            cluster,
            now=self._clock(),
            max_age_s=self.settings.age_limit(max_age_s),
            max_skew_s=self.settings.max_clock_skew_s,
        )
        assert entry.view is not None  # targets_now raised otherwise
        return entry.view

    def touch(self, cluster: ClusterRef) -> None:
        """Mark ``cluster`` as used now; a new one is registered and its first fetch started.

        Raises DemandUnavailable when ``max_clusters`` are already refreshed.
        """
        self._touch(cluster)

    def _touch(self, cluster: ClusterRef) -> CacheEntry:
        entry = self._entries.get(cluster)
        now = self._clock()
        if entry is None:
            self.settings.check_room(cluster, self._entries.keys())
            entry = self._entries[cluster] = CacheEntry(name=cluster, last_used_s=now)
            entry.inflight = asyncio.create_task(self._refresher.one(cluster))
        entry.last_used_s = now
        return entry

    def latest(
        self, cluster: ClusterRef
    ) -> tuple[int, ClusterView | None, ScalerError | None] | None:
        """``(version, view, error)`` of the last finished refresh; None when not refreshed."""
        entry = self._entries.get(cluster)
        return None if entry is None else (entry.version, entry.view, entry.error)

    def version(self, cluster: ClusterRef) -> int:
        """How many refreshes of ``cluster`` have finished (0 when unknown)."""
        entry = self._entries.get(cluster)
        return entry.version if entry is not None else 0

    async def wait_changed(self, cluster: ClusterRef, after: int) -> int:
        """Wait until ``cluster`` has had a refresh newer than version ``after``; the new version.

        Returns at once when one already happened, so no refresh is missed between a check
        and the wait. A cluster forgotten meanwhile is registered again.
        """
        while True:
            entry = self._entries.get(cluster)
            if entry is None:
                with contextlib.suppress(ScalerError):
                    await self.view(cluster)  # registers it and waits for the first fetch
                continue
            if entry.version > after:
                return entry.version
            await entry.changed.wait()

    def clusters(self) -> list[ClusterRef]:
        """Clusters currently refreshed, sorted."""
        return sorted(self._entries)

    # --- refreshing ----------------------------------------------------------------------

    async def run(self) -> None:
        """Refresh every interval until cancelled; each round is paced over part of it."""
        pace_s = self.settings.refresh_interval_s * self.settings.pace_fraction
        while True:
            await self._sleep(self.settings.refresh_interval_s - pace_s)
            try:
                await self.refresh(pace_s=pace_s)
            except Exception:  # a bug in one round must not stop every later refresh
                _log.exception("refresh round failed")

    async def refresh(self, *, pace_s: float = 0.0) -> None:
        """One round: forget unused clusters, then fetch and plan every remaining one once.

        ``pace_s`` > 0 starts the clusters' refreshes evenly over that many seconds instead of
        all at once (per-cluster sources; a batch source fetches everything in one call), and
        the round lasts at least that long whatever the number of clusters, so that with
        :meth:`run`'s pause each cluster is fetched once per interval, not more.
        """
        now = self._clock()
        for name in [
            c
            for c, e in self._entries.items()
            if now - e.last_used_s > self.settings.forget_after_s
        ]:
            self._refresher.forget(name)
        if not self._entries or self._batch:
            if self._entries:
                await self._refresher.batch()
            if pace_s > 0:
                await self._sleep(pace_s)
            return
        tasks: list[asyncio.Task[None]] = []
        names = list(self._entries)
        step_s = pace_s / len(names)
        for i, name in enumerate(names):
            if step_s > 0 and i:
                await self._sleep(step_s)
            entry = self._entries.get(name)
            if entry is None:  # forgotten while we paced
                continue
            if not self._due(entry):
                continue
            if entry.inflight is None or entry.inflight.done():
                entry.inflight = asyncio.create_task(self._refresher.one(name))
            tasks.append(entry.inflight)
        if step_s > 0:
            await self._sleep(step_s)  # the last cluster's share: the round spans pace_s
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, Exception):
                _log.error("cluster refresh failed unexpectedly", error=repr(outcome))

    def _due(self, entry: CacheEntry) -> bool:
        """Whether to fetch ``entry`` this round: always, unless the source did not know it;
        then only after ``not_found_recheck_s`` and within the shared recheck budget."""
        if not isinstance(entry.error, NotFound):
            return True
        now = self._clock()
        if now < entry.recheck_at_s:
            return False
        if self._rechecks.take(now):
            return True
        if self._metrics is not None:
            self._metrics.rechecks_deferred.inc()
        return False

    async def aclose(self) -> None:
        """Cancel in-flight fetches (graceful stop)."""
        for entry in self._entries.values():
            if entry.inflight is not None and not entry.inflight.done():
                entry.inflight.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await entry.inflight
