"""Per-cluster targets, refreshed in the background and shared by every ScaledObject.

Gather, decide, apply: a refresh fetches one :class:`~keda_ray_scaler.schema.ClusterSnapshot`
per Ray cluster (or one ``fetch_all()`` for every cluster when the source supports it), runs the
planner once, and stores each worker group's :class:`GroupTarget`. KEDA requests only read that
memory, so source queries per interval do not grow with the number of ScaledObjects or scaler
replicas' requests. The first request for a cluster nobody asked about yet triggers one fetch,
shared by every concurrent request (single flight).

Safety, applied to the planner's ``GroupPlan.target``:

1. clamp to ``[min_replicas, max_replicas]`` of the group;
2. after a restart, until the cluster has a snapshot taken after this process started, never
   below the group's current pods (scale-down held);
3. never below ``floor``: the group's pods that are not confirmed victims (drained and marked
   for deletion). The floor wins over ``max_replicas``: reporting fewer would ask the
   ReplicaSet to delete a pod that may be busy.

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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import structlog

from keda_ray_scaler.clock import Now, Sleep
from keda_ray_scaler.errors import (
    DemandUnavailable,
    NotFound,
    ScalerError,
    UntrustedData,
)
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import (
    ClusterSpec,
    NodeStatus,
    Plan,
    PlanningInput,
    WorkerNode,
    clamp_target,
)
from keda_ray_scaler.rpc.budget import TokenBucket
from keda_ray_scaler.rpc.entry import (
    GroupTarget,
    TargetEntry,
    check_not_future,
    pick,
    wait_first,
)
from keda_ray_scaler.rpc.refresh_steps import fetch_within, plan_timed, record_failure, record_ok
from keda_ray_scaler.rpc.target_settings import (
    TargetSettings as TargetSettings,  # re-exported: the server, the CLI and tests name it here
)
from keda_ray_scaler.schema import ClusterSnapshot
from keda_ray_scaler.sources.base import BatchSource, Source
from keda_ray_scaler.telemetry import ScalerMetrics

Planner = Callable[[PlanningInput], Plan]

_log = structlog.get_logger(__name__)


class TargetReader(Protocol):
    """What the servicer reads: :class:`TargetCache` or the refresher process's mirror."""

    settings: TargetSettings

    async def get(
        self, cluster: ClusterRef, group: str, max_age_s: float | None = None
    ) -> GroupTarget: ...

    def version(self, cluster: ClusterRef) -> int: ...

    async def wait_changed(self, cluster: ClusterRef, after: int) -> int: ...


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The result of one successful refresh of one cluster."""

    snapshot: ClusterSnapshot
    plan: Plan
    targets: Mapping[str, GroupTarget]


def group_targets(
    snapshot: ClusterSnapshot, plan: Plan, *, hold_scale_down: bool
) -> dict[str, GroupTarget]:
    """Apply the safety rules (module docstring) to every worker group of ``snapshot``."""
    spec: ClusterSpec = snapshot.input.cluster
    by_group: dict[str, list[WorkerNode]] = {g.name: [] for g in spec.worker_groups}
    for node in snapshot.input.nodes:
        if node.group in by_group:
            by_group[node.group].append(node)
    out: dict[str, GroupTarget] = {}
    for g in spec.worker_groups:
        nodes = by_group[g.name]
        current = len(nodes)
        floor = sum(1 for n in nodes if n.status is not NodeStatus.VICTIM)
        gp = plan.groups.get(g.name)
        planned = gp.target if gp is not None else current  # no decision: keep what runs
        held = hold_scale_down and clamp_target(planned, g, floor=0) < current
        target = clamp_target(planned, g, floor=floor, hold_at=current if held else 0)
        out[g.name] = GroupTarget(
            cluster=spec.name,
            group=g.name,
            target=target,
            planned=planned,
            floor=floor,
            current=current,
            snapshot_time_s=snapshot.snapshot_time_s,
            held=held,
        )
    return out


@dataclass(slots=True, kw_only=True)
class _Entry(TargetEntry):
    """A cluster refreshed here: its outcome, plus what refreshing it needs."""

    name: ClusterRef
    view: ClusterView | None = None  # the last successful refresh, kept through failures
    fresh_since_start: bool = False  # a snapshot taken after this process started was seen
    recheck_at_s: float = 0.0  # unknown to the source (NotFound): not fetched again before
    inflight: asyncio.Task[None] | None = None


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
        if planner is None:
            from keda_ray_scaler.planner import plan as default_planner

            planner = default_planner
        self._source = source
        self._clock = clock
        self._planner = planner
        self.settings = settings or TargetSettings()
        self._metrics = metrics
        self._sleep = sleep
        self._started_s = clock() if started_s is None else started_s
        self._on_change = on_change
        self._entries: dict[ClusterRef, _Entry] = {}
        self._batch = isinstance(source, BatchSource)
        self._planning = asyncio.Lock()
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

    def _touch(self, cluster: ClusterRef) -> _Entry:
        entry = self._entries.get(cluster)
        now = self._clock()
        if entry is None:
            self.settings.check_room(cluster, self._entries.keys())
            entry = self._entries[cluster] = _Entry(name=cluster, last_used_s=now)
            entry.inflight = asyncio.create_task(self._refresh_one(cluster))
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
            _log.info("forgetting unused ray cluster", namespace=name.namespace, cluster=name.name)
            del self._entries[name]
            if self._metrics is not None:
                self._metrics.forget_cluster(str(name))
            if self._on_change is not None:
                self._on_change(name)
        if not self._entries or self._batch:
            if self._entries:
                await self._refresh_batch()
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
                entry.inflight = asyncio.create_task(self._refresh_one(name))
            tasks.append(entry.inflight)
        if step_s > 0:
            await self._sleep(step_s)  # the last cluster's share: the round spans pace_s
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, Exception):
                _log.error("cluster refresh failed unexpectedly", error=repr(outcome))

    def _due(self, entry: _Entry) -> bool:
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

    async def _refresh_one(self, cluster: ClusterRef) -> None:
        try:
            snapshot = await fetch_within(
                self._source.fetch(cluster), self.settings.fetch_timeout_s, str(cluster)
            )
        except ScalerError as exc:
            self._fail([cluster], exc)
            return
        async with self._planning:  # one plan per loop iteration: RPCs interleave with plans
            self._apply(cluster, snapshot)
            await asyncio.sleep(0)

    async def _refresh_batch(self) -> None:
        source = self._source
        assert isinstance(source, BatchSource)
        names = list(self._entries)
        try:
            snapshots = await fetch_within(source.fetch_all(), self.settings.fetch_timeout_s, "*")
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

    def _fail(self, clusters: Iterable[ClusterRef], exc: ScalerError) -> None:
        for name in clusters:
            entry = self._entries.get(name)
            if entry is None:
                continue
            entry.error = exc
            if isinstance(exc, NotFound):
                entry.recheck_at_s = self._clock() + self.settings.not_found_recheck_s
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
                max_skew_s=self.settings.max_clock_skew_s,
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
        entry.success, entry.error = snapshot.success, None
        if self._metrics is not None:
            age_s = self._clock() - snapshot.snapshot_time_s
            record_ok(self._metrics, cluster, targets, before, age_s)
        self._notify(entry)

    def _notify(self, entry: _Entry) -> None:
        entry.notify()
        if self._on_change is not None:
            self._on_change(entry.name)

    async def aclose(self) -> None:
        """Cancel in-flight fetches (graceful stop)."""
        for entry in self._entries.values():
            if entry.inflight is not None and not entry.inflight.done():
                entry.inflight.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await entry.inflight
