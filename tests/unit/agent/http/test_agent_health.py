"""``/healthz``: fails when the last successful poll is older than a few intervals.

The decision is a table of values; the HTTP answers come from the real server on 127.0.0.1.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest
from fake_clock import FakeClock
from prometheus_client import CollectorRegistry

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.agent_health import Health, HealthProbe, check, max_age_s
from keda_ray_scaler.agent.http.exporter import SnapshotCollector
from keda_ray_scaler.agent.http.metrics_server import start_metrics_server
from keda_ray_scaler.model import ClusterSpec, PlanningInput, Resources, WorkerGroup

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))


@pytest.mark.parametrize(
    ("last", "now", "health", "reason"),
    [
        (None, 1_010.0, Health.STARTING, "no successful poll yet, started 10.0 s ago"),
        (None, 1_030.0, Health.STARTING, "no successful poll yet, started 30.0 s ago"),
        (
            None,
            1_030.5,
            Health.STALE,
            "no successful poll in the 30.5 s since the start (max 30 s)",
        ),
        (1_020.0, 1_025.0, Health.FRESH, "last successful poll 5.0 s ago"),
        (1_020.0, 1_050.0, Health.FRESH, "last successful poll 30.0 s ago"),
        (1_020.0, 1_051.0, Health.STALE, "last successful poll 31.0 s ago (max 30 s)"),
    ],
)
def test_the_verdict_is_the_age_of_the_last_success_against_the_bound(
    last: float | None, now: float, health: Health, reason: str
) -> None:
    """Started at 1000 with a 30 s bound: fresh or starting within it, stale beyond."""
    verdict = check(last, started_s=1_000.0, now_s=now, max_age_s=30.0)
    assert (verdict.health, verdict.reason, verdict.ok) == (health, reason, health != "stale")


@pytest.mark.parametrize(
    ("intervals", "interval_s", "expected"),
    [(3, 5.0, 30.0), (3, 20.0, 60.0), (2, 1.0, 30.0), (10, 5.0, 50.0)],
)
def test_the_bound_is_some_intervals_but_never_under_30_s(
    intervals: float, interval_s: float, expected: float
) -> None:
    """--health-intervals x --interval, at least the 30 s Ray takes to connect to a GCS."""
    assert max_age_s(intervals, interval_s) == expected


@dataclass
class FakeLoop:
    """The loop's snapshot, set by the test."""

    snapshot: schema.ClusterSnapshot


@pytest.fixture
def served() -> Iterator[tuple[str, FakeLoop, FakeClock]]:
    """The agent's HTTP server on 127.0.0.1 (any port) over a fake loop and clock; stopped."""
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry)
    loop = FakeLoop(schema.ClusterSnapshot(PlanningInput(SPEC), 0.0, False))
    collector.publish(loop.snapshot)
    clock = FakeClock(1_000.0)
    server = start_metrics_server("127.0.0.1", 0, registry, HealthProbe(loop, clock, 30.0))
    try:
        yield f"http://127.0.0.1:{server.server_port}", loop, clock
    finally:
        server.shutdown()
        server.server_close()


def get(url: str) -> tuple[int, str]:
    """Status and body of a GET (an error status is an answer too)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_healthz_answers_200_while_fresh_and_503_with_the_reason_once_stale(
    served: tuple[str, FakeLoop, FakeClock],
) -> None:
    """Starting: 200; a success 5 s ago: 200; 31 s ago: 503 and one line saying why."""
    url, loop, clock = served
    assert get(url + "/healthz") == (200, "starting: no successful poll yet, started 0.0 s ago\n")
    loop.snapshot = replace(loop.snapshot, snapshot_time_s=1_020.0, success=True)
    clock.t = 1_025.0
    assert get(url + "/healthz") == (200, "fresh: last successful poll 5.0 s ago\n")
    clock.t = 1_051.0
    assert get(url + "/healthz") == (503, "stale: last successful poll 31.0 s ago (max 30 s)\n")


def test_a_failed_poll_keeps_the_time_of_the_last_success(
    served: tuple[str, FakeLoop, FakeClock],
) -> None:
    """success 0 with an old time: stale once that time is too old, not at the first failure."""
    url, loop, clock = served
    loop.snapshot = replace(loop.snapshot, snapshot_time_s=1_020.0, success=False)
    clock.t = 1_040.0
    assert get(url + "/healthz")[0] == 200
    clock.t = 1_060.0
    assert get(url + "/healthz")[0] == 503


def test_an_agent_that_never_polled_successfully_fails_after_the_bound(
    served: tuple[str, FakeLoop, FakeClock],
) -> None:
    """No success 31 s after the start: 503 (Ray unreachable from the start, or a stuck loop)."""
    url, _, clock = served
    clock.t = 1_031.0
    assert get(url + "/healthz") == (
        503,
        "stale: no successful poll in the 31.0 s since the start (max 30 s)\n",
    )


def test_metrics_are_still_served_on_the_same_port(
    served: tuple[str, FakeLoop, FakeClock],
) -> None:
    """/metrics answers with the snapshot's series, stale or not."""
    url, _, clock = served
    clock.t = 2_000.0
    status, body = get(url + "/metrics")
    assert status == 200
    assert 'ray_scaler_snapshot_success{cluster="demo"} 0.0' in body.splitlines()
