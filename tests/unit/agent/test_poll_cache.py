"""The poll loop over the caches (issue 39): an unchanged answer from Ray is not parsed again
and is served as before but for its time and seal; a changed one is read whole; a failure after
a cached poll is served as one; every body served holds its seal."""

from __future__ import annotations

from typing import Any

import pytest
from fake_clock import FakeClock
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from ray_input_fakes import SPEC, FakeGcs, node, reader_of, status

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.http.metrics_server import metrics_app
from keda_ray_scaler.agent.loop import AgentLoop, LoopSettings
from keda_ray_scaler.agent.ray import status_memo
from keda_ray_scaler.agent.ray.ray_status import RayState, parse_status
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.schema import Sample, digest
from keda_ray_scaler.schema.digest import Seal

PROMETHEUS = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8"
#: What differs between two bodies of a cluster that did not change: the time, and the seal.
PER_POLL = {schema.SNAPSHOT_TIMESTAMP, schema.SNAPSHOT_DIGEST}


def answer(call: int, *, count: int = 20, idle_ms: int | None = None) -> pb.GetClusterStatusReply:
    """The GCS's ``call``-th reply: pod w-a busy, pod w-b idle for ``idle_ms`` (None: busy too),
    ``count`` pending {CPU: 5} tasks; the counters Ray moves at every call at ``call``."""
    free = 10 if idle_ms is not None else 0
    reply = status(node(b"a", "w-a", "10.0.0.1", free=0), node(b"b", "w-b", "10.0.0.2", free=free))
    state = reply.cluster_resource_state
    state.cluster_resource_state_version = call
    state.pending_resource_requests[0].count = count
    for ns in state.node_states:
        ns.node_state_version = call
        ns.idle_duration_ms = idle_ms if ns.instance_id == "w-b" and idle_ms is not None else 0
    return reply


class Agent:
    """A loop reading ``gcs`` through the real reader, served by the real /metrics app."""

    def __init__(self, gcs: FakeGcs) -> None:
        registry = CollectorRegistry()
        self.clock = FakeClock()
        self.collector = SnapshotCollector(registry)
        metrics = AgentMetrics(registry, "demo")
        settings = LoopSettings(scale_down=False)
        reader = reader_of(gcs, registry, now=self.clock.now)  # the agent's clock, as built
        self.loop = AgentLoop(SPEC, reader, self.collector, metrics, self.clock, settings)
        self.app = metrics_app(registry, self.collector)

    async def poll(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """One poll 5 s after the last, then what a Prometheus scrape reads (its seal held)."""
        self.clock.t += 5.0
        await self.loop.poll_once()
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics", "HTTP_ACCEPT": PROMETHEUS}
        text = b"".join(self.app(environ, lambda *_: None)).decode()
        samples = [
            Sample(s.name, s.labels, s.value)
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if s.name in schema.SNAPSHOT_NAMES | digest.SEAL_NAMES
        ]
        assert digest.check("demo", samples) is Seal.HELD
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the reader's calls of parse_status."""
    calls: list[int] = []

    def counted(*args: Any, **kw: Any) -> RayState:
        calls.append(1)
        return parse_status(*args, **kw)

    monkeypatch.setattr(status_memo, "parse_status", counted)
    return calls


def apart(body: dict[Any, float], names: set[str]) -> dict[Any, float]:
    return {k: v for k, v in body.items() if k[0] not in names}


def value(body: dict[Any, float], name: str, **labels: str) -> float:
    return body[(name, tuple(sorted({"cluster": "demo", **labels}.items())))]


async def test_an_unchanged_answer_is_not_parsed_and_served_alike_but_time_and_seal(
    parses: list[int],
) -> None:
    """Ray's counters moved, nothing else: parsed once, and the second body is the first but
    for a timestamp 5 s on and the seal over it."""
    agent = Agent(FakeGcs(None, replies=(answer(1), answer(2))))
    first = await agent.poll()
    second = await agent.poll()
    assert len(parses) == 1
    assert apart(second, PER_POLL) == apart(first, PER_POLL)
    assert value(second, schema.SNAPSHOT_TIMESTAMP) == value(first, schema.SNAPSHOT_TIMESTAMP) + 5
    assert value(second, schema.SNAPSHOT_DIGEST) != value(first, schema.SNAPSHOT_DIGEST)


async def test_an_idle_pods_time_moves_on_without_a_parse(parses: list[int]) -> None:
    """An idle pod's idle time grows at every call: not parsed again, served as it grew: its
    idle-since time is the same, the snapshot's time 5 s later (and nothing else moved)."""
    agent = Agent(FakeGcs(None, replies=(answer(1, idle_ms=60_000), answer(2, idle_ms=65_000))))
    first = await agent.poll()
    second = await agent.poll()
    assert len(parses) == 1
    assert apart(second, PER_POLL) == apart(first, PER_POLL)
    since = value(second, schema.NODE_IDLE_SINCE, pod="w-b")
    assert value(second, schema.SNAPSHOT_TIMESTAMP) - since == 65.0


async def test_a_changed_answer_is_read_and_served_at_once(parses: list[int]) -> None:
    """The demand moved: parsed again, and the new count is what is served."""
    agent = Agent(FakeGcs(None, replies=(answer(1), answer(2, count=7))))
    await agent.poll()
    second = await agent.poll()
    assert len(parses) == 2
    demand = {"kind": "task", "shape": "CPU=5", "strategy": ""}
    assert value(second, schema.DEMAND_BUNDLES, **demand) == 7.0


async def test_a_failure_after_a_cached_poll_is_served_as_a_failure() -> None:
    """Ray unreadable after an unchanged poll: success 0, the last success's time, the seal
    held; the next unchanged answer is fresh again."""
    gcs = FakeGcs(None, replies=(answer(1), answer(2)))
    agent = Agent(gcs)
    await agent.poll()
    good = await agent.poll()
    gcs.fail = True
    failed = await agent.poll()
    assert value(failed, schema.SNAPSHOT_SUCCESS) == 0.0
    assert value(failed, schema.SNAPSHOT_TIMESTAMP) == value(good, schema.SNAPSHOT_TIMESTAMP)
    again = await agent.poll()
    assert value(again, schema.SNAPSHOT_SUCCESS) == 1.0
    assert value(again, schema.SNAPSHOT_TIMESTAMP) == value(good, schema.SNAPSHOT_TIMESTAMP) + 10
