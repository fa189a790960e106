"""TargetCache: shared background refresh, staleness, safety rules, single flight."""

from __future__ import annotations

import asyncio

import pytest
import structlog.testing
from fake_clock import FakeClock
from prometheus_client import CollectorRegistry
from rpc_builders import T0, cluster_ref, fixed_planner, group, node, snapshot

from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.errors import (
    DemandUnavailable,
    Limit,
    LimitReached,
    NotFound,
    Refusal,
    UntrustedData,
)
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import NodeStatus, PlanningInput
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.targets import TargetCache
from keda_ray_scaler.schema import ClusterSnapshot
from keda_ray_scaler.sources.base import MemoryBatchSource, MemorySource
from keda_ray_scaler.telemetry import scaler_metrics

#: The tests' Ray cluster: ``ray`` in namespace ``ray``.
RAY = cluster_ref("ray")

V = NodeStatus.VICTIM


def cache(source: MemorySource, clock: FakeClock, planner=None, **settings: float) -> TargetCache:
    return TargetCache(
        source,
        clock=clock,
        planner=planner,
        settings=TargetSettings(**settings),
        metrics=scaler_metrics(CollectorRegistry()),
    )


async def test_seed_example_twenty_five_cpu_tasks_need_ten_ten_cpu_pods() -> None:
    """20 pending {CPU: 5} bundles on a 10-CPU group: target 10, active."""
    c = cache(MemorySource({RAY: snapshot(tasks={5: 20})}), FakeClock(T0))
    t = await c.get(RAY, "cpu")
    assert (t.target, t.active) == (10, True)


async def test_target_never_below_pods_that_are_not_victims() -> None:
    """Planner says 0; 3 running + 1 draining + 2 victims: target 4."""
    nodes = (
        node("a"),
        node("b"),
        node("c"),
        node("d", status=NodeStatus.DRAINING),
        node("e", status=V),
        node("f", status=V),
    )
    src = MemorySource({RAY: snapshot(nodes=nodes)})
    t = await cache(src, FakeClock(T0 - 1), fixed_planner({"cpu": 0})).get(RAY, "cpu")
    assert (t.target, t.floor, t.current, t.active) == (4, 4, 6, True)


async def test_only_victims_left_and_no_demand_is_inactive() -> None:
    """Planner says 0 and every pod is a victim: target 0, inactive."""
    src = MemorySource({RAY: snapshot(nodes=(node("a", status=V), node("b", status=V)))})
    t = await cache(src, FakeClock(T0 - 1), fixed_planner({"cpu": 0})).get(RAY, "cpu")
    assert (t.target, t.active) == (0, False)


@pytest.mark.parametrize(
    ("planned", "bounds", "pods", "expected"),
    [
        (0, (2, 10), 0, 2),  # raised to minReplicas
        (50, (0, 8), 0, 8),  # capped at maxReplicas
        (1, (0, 3), 5, 5),  # the floor (5 live pods) wins over maxReplicas
    ],
    ids=["min", "max", "floor-beats-max"],
)
async def test_target_is_clamped_to_bounds_then_floored(
    planned: int, bounds: tuple[int, int], pods: int, expected: int
) -> None:
    """Clamp to [min, max], then never below the live pods."""
    g = group(min=bounds[0], max=bounds[1])
    nodes = tuple(node(f"p{i}") for i in range(pods))
    src = MemorySource({RAY: snapshot(groups=(g,), nodes=nodes)})
    t = await cache(src, FakeClock(T0 - 1), fixed_planner({"cpu": planned})).get(RAY, "cpu")
    assert t.target == expected


async def test_stale_snapshot_is_unavailable_never_zero() -> None:
    """A snapshot older than max age raises DemandUnavailable with its age."""
    clock = FakeClock(T0 + 61)
    c = cache(MemorySource({RAY: snapshot(t=T0)}), clock, max_age_s=60)
    with pytest.raises(DemandUnavailable, match=r"61s old \(max 60s\)"):
        await c.get(RAY, "cpu")
    clock.t = T0 + 60
    assert (await c.get(RAY, "cpu")).target == 0


async def test_trigger_max_age_only_tightens() -> None:
    """A trigger's 10 s max age refuses a 30 s old snapshot the server would accept."""
    c = cache(MemorySource({RAY: snapshot(t=T0)}), FakeClock(T0 + 30), max_age_s=60)
    assert (await c.get(RAY, "cpu")).target == 0
    with pytest.raises(DemandUnavailable, match="max 10s"):
        await c.get(RAY, "cpu", max_age_s=10)


async def test_agent_poll_failure_is_unavailable() -> None:
    """A snapshot with success=False is DemandUnavailable."""
    c = cache(MemorySource({RAY: snapshot(success=False)}), FakeClock(T0))
    with pytest.raises(DemandUnavailable, match="last poll of Ray failed"):
        await c.get(RAY, "cpu")


async def test_failed_refresh_after_good_data_is_unavailable_not_last_value() -> None:
    """Once a refresh fails, the previous target is no longer served."""
    src = MemorySource({RAY: snapshot(tasks={5: 20})})
    c = cache(src, FakeClock(T0))
    assert (await c.get(RAY, "cpu")).target == 10
    src.failure = DemandUnavailable("prometheus down")
    await c.refresh()
    with pytest.raises(DemandUnavailable, match="prometheus down"):
        await c.get(RAY, "cpu")
    src.failure = None
    await c.refresh()
    assert (await c.get(RAY, "cpu")).target == 10


async def test_failed_refresh_is_logged_with_the_cluster_and_counted() -> None:
    """A failed refresh logs a warning bound to the cluster and counts it by outcome."""
    src = MemorySource({RAY: snapshot()})
    registry = CollectorRegistry()
    c = TargetCache(src, clock=FakeClock(T0), metrics=scaler_metrics(registry))
    await c.get(RAY, "cpu")
    src.failure = DemandUnavailable("prometheus down")
    with structlog.testing.capture_logs() as logs:
        await c.refresh()
    assert logs == [
        {
            "event": "refresh failed",
            "namespace": "ray",
            "cluster": "ray",
            "error": "prometheus down",
            "log_level": "warning",
        }
    ]
    labels = {"cluster": "ray/ray", "outcome": "unavailable"}
    assert registry.get_sample_value("keda_ray_scaler_refreshes_total", labels) == 1.0


async def test_restart_holds_scale_down_until_a_snapshot_newer_than_start() -> None:
    """Snapshot from before the start: 2 victims kept (target 4); a newer one lets them go."""
    nodes = (node("a"), node("b"), node("c", status=V), node("d", status=V))
    src = MemorySource({RAY: snapshot(nodes=nodes, t=T0 - 5)})
    clock = FakeClock(T0)
    c = cache(src, clock, fixed_planner({"cpu": 1}))
    t = await c.get(RAY, "cpu")
    assert (t.target, t.planned, t.held) == (4, 1, True)
    src.snapshots[RAY] = snapshot(nodes=nodes, t=T0 + 5)
    clock.advance(6)
    await c.refresh()
    t = await c.get(RAY, "cpu")
    assert (t.target, t.held) == (2, False)


async def test_restart_hold_does_not_block_scale_up() -> None:
    """Held scale-down still reports a higher planned target."""
    src = MemorySource({RAY: snapshot(nodes=(node("a"),), t=T0 - 5)})
    t = await cache(src, FakeClock(T0), fixed_planner({"cpu": 7})).get(RAY, "cpu")
    assert (t.target, t.held) == (7, False)


async def test_concurrent_first_requests_share_one_fetch() -> None:
    """50 requests for a new cluster while its first fetch is in flight: 1 fetch."""
    src = MemorySource({RAY: snapshot(tasks={5: 20})})
    src.gate = asyncio.Event()
    c = cache(src, FakeClock(T0))
    waiting = [asyncio.create_task(c.get(RAY, "cpu")) for _ in range(50)]
    await asyncio.sleep(0)
    src.gate.set()
    targets = await asyncio.gather(*waiting)
    assert ({t.target for t in targets}, src.fetches) == ({10}, 1)


async def test_fetches_per_refresh_do_not_grow_with_requests() -> None:
    """3 clusters, 300 requests, 2 refreshes: 3 first fetches + 3 per refresh = 9."""
    src = MemorySource({cluster_ref(n): snapshot(n) for n in ("a", "b", "c")})
    c = cache(src, FakeClock(T0))
    for _ in range(100):
        for n in ("a", "b", "c"):
            await c.get(cluster_ref(n), "cpu")
    await c.refresh()
    await c.refresh()
    assert src.fetches == 9


async def test_batch_source_refreshes_every_cluster_with_one_fetch_all() -> None:
    """A BatchSource is asked once per refresh for all clusters."""
    src = MemoryBatchSource({cluster_ref(n): snapshot(n) for n in ("a", "b", "c")})
    c = cache(src, FakeClock(T0))
    for n in ("a", "b", "c"):
        await c.get(cluster_ref(n), "cpu")
    await c.refresh()
    assert (src.batch_fetches, src.fetches) == (1, 3)


async def test_batch_source_missing_cluster_becomes_not_found() -> None:
    """A cluster absent from fetch_all's answer is NotFound."""
    src = MemoryBatchSource({cluster_ref("a"): snapshot("a")})
    c = cache(src, FakeClock(T0))
    await c.get(cluster_ref("a"), "cpu")
    del src.snapshots[cluster_ref("a")]
    await c.refresh()
    with pytest.raises(NotFound, match="ray/a not found"):
        await c.get(cluster_ref("a"), "cpu")


async def test_unknown_cluster_and_group_are_not_found() -> None:
    """NotFound names the missing cluster or group."""
    c = cache(MemorySource({RAY: snapshot()}), FakeClock(T0))
    with pytest.raises(NotFound, match="ray/nope"):
        await c.get(cluster_ref("nope"), "cpu")
    with pytest.raises(NotFound, match="worker group 'gpu' not found in Ray cluster ray/ray"):
        await c.get(RAY, "gpu")


async def test_source_that_never_answers_is_unavailable_after_the_deadlines() -> None:
    """A request waits first_wait_s for a new cluster; the fetch itself ends at fetch_timeout_s."""
    src = MemorySource({RAY: snapshot()})
    src.gate = asyncio.Event()
    c = cache(src, FakeClock(T0), first_wait_s=0.01, fetch_timeout_s=0.2)
    with pytest.raises(DemandUnavailable, match="no data yet for Ray cluster ray/ray"):
        await c.get(RAY, "cpu")
    c2 = cache(src, FakeClock(T0), first_wait_s=5, fetch_timeout_s=0.01)
    with pytest.raises(DemandUnavailable, match=r"source did not answer within 0.01s"):
        await c2.get(RAY, "cpu")
    src.gate.set()
    await c.aclose()


async def test_source_bug_and_planner_bug_read_as_unavailable() -> None:
    """Unexpected exceptions from the source or planner become DemandUnavailable."""

    class Broken(MemorySource):
        async def fetch(self, cluster: str):  # type: ignore[override]
            raise KeyError(cluster)

    with pytest.raises(DemandUnavailable, match="source failed: KeyError"):
        await cache(Broken(), FakeClock(T0)).get(RAY, "cpu")

    def bad_planner(inp: PlanningInput) -> Plan:
        raise ZeroDivisionError

    c = cache(MemorySource({RAY: snapshot()}), FakeClock(T0), bad_planner)
    with pytest.raises(DemandUnavailable, match="planner failed: ZeroDivisionError"):
        await c.get(RAY, "cpu")


async def test_clusters_nobody_asks_about_are_forgotten() -> None:
    """After forget_after_s without a request, a cluster is no longer fetched."""
    src = MemorySource({cluster_ref("a"): snapshot("a"), cluster_ref("b"): snapshot("b")})
    clock = FakeClock(T0)
    c = cache(src, clock, forget_after_s=100)
    await c.get(cluster_ref("a"), "cpu")
    await c.get(cluster_ref("b"), "cpu")
    clock.advance(50)
    await c.get(cluster_ref("a"), "cpu")
    clock.advance(60)
    await c.refresh()
    assert (c.clusters(), src.fetches) == ([cluster_ref("a")], 3)


async def test_refresh_loop_survives_a_failing_round() -> None:
    """run() sleeps the interval between rounds and keeps going after a round raises."""
    rounds: list[float] = []
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(rounds) == 3:
            raise asyncio.CancelledError

    c = TargetCache(
        MemorySource(),
        clock=FakeClock(T0),
        settings=TargetSettings(refresh_interval_s=7),
        sleep=fake_sleep,
    )

    async def flaky(*, pace_s: float = 0.0) -> None:
        rounds.append(pace_s)
        if len(rounds) == 1:
            raise RuntimeError("bug")

    c.refresh = flaky  # type: ignore[method-assign]
    with pytest.raises(asyncio.CancelledError):
        await c.run()
    # a tenth of the interval asleep, nine tenths pacing the round's clusters
    assert rounds == pytest.approx([6.3, 6.3, 6.3])
    assert slept == pytest.approx([0.7, 0.7, 0.7, 0.7])


async def test_a_paced_round_spreads_the_clusters_evenly_and_fetches_each_once() -> None:
    """4 clusters paced over 2 s: a 0.5 s share each (the round spans its 2 s, so a refresh
    loop fetches each cluster once per interval), one fetch and one plan per cluster."""
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    names = ("a", "b", "c", "d")
    src = MemorySource({cluster_ref(n): snapshot(n) for n in names})
    c = TargetCache(src, clock=FakeClock(T0), sleep=fake_sleep)
    for n in names:
        await c.get(cluster_ref(n), "cpu")
    fetched = src.fetches
    await c.refresh(pace_s=2.0)
    assert (slept, src.fetches - fetched) == ([0.5, 0.5, 0.5, 0.5], 4)


async def test_clusters_beyond_the_maximum_are_unavailable_not_fetched() -> None:
    """With max_clusters=2, a third cluster is refused without a fetch."""
    src = MemorySource({cluster_ref(n): snapshot(n) for n in ("a", "b", "c")})
    c = TargetCache(src, clock=FakeClock(T0), settings=TargetSettings(max_clusters=2))
    await c.get(cluster_ref("a"), "cpu")
    await c.get(cluster_ref("b"), "cpu")
    with pytest.raises(DemandUnavailable, match="already refreshing 2 clusters"):
        await c.get(cluster_ref("c"), "cpu")
    assert (c.clusters(), src.fetches) == ([cluster_ref("a"), cluster_ref("b")], 2)


async def test_the_refresh_loop_fetches_one_cluster_once_per_interval() -> None:
    """One cluster, a 5 s interval paced over 90 %: the loop sleeps 5 s per fetch in all (the
    round spans its pace even with a single cluster, so pacing never shortens the period)."""
    slept: list[float] = []
    src = MemorySource({cluster_ref("a"): snapshot("a")})

    async def fake_sleep(seconds: float) -> None:
        if src.fetches >= 4:
            raise asyncio.CancelledError
        slept.append(seconds)

    c = TargetCache(
        src, clock=FakeClock(T0), settings=TargetSettings(refresh_interval_s=5), sleep=fake_sleep
    )
    await c.get(cluster_ref("a"), "cpu")  # the first fetch, on demand
    with pytest.raises(asyncio.CancelledError):
        await c.run()
    assert (src.fetches, sum(slept)) == (4, pytest.approx(15.0))


async def test_a_paced_round_spans_its_pace_with_a_batch_source_and_with_no_cluster() -> None:
    """A batch source fetches all at once, then the round waits out its 2 s pace; a round with
    no cluster waits it out too (the refresh loop never spins faster than the interval)."""
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    src = MemoryBatchSource({cluster_ref("a"): snapshot("a")})
    c = TargetCache(src, clock=FakeClock(T0), sleep=fake_sleep)
    await c.refresh(pace_s=2.0)  # no cluster asked for yet
    await c.get(cluster_ref("a"), "cpu")  # a new cluster's first fetch is its own, not a batch
    await c.refresh(pace_s=2.0)
    assert (slept, src.batch_fetches) == ([2.0, 2.0], 1)


async def test_a_snapshot_from_the_future_is_refused_and_never_planned() -> None:
    """10^6 s ahead (the review's forgery): UntrustedData future_snapshot, no plan, no target."""
    planned: list[PlanningInput] = []

    def planner(inp: PlanningInput) -> Plan:
        planned.append(inp)
        return Plan()

    src = MemorySource({RAY: snapshot(t=T0 + 1e6)})
    with pytest.raises(UntrustedData) as info:
        await cache(src, FakeClock(T0), planner).get(RAY, "cpu")
    assert info.value.reason is Refusal.FUTURE_SNAPSHOT
    assert str(info.value) == (
        "Ray cluster ray/ray: agent snapshot time is 1000000s in the future "
        "(max clock skew 5s): refused"
    )
    assert planned == []


async def test_a_future_snapshot_does_not_end_the_scale_down_hold() -> None:
    """After a restart, only a believable snapshot newer than the start releases victims."""
    nodes = (node("a"), node("c", status=V), node("d", status=V))
    src = MemorySource({RAY: snapshot(nodes=nodes, t=T0 - 5)})
    clock = FakeClock(T0)
    c = cache(src, clock, fixed_planner({"cpu": 0}))
    assert (await c.get(RAY, "cpu")).held is True
    src.snapshots[RAY] = snapshot(nodes=nodes, t=T0 + 600)  # forged "fresh"
    await c.refresh()
    with pytest.raises(UntrustedData):
        await c.get(RAY, "cpu")
    src.snapshots[RAY] = snapshot(nodes=nodes, t=T0 - 4)  # the agent again, older than start
    await c.refresh()
    t = await c.get(RAY, "cpu")
    assert (t.target, t.held) == (3, True)


@pytest.mark.parametrize("skew_s", [0.0, 5.0, 30.0])
async def test_the_clock_skew_is_a_setting(skew_s: float) -> None:
    """A lead of exactly max_clock_skew_s is accepted; one second more is refused."""
    src = MemorySource({RAY: snapshot(t=T0 + skew_s)})
    assert (await cache(src, FakeClock(T0), max_clock_skew_s=skew_s).get(RAY, "cpu")).target == 0
    src = MemorySource({RAY: snapshot(t=T0 + skew_s + 1)})
    with pytest.raises(UntrustedData, match="in the future"):
        await cache(src, FakeClock(T0), max_clock_skew_s=skew_s).get(RAY, "cpu")


async def test_a_forgotten_clusters_series_are_removed_from_the_registry() -> None:
    """Once forgotten, a cluster leaves no plan, refresh, error, age or target series behind."""
    registry = CollectorRegistry()
    src = MemorySource({cluster_ref("a"): snapshot("a")})
    clock = FakeClock(T0)
    c = TargetCache(
        src,
        clock=clock,
        settings=TargetSettings(forget_after_s=100),
        metrics=scaler_metrics(registry),
    )
    await c.get(cluster_ref("a"), "cpu")
    with pytest.raises(NotFound):
        await c.get(cluster_ref("bogus"), "cpu")

    def clusters_in_registry() -> set[str]:
        return {
            s.labels["cluster"]
            for family in registry.collect()
            for s in family.samples
            if "cluster" in s.labels
        }

    assert clusters_in_registry() == {"ray/a", "ray/bogus"}
    clock.advance(101)
    await c.refresh()
    assert (c.clusters(), clusters_in_registry()) == ([], set())


async def test_one_namespace_holds_at_most_its_quota_of_clusters() -> None:
    """With a quota of 2 per namespace, a third cluster of team-a is refused (namespace_quota)
    without a fetch, while team-b still gets its clusters."""
    names = [ClusterRef("team-a", n) for n in ("a", "b", "c")] + [ClusterRef("team-b", "a")]
    src = MemorySource({n: snapshot(n.name) for n in names})
    c = TargetCache(src, clock=FakeClock(T0), settings=TargetSettings(max_clusters_per_namespace=2))
    await c.get(names[0], "cpu")
    await c.get(names[1], "cpu")
    with pytest.raises(LimitReached, match="quota, --max-clusters-per-namespace") as info:
        await c.get(names[2], "cpu")
    assert info.value.limit is Limit.NAMESPACE_QUOTA
    await c.get(names[3], "cpu")
    assert src.fetches == 3


async def test_unknown_clusters_are_rechecked_rarely_and_within_one_shared_budget() -> None:
    """1,000 bogus names: each fetched once when first asked for; over the next 100 s of 5 s
    rounds all their rechecks share 10 a second, never 1,000 a round."""
    registry = CollectorRegistry()
    src = MemorySource()
    clock = FakeClock(T0)
    c = TargetCache(
        src,
        clock=clock,
        settings=TargetSettings(max_clusters=2000, max_clusters_per_namespace=2000),
        metrics=scaler_metrics(registry),
    )
    names = [cluster_ref(f"bogus-{i}") for i in range(1000)]
    for name in names:
        with pytest.raises(NotFound):
            await c.get(name, "cpu")
    assert src.fetches == 1000
    fetched = src.fetches
    for _ in range(20):  # 100 s of 5 s rounds
        clock.advance(5)
        await c.refresh()
    # at most 10 a second: one interval's worth (50) a round, in each of the 20 rounds
    assert src.fetches - fetched == 20 * 50
    assert registry.get_sample_value("keda_ray_scaler_unknown_rechecks_deferred_total") > 0
    with pytest.raises(NotFound):  # the answer meanwhile is still NOT_FOUND
        await c.get(names[-1], "cpu")


async def test_a_cluster_created_with_its_scaled_object_is_found_within_seconds() -> None:
    """The ScaledObject asks before the agent's first series reach the source: NOT_FOUND, then
    rechecks one interval later, doubling (5, 10, 20 ... 60 s). Its series appear at 12 s: it
    is found at the round of 15 s (waiting 60 s flat, the HPA's first scale-up waited a minute
    on the bed); a name that never comes is checked at 5, 15, 35, 75 s, then every 60 s."""

    class Counting(MemorySource):
        def __init__(self) -> None:
            super().__init__()
            self.asked: list[tuple[str, float]] = []

        async def fetch(self, cluster: ClusterRef) -> ClusterSnapshot:
            self.asked.append((cluster.name, clock() - t0))
            return await super().fetch(cluster)

    clock = FakeClock(T0)
    t0 = clock()
    src = Counting()
    c = TargetCache(src, clock=clock, settings=TargetSettings(refresh_interval_s=5))
    late, never = cluster_ref("late"), cluster_ref("never")
    for name in (late, never):
        with pytest.raises(NotFound):
            await c.get(name, "cpu")
    for _ in range(30):  # 150 s of 5 s rounds
        clock.advance(5)
        if clock() - t0 >= 12:
            src.snapshots[late] = snapshot("late", t=clock())
        await c.refresh()
    assert [t for n, t in src.asked if n == "late"][:3] == [0, 5, 15]
    assert [t for n, t in src.asked if n == "never"] == [0, 5, 15, 35, 75, 135]
