"""The scaler with its refresh in a child process (what ``serve`` runs), over real gRPC.

The child is a real ``spawn`` process; its source reads a pickle file the test rewrites, so the
test changes what the child sees without reaching into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import pickle
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest
from rpc_builders import cluster_ref, meta, node, snapshot

from keda_ray_scaler.errors import DemandUnavailable, NotFound, Refusal, ScalerError, UntrustedData
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import NodeStatus
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.refresh import refresher_process
from keda_ray_scaler.rpc.refresh.messages import error_from_wire, error_to_wire
from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.schema import ClusterSnapshot

#: The tests' Ray cluster: ``ray`` in namespace ``ray``.
RAY = cluster_ref("ray")

#: Bound for the child to start (spawn + imports) or answer: a failure's wait, not a pace (what
#: waits on it returns at the event); under a busy machine's load a spawn took over 10 s
STEP_S = 60.0
T = TypeVar("T")


class FileSource:
    """Snapshots from a pickle file read at every fetch; fetches counted in the registry."""

    def __init__(self, path: Path, registry: CollectorRegistry) -> None:
        self._path = path
        self._fetches = Counter("test_fetches", "fetches", ["cluster"], registry=registry)

    async def fetch(self, cluster: ClusterRef) -> ClusterSnapshot:
        self._fetches.labels(str(cluster)).inc()
        state = pickle.loads(self._path.read_bytes())
        if state.get("down"):
            raise DemandUnavailable("prometheus down")
        if cluster not in state:
            raise NotFound(f"Ray cluster {cluster} not found")
        snap: ClusterSnapshot = state[cluster]
        return snap


def file_source(path: Path, registry: CollectorRegistry) -> FileSource:
    """The picklable factory the child calls."""
    return FileSource(path, registry)


@dataclass
class Env:
    server: ScalerServer
    path: Path
    stub: pb_grpc.ExternalScalerStub

    def write(self, state: Mapping[str, object]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(dict(state)))
        tmp.replace(self.path)

    async def metrics(self) -> int:
        value = await self.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()))
        return int(value.metricValues[0].metricValue)

    async def exposition(self) -> list[str]:
        """The parent's /metrics text, rendered off the loop as the HTTP thread does (the
        child's part arrives through the loop)."""
        text = await asyncio.to_thread(generate_latest, self.server.registry)
        return text.decode().splitlines()


def ref(**metadata: str) -> pb.ScaledObjectRef:
    return pb.ScaledObjectRef(name="cpu", namespace="ray", scalerMetadata=metadata or meta())


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with running_env(tmp_path) as made:
        yield made


@contextlib.asynccontextmanager
async def running_env(tmp_path: Path) -> AsyncIterator[Env]:
    """The server, its child on the seed example's pickle, and a client."""
    path = tmp_path / "state.pickle"
    path.write_bytes(pickle.dumps({RAY: snapshot(tasks={5: 20}, t=time.time())}))
    server = build_server(
        source_factory=functools.partial(file_source, path),
        clock=time.time,
        target_settings=TargetSettings(refresh_interval_s=3600, max_age_s=60, first_wait_s=STEP_S),
    )
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield Env(server, path, pb_grpc.ExternalScalerStub(channel))
    finally:
        pid = server.cache.pid  # type: ignore[union-attr]  # a ProcessTargetCache here
        await server.stop(grace_s=0)
        assert pid is None or not _alive(pid), "the refresher process outlived the server"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _eventually(probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool]) -> T:
    """Probe until ``ok`` (a bounded wait for the child: restart backoff, metrics relay)."""
    deadline = time.monotonic() + STEP_S
    while True:
        value = await probe()
        if ok(value) or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.05)


async def test_seed_example_is_answered_by_a_child_process(env: Env) -> None:
    """20 x {CPU: 5} on a 10-CPU group: 10 and active, planned in another process."""
    assert await env.metrics() == 10
    assert (await env.stub.IsActive(ref())).result is True
    pid = env.server.cache.pid  # type: ignore[union-attr]
    assert pid is not None and pid != os.getpid() and _alive(pid)


async def test_concurrent_first_requests_make_one_fetch(env: Env) -> None:
    """50 ScaledObjects asking for a new cluster at once: one fetch in the child."""
    answers = await asyncio.gather(*(env.metrics() for _ in range(50)))
    assert answers == [10] * 50
    line = 'test_fetches_total{cluster="ray/ray"} 1.0'
    lines = await _eventually(env.exposition, lambda ls: line in ls)
    assert line in lines


async def test_source_failure_is_unavailable_with_its_message(env: Env) -> None:
    """A failing source in the child is UNAVAILABLE with the source's message, never 0."""
    env.write({"down": True})
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.metrics()
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.UNAVAILABLE,
        "prometheus down",
    )


async def test_unknown_cluster_is_not_found_across_the_process(env: Env) -> None:
    """The child's NotFound reaches KEDA as NOT_FOUND."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.stub.IsActive(ref(**meta(cluster="nope")))
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.NOT_FOUND,
        "Ray cluster ray/nope not found",
    )


async def test_a_refusal_in_the_child_keeps_its_reason_in_the_parent(env: Env) -> None:
    """A snapshot from the future, refused in the child, is refused and counted by reason in
    the parent (the process boundary does not turn it into a plain UNAVAILABLE)."""
    assert await env.metrics() == 10
    env.write({RAY: snapshot(tasks={5: 20}, t=time.time() + 3600)})
    await env.server.cache.refresh()
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.metrics()
    assert info.value.code() is grpc.StatusCode.UNAVAILABLE
    assert "in the future (max clock skew 5s): refused" in (info.value.details() or "")
    reason = {"reason": Refusal.FUTURE_SNAPSHOT.value}
    assert env.server.registry.get_sample_value("keda_ray_scaler_refusals_total", reason) == 1


@pytest.mark.parametrize(
    "error",
    [
        NotFound("gone"),
        DemandUnavailable("down"),
        UntrustedData(Refusal.TWO_ORIGINS, "two"),
        UntrustedData(Refusal.FUTURE_SNAPSHOT, "ahead"),
    ],
    ids=lambda e: type(e).__name__ + getattr(e, "reason", Refusal.TWO_ORIGINS).value,
)
def test_errors_cross_the_pipe_with_their_type_and_reason(error: ScalerError) -> None:
    """error_from_wire(error_to_wire(e)) keeps the type, the reason and the message."""
    back = error_from_wire(error_to_wire(error), str(error))
    assert (type(back), getattr(back, "reason", None), str(back)) == (
        type(error),
        getattr(error, "reason", None),
        str(error),
    )


async def test_refresh_follows_the_source(env: Env) -> None:
    """A refresh round in the child carries new data to the answers: 10, then 0 and inactive."""
    assert await env.metrics() == 10
    env.write({RAY: snapshot(nodes=(node("a", status=NodeStatus.VICTIM),), t=time.time())})
    await env.server.cache.refresh()
    assert (await env.metrics(), (await env.stub.IsActive(ref())).result) == (0, False)


async def test_scale_down_is_held_until_a_snapshot_newer_than_the_parent(env: Env) -> None:
    """Victims in a snapshot older than the scaler's start: held at 2; a newer one: 0."""
    victims = (node("a", status=NodeStatus.VICTIM), node("b", status=NodeStatus.VICTIM))
    env.write({RAY: snapshot(nodes=victims, t=time.time() - 30)})
    assert await env.metrics() == 2
    env.write({RAY: snapshot(nodes=victims, t=time.time())})
    await env.server.cache.refresh()
    assert await env.metrics() == 0


async def test_stream_is_active_sends_true_when_demand_arrives(env: Env) -> None:
    """StreamIsActive: false for a group of victims only, true after a refresh with demand."""
    env.write({RAY: snapshot(nodes=(node("a", status=NodeStatus.VICTIM),), t=time.time())})
    stream = env.stub.StreamIsActive(ref())
    first = await asyncio.wait_for(stream.read(), STEP_S)
    env.write({RAY: snapshot(tasks={5: 20}, t=time.time())})
    await env.server.cache.refresh()
    second = await asyncio.wait_for(stream.read(), STEP_S)
    stream.cancel()
    assert (first.result, second.result) == (False, True)


async def test_killed_child_turns_unavailable_then_is_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL of the child: UNAVAILABLE naming it (never 0) and its metrics absent (not
    stale), then a new child answers 10."""
    # time to look while it is down, set before the server reads it (a busy machine took
    # seconds between two of the test's steps: the default 1 s restarted the child first)
    monkeypatch.setattr(refresher_process, "_BACKOFF_S", (10.0, 10.0))
    async with running_env(tmp_path) as env:
        await _killed_and_restarted(env)


async def _killed_and_restarted(env: Env) -> None:
    assert await env.metrics() == 10
    assert any(
        line.startswith("keda_ray_scaler_target_replicas") for line in await env.exposition()
    )
    pid = env.server.cache.pid  # type: ignore[union-attr]
    assert pid is not None
    os.kill(pid, signal.SIGKILL)

    async def code() -> str:
        try:
            return str(await env.metrics())
        except grpc.aio.AioRpcError as exc:
            return f"{exc.code().name}: {exc.details()}"

    down = await _eventually(code, lambda c: c.startswith("UNAVAILABLE"))
    assert down == "UNAVAILABLE: refresher process exited (code -9); restarting"
    assert not any(line.startswith("keda_ray_scaler_target_") for line in await env.exposition())
    assert await _eventually(code, lambda c: c == "10") == "10"
    assert env.server.cache.pid not in (None, pid)  # type: ignore[union-attr]
    assert env.server.cache.restarts == 1  # type: ignore[union-attr]


async def test_child_metrics_are_relayed_once_beside_the_parents(env: Env) -> None:
    """/metrics: the child's plan, target and source series, the parent's RPC series, no dupes."""
    assert await env.metrics() == 10
    want = 'keda_ray_scaler_target_replicas{cluster="ray/ray",group="cpu"} 10.0'
    lines = await _eventually(env.exposition, lambda ls: want in ls)
    for line in [
        want,
        'keda_ray_scaler_refreshes_total{cluster="ray/ray",outcome="ok"} 1.0',
        'keda_ray_scaler_plan_duration_seconds_count{cluster="ray/ray"} 1.0',
        'keda_ray_scaler_rpcs_total{code="OK",method="GetMetrics"} 1.0',
    ]:
        assert line in lines, line
    types = [line for line in lines if line.startswith("# TYPE ")]
    assert len(types) == len(set(types))


async def test_a_child_that_cannot_start_is_unavailable_naming_why() -> None:
    """An unpicklable source factory: the child cannot start; UNAVAILABLE says so, never 0."""
    server = build_server(
        source_factory=lambda registry: FileSource(Path("/nonexistent"), registry),
        clock=time.time,
        target_settings=TargetSettings(refresh_interval_s=3600, first_wait_s=STEP_S),
    )
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = pb_grpc.ExternalScalerStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()))
    finally:
        await server.stop(grace_s=0)
    assert info.value.code() is grpc.StatusCode.UNAVAILABLE
    assert info.value.details().startswith("refresher process failed to start (")
