"""``/healthz``: fails when the last successful poll is older than a few intervals; ``/readyz``
also while the head's Ray version is refused (alive, not ready).

The decision is a table of values; the HTTP answers come from the real server on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import pytest
from fake_clock import FakeClock
from prometheus_client import CollectorRegistry

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.agent_health import (
    HeadRefusal,
    HeadRefused,
    Health,
    HealthProbe,
    check,
    max_age_s,
)
from keda_ray_scaler.agent.http.exporter import SnapshotCollector
from keda_ray_scaler.agent.http.metrics_server import start_metrics_server
from keda_ray_scaler.gcs.versions import UnsupportedRayVersion
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


@contextlib.contextmanager
def serve(
    head: Callable[[FakeClock], HeadRefusal | None],
) -> Iterator[tuple[str, FakeLoop, FakeClock, HeadRefusal | None]]:
    """The agent's HTTP server on 127.0.0.1 (any port) over a fake loop and clock, and the
    head's refusals ``head`` makes on that clock; stopped."""
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry)
    loop = FakeLoop(schema.ClusterSnapshot(PlanningInput(SPEC), 0.0, False))
    collector.publish(loop.snapshot)
    clock = FakeClock(1_000.0)
    refusal = head(clock)
    probe = HealthProbe(loop, clock, 30.0, refusal)
    server = start_metrics_server("127.0.0.1", 0, registry, probe)
    try:
        yield f"http://127.0.0.1:{server.server_port}", loop, clock, refusal
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def served() -> Iterator[tuple[str, FakeLoop, FakeClock]]:
    """The server, no version check."""
    with serve(lambda clock: None) as (url, loop, clock, _):
        yield url, loop, clock


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


# --- a head on a Ray the agent refuses: alive, not ready (issue 35) --------------------------
WHY = "GCS h:6379: Ray 2.9.3 is older than the oldest supported, 2.10.0 to 2.60.x"


@pytest.mark.parametrize(
    ("last", "refused_at", "now", "health", "ok", "ready"),
    [
        (None, 1_004.0, 1_005.0, Health.REFUSED, True, False),
        (None, 1_004.0, 1_100.0, Health.STALE, False, False),  # no poll since: the loop hangs
        (1_002.0, 1_004.0, 1_020.0, Health.REFUSED, True, False),  # refused after a success
        (1_010.0, 1_004.0, 1_020.0, Health.FRESH, True, True),  # a success after: recovered
        (None, None, 1_005.0, Health.STARTING, True, True),
    ],
)
def test_a_recent_refusal_with_no_success_since_is_alive_but_not_ready(
    last: float | None,
    refused_at: float | None,
    now: float,
    health: Health,
    ok: bool,
    ready: bool,
) -> None:
    """Started at 1000 with a 30 s bound."""
    refused = None if refused_at is None else HeadRefused(refused_at, WHY)
    verdict = check(last, started_s=1_000.0, now_s=now, max_age_s=30.0, refused=refused)
    assert (verdict.health, verdict.ok, verdict.ready) == (health, ok, ready)


@pytest.fixture
def served_refused() -> Iterator[tuple[str, FakeLoop, FakeClock, HeadRefusal]]:
    """The server, the reader refusing the head through ``HeadRefusal``."""
    with serve(HeadRefusal) as (url, loop, clock, head):
        assert head is not None
        yield url, loop, clock, head


def test_readyz_fails_naming_the_version_while_healthz_passes_and_both_recover(
    served_refused: tuple[str, FakeLoop, FakeClock, HeadRefusal],
) -> None:
    """Refused at each poll: /readyz 503, /healthz 200, one line each; then a supported head."""
    url, loop, clock, head = served_refused
    assert get(url + "/readyz")[0] == 200  # starting
    for t in (1_001.0, 1_040.0, 1_080.0):  # long past the 30 s bound: still refused, not stale
        clock.t = t
        head.refuse(UnsupportedRayVersion("2.9.3", WHY))
        clock.t = t + 0.5
        line = f"refused: {WHY}: nothing read (refused 0.5 s ago)\n"
        assert get(url + "/readyz") == (503, line)
        assert get(url + "/healthz") == (200, line)
    loop.snapshot = replace(loop.snapshot, snapshot_time_s=1_085.0, success=True)
    clock.t = 1_086.0
    assert get(url + "/readyz") == (200, "fresh: last successful poll 1.0 s ago\n")
