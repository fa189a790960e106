"""The loop between polls (issue 39): a look every ``--watch-interval``, a poll at once when a look
sees a change or fails, a poll at ``--interval`` otherwise; no look ever stamps the data fresh.

On fake time: each sleep moves the clock by what it asked, so each poll's and each look's time is
exact; the reader ends the loop (cancels it) when it has no state left to give.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, cast

import pytest
from fake_clock import FakeClock
from loop_fakes import FakeWatch, r, ray_state
from prometheus_client import CollectorRegistry
from ray_input_fakes import SPEC, FakeGcs, node, status
from structlog.testing import capture_logs

from keda_ray_scaler.agent.builder import build_agent
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.loop import AgentLoop, LoopSettings
from keda_ray_scaler.agent.loop_parts import (
    NO_PLANNED,
    NO_VICTIMS,
    NO_WATCH,
    NoVictims,
    Planned,
    Victims,
    Wake,
    Watch,
    until_next_poll,
)
from keda_ray_scaler.agent.ray.ray_state import DemandRead
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.agent.ray.status_watch import Look
from keda_ray_scaler.agent.settings import AgentSettings
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.model import Bundle, PlanningInput

BEFORE, AFTER = ray_state(Bundle(r(CPU=5), 20)), ray_state(Bundle(r(CPU=5), 30))


class Reads:
    """Ray's states in turn (an exception raised); each read's time and the snapshot exported
    when it began; cancels the loop when no state is left."""

    def __init__(self, clock: FakeClock, *states: RayState | Exception) -> None:
        self.clock = clock
        self.states = list(states)
        self.at: list[float] = []
        self.exported: list[tuple[bool, float]] = []  # (success, time) when each read began
        self.loop: AgentLoop | None = None

    async def read(self) -> RayState:
        self.at.append(self.clock.t)
        if self.loop is not None:
            snap = self.loop.snapshot
            self.exported.append((snap.success, snap.snapshot_time_s))
        if not self.states:
            raise asyncio.CancelledError
        item = self.states.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


def looping(
    reads: Reads,
    watch: Watch,
    planned: Planned = NO_PLANNED,
    *,
    scale_down: bool = False,
    victims: Victims = NO_VICTIMS,
) -> AgentLoop:
    """A loop polling every 5 s over ``reads``, looking with ``watch``, export only unless
    ``scale_down`` (with ``victims``, none by default)."""
    registry = CollectorRegistry()
    settings = LoopSettings(interval_s=5.0, scale_down=scale_down)
    metrics = AgentMetrics(registry, "demo")
    loop = AgentLoop(
        SPEC, reads, SnapshotCollector(registry), metrics, reads.clock, settings,
        planned=planned, watch=watch, victims=victims,
    )  # fmt: skip
    reads.loop = loop
    return loop


async def run(loop: AgentLoop) -> None:
    """Run the loop until its reader has nothing left."""
    with pytest.raises(asyncio.CancelledError):
        await loop.run()


def halves(start: float, end: float) -> list[float]:
    """Every half second after ``start`` and before ``end``."""
    return [start + 0.5 * k for k in range(1, int((end - start) / 0.5))]


async def test_an_unchanged_cluster_is_polled_at_the_interval_and_looked_at_between() -> None:
    """Looks that see nothing new: polls at 0, 5 and 10 s, a look every half second between."""
    clock = FakeClock()
    reads = Reads(clock, BEFORE, BEFORE)
    watch = FakeWatch(clock)
    await run(looping(reads, watch))
    assert reads.at == [1000.0, 1005.0, 1010.0]
    assert watch.at == halves(1000.0, 1005.0) + halves(1005.0, 1010.0)


async def test_a_change_a_look_sees_is_polled_and_exported_at_once() -> None:
    """The third look sees a change: the poll runs then (1.5 s), not at 5 s, and exports it with
    its own time; the floor counts from that poll."""
    clock = FakeClock()
    reads = Reads(clock, BEFORE, AFTER)
    watch = FakeWatch(clock, Look.SAME, Look.SAME, Look.CHANGED)
    loop = looping(reads, watch)
    await run(loop)
    assert reads.at == [1000.0, 1001.5, 1006.5]
    assert loop.snapshot.snapshot_time_s == 1001.5
    assert loop.snapshot.input.demand.bundles == (Bundle(r(CPU=5), 30),)


async def test_no_look_stamps_the_data_fresh() -> None:
    """Nine looks that see nothing: the data keeps the first poll's time until the next poll."""
    clock = FakeClock()
    reads = Reads(clock, BEFORE, BEFORE)

    seen: list[float] = []

    class Stamps(FakeWatch):
        async def look(self) -> Look:
            assert reads.loop is not None
            seen.append(reads.loop.snapshot.snapshot_time_s)
            return await super().look()

    await run(looping(reads, Stamps(clock)))
    assert seen == [1000.0] * 9 + [1005.0] * 9


async def test_a_failed_look_polls_at_once_and_a_failed_poll_then_marks_the_data_stale() -> None:
    """The GCS goes away at 1 s: the poll then fails and the data says not fresh at 1 s, not at
    5 s; after a failed poll nothing is looked at until the interval's poll."""
    clock = FakeClock()
    reads = Reads(clock, BEFORE, RayError("GCS down"), BEFORE)
    watch = FakeWatch(clock, Look.SAME, Look.FAILED)
    await run(looping(reads, watch))
    assert reads.at == [1000.0, 1001.0, 1006.0, 1011.0]
    assert reads.exported[2] == (False, 1000.0)  # as the failed poll left it: stale, old time
    assert watch.at == [1000.5, 1001.0, *halves(1006.0, 1011.0)]


async def test_a_look_that_crashes_is_a_failed_look() -> None:
    """A bug in a look is logged and the loop polls at once."""
    clock = FakeClock()
    reads = Reads(clock, BEFORE)
    watch = FakeWatch(clock, ValueError("bug"))
    with capture_logs() as logs:
        await run(looping(reads, watch))
    assert reads.at == [1000.0, 1000.5]
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["look between polls crashed"]


class HeldOnce:
    """A lead that holds a rise after the first poll it is given, and no more."""

    def __init__(self) -> None:
        self.polls: list[float] = []

    def observe(self, inp: PlanningInput, at: float) -> None:
        self.polls.append(at)

    def clear(self) -> None:
        self.polls.clear()

    def rising(self) -> bool:
        return len(self.polls) == 1


async def test_a_rise_the_lead_holds_is_polled_again_at_the_next_look() -> None:
    """The lead waits for a second poll: it comes half a second later, without a look."""
    clock = FakeClock()
    reads = Reads(clock, BEFORE, BEFORE)
    watch = FakeWatch(clock)
    await run(looping(reads, watch, HeldOnce()))
    assert reads.at == [1000.0, 1000.5, 1005.5]
    assert watch.at == halves(1000.5, 1005.5)


async def test_without_a_watch_the_wait_is_one_sleep_of_the_interval() -> None:
    """No watch (``--watch-interval 0``), or a failed poll: one sleep, as before issue 39."""
    clock = FakeClock()
    assert await until_next_poll(clock, 5.0, NO_WATCH, watched=True, rising=bool) is Wake.INTERVAL
    watch = FakeWatch(clock, Look.CHANGED)
    assert await until_next_poll(clock, 5.0, watch, watched=False, rising=bool) is Wake.INTERVAL
    assert (clock.sleeps, watch.at) == ([5.0, 5.0], [])


def answer(call: int, *, count: int = 20) -> pb.GetClusterStatusReply:
    """The GCS's ``call``-th reply: one idle node, ``count`` pending {CPU: 5} tasks; the
    counters and the idle time moved as Ray moves them at every call."""
    reply = status(node(b"a", "w-a", "10.0.0.1"))
    state = reply.cluster_resource_state
    state.cluster_resource_state_version = call
    state.pending_resource_requests[0].count = count
    for ns in state.node_states:
        ns.node_state_version = call
        ns.idle_duration_ms = 120_000 + 500 * call
    return reply


def agent_of(gcs: FakeGcs, clock: FakeClock, watch_interval_s: float) -> AgentLoop:
    """The agent the CLI builds, export only, its GCS ``gcs``."""
    connection = GcsConnection("fake:0", factory=lambda _: cast(Any, gcs))
    loop = LoopSettings(scale_down=False, watch_interval_s=watch_interval_s)
    settings = AgentSettings(loop=loop, demand_read=DemandRead.GCS)
    return build_agent(SPEC, connection, clock, settings).loop


class Until(FakeClock):
    """Fake time that ends the loop once it reaches ``end``."""

    def __init__(self, end: float) -> None:
        super().__init__()
        self.end = end

    async def sleep(self, s: float) -> None:
        await super().sleep(s)
        if self.t >= self.end:
            raise asyncio.CancelledError


async def test_new_demand_in_the_gcs_is_exported_at_the_first_look_that_sees_it() -> None:
    """The built agent: the GCS's reply moves only its counters and idle time for two looks, then
    holds 30 tasks: the third look (1.5 s) sees it and the poll exports 30 at once."""
    replies = (answer(0), answer(1), answer(2), answer(3, count=30), answer(4, count=30))
    clock = Until(1003.0)
    loop = agent_of(FakeGcs(None, replies=replies), clock, 0.5)
    with pytest.raises(asyncio.CancelledError):
        await loop.run()
    assert loop.snapshot.snapshot_time_s == 1001.5
    assert loop.snapshot.input.demand.bundles == (Bundle(r(CPU=5), 30),)


async def test_with_watch_interval_zero_the_built_agent_only_polls_at_the_interval() -> None:
    """``--watch-interval 0``: the same change waits for the 5 s poll."""
    replies = (answer(0), answer(1, count=30))
    clock = Until(1003.0)
    loop = agent_of(FakeGcs(None, replies=replies), clock, 0.0)
    with pytest.raises(asyncio.CancelledError):
        await loop.run()
    assert clock.sleeps == [5.0]
    assert loop.snapshot.snapshot_time_s == 1000.0
    assert loop.snapshot.input.demand.bundles == (Bundle(r(CPU=5), 20),)


def idle_for(idle_s: float) -> RayState:
    """The seed's demand on one node idle ``idle_s`` (the group's timeout: 60 s)."""
    state = ray_state(Bundle(r(CPU=5), 20))
    return replace(state, nodes=tuple(replace(n, idle_s=idle_s) for n in state.nodes))


async def test_a_node_reaching_its_idle_timeout_is_polled_then_not_at_the_interval() -> None:
    """A node idle 58 s of the group's 60 at the 1000 s poll: the next poll is at its timeout
    and a half (1002.5 s), not at 1005 s; from then on none is due: the interval's. With scale
    down off, or after a failed poll, nothing acts on idle time: the interval's."""
    clock = FakeClock()
    reads = Reads(clock, idle_for(58.0), idle_for(60.5), idle_for(65.5))
    await run(looping(reads, FakeWatch(clock), scale_down=True))
    assert reads.at == [1000.0, 1002.5, 1007.5, 1012.5]  # the last read ends the loop
    clock = FakeClock()
    reads = Reads(clock, idle_for(58.0), idle_for(63.0))
    await run(looping(reads, FakeWatch(clock)))
    assert reads.at == [1000.0, 1005.0, 1010.0]
    clock = FakeClock()
    reads = Reads(clock, idle_for(58.0), RayError("GCS down"), idle_for(58.0))
    await run(looping(reads, FakeWatch(clock), scale_down=True))
    assert reads.at == [1000.0, 1002.5, 1007.5, 1010.0]


async def test_an_idle_wake_due_before_the_interval_ends_the_wait_then() -> None:
    """``until_next_poll`` with a node's timeout 1.2 s on: the wait ends 1.7 s on, an idle wake,
    without a watch too; one due after the interval changes nothing; unwatched, none is taken."""
    clock = FakeClock()
    watch = FakeWatch(clock)
    due = clock.now() + 1.2
    assert await until_next_poll(clock, 5.0, watch, watched=True, rising=bool, idle_due=due) is (
        Wake.IDLE
    )
    assert clock.now() == pytest.approx(due + 0.5)
    start = clock.now()
    woke = await until_next_poll(clock, 5.0, NO_WATCH, watched=True, rising=bool, idle_due=start)
    assert (woke, clock.now()) == (Wake.IDLE, pytest.approx(start + 0.5))
    start = clock.now()
    late = start + 9.0
    assert await until_next_poll(
        clock, 5.0, NO_WATCH, watched=True, rising=bool, idle_due=late
    ) is (Wake.INTERVAL)
    assert clock.now() == pytest.approx(start + 5.0)
    start = clock.now()
    woke = await until_next_poll(clock, 5.0, NO_WATCH, watched=False, rising=bool, idle_due=start)
    assert (woke, clock.now()) == (Wake.INTERVAL, pytest.approx(start + 5.0))


class RefusedOnce(NoVictims):
    """A victim step that, at its first step, refused a pod Ray says is idle 1.2 s short of
    the timeout (``due_at``), and none after."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.due: float | None = None
        self.steps = 0

    async def step(self, inp: PlanningInput) -> None:
        self.steps += 1
        self.due = self.clock.now() + 1.2 if self.steps == 1 else None

    def due_at(self) -> float | None:
        return self.due


async def test_a_pod_the_victim_step_refused_for_its_idle_time_is_polled_when_it_is_due() -> None:
    """The node is past the timeout by the agent's idle-since time (no idle wake of its own),
    but the victim step's fresh read says 1.2 s short: the next poll is 1.7 s on, then at the
    interval."""
    clock = FakeClock()
    reads = Reads(clock, idle_for(120.0), idle_for(121.7), idle_for(126.7))
    await run(looping(reads, FakeWatch(clock), scale_down=True, victims=RefusedOnce(clock)))
    assert reads.at == [1000.0, 1001.7, 1006.7, 1011.7]
