"""The scaler over a real loopback gRPC channel: every RPC, streams, health, reflection, metrics."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest
import structlog.testing
from fake_clock import FakeClock
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from rpc_builders import T0, cluster_ref, meta, node, snapshot

from keda_ray_scaler.errors import DemandUnavailable
from keda_ray_scaler.model import NodeStatus
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.server import SERVICE_NAME, ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.sources.base import MemorySource

#: The tests' Ray cluster: ``ray`` in namespace ``ray``.
RAY = cluster_ref("ray")

STEP_S = 5.0  # a generous bound for one message to arrive over loopback


@dataclass
class Env:
    server: ScalerServer
    source: MemorySource
    clock: FakeClock
    channel: grpc.aio.Channel
    stub: pb_grpc.ExternalScalerStub

    async def refresh(self) -> None:
        await self.server.cache.refresh()


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    clock = FakeClock(T0)
    source = MemorySource({RAY: snapshot(tasks={5: 20})})
    server = build_server(
        source,
        clock=clock,
        metrics_port=0,
        target_settings=TargetSettings(refresh_interval_s=3600, max_age_s=60),
        stream_debounce_s=30,
        extra=[("max_message_bytes", 64 * 1024)],
    )
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Env(server, source, clock, channel, pb_grpc.ExternalScalerStub(channel))
    finally:
        await channel.close()
        await server.stop(grace_s=0)
    # grpc.aio finishes its own per-RPC tasks a few loop turns after stop(); give them a
    # bounded moment, so only a task that really outlives the server fails the test.
    leaked = _pending_tasks()
    for _ in range(100):
        if not leaked:
            break
        await asyncio.sleep(0.01)
        leaked = _pending_tasks()
    assert leaked == [], f"tasks left running: {leaked}"


def _pending_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]


def ref(**metadata: str) -> pb.ScaledObjectRef:
    return pb.ScaledObjectRef(
        name="cpu-workers", namespace="ray", scalerMetadata=metadata or meta()
    )


async def test_get_metric_spec_is_answered_from_metadata_without_the_source(env: Env) -> None:
    """GetMetricSpec works with the source down and never queries it."""
    env.source.failure = DemandUnavailable("prometheus down")
    spec = await env.stub.GetMetricSpec(ref())
    assert [(s.metricName, s.targetSize, s.targetSizeFloat) for s in spec.metricSpecs] == [
        ("ray-ray.cpu", 1, 1.0)
    ]
    assert env.source.fetches == 0


async def test_seed_example_gives_metric_ten_and_active(env: Env) -> None:
    """20 pending {CPU: 5} bundles, 10-CPU group: GetMetrics 10 (int and float), IsActive true."""
    metrics = await env.stub.GetMetrics(
        pb.GetMetricsRequest(scaledObjectRef=ref(), metricName="ray-ray.cpu")
    )
    assert [(v.metricName, v.metricValue, v.metricValueFloat) for v in metrics.metricValues] == [
        ("ray-ray.cpu", 10, 10.0)
    ]
    assert (await env.stub.IsActive(ref())).result is True


async def test_no_demand_and_only_victims_is_inactive_with_target_zero(env: Env) -> None:
    """No demand, one victim pod: GetMetrics 0, IsActive false."""
    env.source.snapshots[RAY] = snapshot(nodes=(node("a", status=NodeStatus.VICTIM),))
    value = await env.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()))
    assert value.metricValues[0].metricValue == 0
    assert (await env.stub.IsActive(ref())).result is False


async def test_answers_follow_the_target_across_refreshes(env: Env) -> None:
    """Prebuilt answers are per value: 10 and active, then 0 and inactive, then 10 again."""
    seen = []
    for snap in (
        snapshot(tasks={5: 20}),
        snapshot(nodes=(node("a", status=NodeStatus.VICTIM),)),
        snapshot(tasks={5: 20}),
    ):
        env.source.snapshots[RAY] = snap
        await env.refresh()
        value = await env.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()))
        active = await env.stub.IsActive(ref())
        seen.append((value.metricValues[0].metricValue, active.result))
    assert seen == [(10, True), (0, False), (10, True)]


async def test_idle_live_pod_keeps_the_group_active(env: Env) -> None:
    """No demand but one running pod: target 1 (the floor), IsActive true."""
    env.source.snapshots[RAY] = snapshot(nodes=(node("a", idle_s=9999),))
    value = await env.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()))
    assert (value.metricValues[0].metricValue, (await env.stub.IsActive(ref())).result) == (1, True)


@pytest.mark.parametrize(
    ("metadata", "key", "reason"),
    [
        ({"rayCluster": 'ray"}) or vector(1)', "workerGroup": "cpu"}, "rayCluster", "bad_name"),
        ({"rayCluster": "ray", "workerGroup": "cpu", "query": "up"}, "query", "unknown_key"),
        ({"rayCluster": "ray"}, "workerGroup", "missing"),
    ],
    ids=["promql-in-cluster", "extra-query-key", "missing-group"],
)
async def test_bad_metadata_is_invalid_argument_naming_the_key(
    env: Env, metadata: dict[str, str], key: str, reason: str
) -> None:
    """Every RPC refuses injection attempts with INVALID_ARGUMENT and the key in the message."""
    calls = [
        env.stub.GetMetricSpec(ref(**metadata)),
        env.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref(**metadata))),
        env.stub.IsActive(ref(**metadata)),
    ]
    for call in calls:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert f"trigger metadata: {key}: " in (info.value.details() or "")
    stream = env.stub.StreamIsActive(ref(**metadata))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stream.read()
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert env.source.fetches == 0
    counted = env.server.registry.get_sample_value(
        "keda_ray_scaler_config_errors_total", {"reason": reason}
    )
    assert counted == 4.0


async def test_config_errors_are_counted_by_reason_never_by_the_key_sent(env: Env) -> None:
    """200 random unknown keys add no series: config_errors has one child per fixed reason."""
    for i in range(200):
        with pytest.raises(grpc.aio.AioRpcError):
            await env.stub.GetMetricSpec(ref(**meta(), **{f"k{i:03d}x{'y' * 40}": "v"}))
    families = {m.name: m for m in env.server.registry.collect()}
    samples = [
        s for s in families["keda_ray_scaler_config_errors"].samples if s.name.endswith("_total")
    ]
    assert sorted(s.labels["reason"] for s in samples) == [
        "bad_name",
        "bad_number",
        "invalid",
        "missing",
        "unknown_key",
    ]
    assert {s.labels["reason"]: s.value for s in samples}["unknown_key"] == 200.0


async def test_error_texts_sent_to_keda_carry_no_url_credentials(env: Env) -> None:
    """A source error quoting a URL with user:password@: KEDA gets the host, not the password."""
    env.source.failure = DemandUnavailable(
        "connection: cluster ray/ray at http://scaler:Sup3rS3cret@10.0.0.7:8080/metrics: refused"
    )
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()))
    assert info.value.code() is grpc.StatusCode.UNAVAILABLE
    assert info.value.details() == (
        "connection: cluster ray/ray at http://10.0.0.7:8080/metrics: refused"
    )


async def test_unknown_cluster_or_group_is_not_found(env: Env) -> None:
    """NOT_FOUND names the cluster or group."""
    for metadata, text in [
        (meta(cluster="other"), "Ray cluster ray/other not found"),
        (meta(group="gpu"), "worker group 'gpu' not found in Ray cluster ray/ray"),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await env.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref(**metadata)))
        assert (info.value.code(), info.value.details()) == (grpc.StatusCode.NOT_FOUND, text)


async def test_refused_rpc_is_logged_with_cluster_and_group(env: Env) -> None:
    """A refused call logs method, code, error, cluster and worker_group."""
    with structlog.testing.capture_logs() as logs, pytest.raises(grpc.aio.AioRpcError):
        await env.stub.IsActive(ref(**meta(group="gpu")))
    assert logs == [
        {
            "event": "rpc refused",
            "method": "IsActive",
            "code": "NOT_FOUND",
            "error": "worker group 'gpu' not found in Ray cluster ray/ray",
            "cluster": "ray",
            "namespace": "ray",
            "worker_group": "gpu",
            "log_level": "info",
        }
    ]


async def test_stale_or_failed_data_is_unavailable_and_health_stays_serving(env: Env) -> None:
    """Stale snapshot and failed source: UNAVAILABLE from GetMetrics and IsActive; SERVING."""
    env.clock.advance(61)
    for call in (
        env.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref())),
        env.stub.IsActive(ref()),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call
        assert info.value.code() is grpc.StatusCode.UNAVAILABLE
        assert "agent snapshot is 61s old (max 60s)" in (info.value.details() or "")
    env.source.failure = DemandUnavailable("prometheus down")
    await env.refresh()
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.stub.IsActive(ref())
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.UNAVAILABLE,
        "prometheus down",
    )
    health = health_pb2_grpc.HealthStub(env.channel)
    for service in ("", SERVICE_NAME):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_stream_is_active_sends_state_on_open_then_true_at_first_demand(env: Env) -> None:
    """Open at zero: false; demand arrives, next refresh: true at once."""
    env.source.snapshots[RAY] = snapshot()
    stream = env.stub.StreamIsActive(ref())
    assert (await asyncio.wait_for(stream.read(), STEP_S)).result is False
    env.source.snapshots[RAY] = snapshot(tasks={5: 1})
    await env.refresh()
    assert (await asyncio.wait_for(stream.read(), STEP_S)).result is True
    stream.cancel()


async def test_stream_is_active_sends_false_only_after_the_debounce(env: Env) -> None:
    """Demand gone: nothing within 30 s of debounce; false at the first refresh after it."""
    stream = env.stub.StreamIsActive(ref())
    assert (await asyncio.wait_for(stream.read(), STEP_S)).result is True
    env.source.snapshots[RAY] = snapshot(t=T0 + 10)
    env.clock.advance(10)
    await env.refresh()
    pending = asyncio.ensure_future(stream.read())
    done, _ = await asyncio.wait({pending}, timeout=0.5)
    assert done == set()  # inactive for 0 s < 30 s: nothing sent
    env.source.snapshots[RAY] = snapshot(t=T0 + 40)
    env.clock.advance(30)
    await env.refresh()
    assert (await asyncio.wait_for(pending, STEP_S)).result is False
    stream.cancel()


async def test_stream_is_active_sends_nothing_while_data_is_unavailable(env: Env) -> None:
    """A failed refresh is unknown, not inactive: no message is sent."""
    stream = env.stub.StreamIsActive(ref())
    assert (await asyncio.wait_for(stream.read(), STEP_S)).result is True
    env.source.failure = DemandUnavailable("down")
    env.clock.advance(100)
    await env.refresh()
    pending = asyncio.ensure_future(stream.read())
    done, _ = await asyncio.wait({pending}, timeout=0.5)
    assert done == set()
    stream.cancel()


async def test_stream_is_active_refuses_to_open_on_unavailable_data(env: Env) -> None:
    """No fresh data at open: the stream ends with UNAVAILABLE instead of guessing a state."""
    env.source.failure = DemandUnavailable("prometheus down")
    stream = env.stub.StreamIsActive(ref())
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await asyncio.wait_for(stream.read(), STEP_S)
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.UNAVAILABLE,
        "prometheus down",
    )


async def test_stream_metric_spec_sends_the_get_metric_spec_answer_once(env: Env) -> None:
    """StreamMetricSpec's first message equals GetMetricSpec; refreshes send nothing more."""
    stream = env.stub.StreamMetricSpec(ref())
    first = await asyncio.wait_for(stream.read(), STEP_S)
    assert first == await env.stub.GetMetricSpec(ref())
    await env.refresh()
    pending = asyncio.ensure_future(stream.read())
    done, _ = await asyncio.wait({pending}, timeout=0.5)
    assert done == set()
    stream.cancel()


async def test_graceful_stop_ends_open_streams(env: Env) -> None:
    """stop() ends both streams cleanly (EOF) instead of leaving them hanging."""
    active = env.stub.StreamIsActive(ref())
    spec = env.stub.StreamMetricSpec(ref())
    await asyncio.wait_for(active.read(), STEP_S)
    await asyncio.wait_for(spec.read(), STEP_S)
    await asyncio.wait_for(env.server.stop(grace_s=5), STEP_S)
    assert await asyncio.wait_for(active.read(), STEP_S) is grpc.aio.EOF
    assert await asyncio.wait_for(spec.read(), STEP_S) is grpc.aio.EOF


async def test_oversized_request_is_refused(env: Env) -> None:
    """A request above max_message_bytes (64 KiB here) is RESOURCE_EXHAUSTED."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.stub.IsActive(ref(**meta(), scalerAddress="x" * 100_000))
    assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_reflection_lists_the_scaler_and_health_services() -> None:
    """Server reflection, when asked for (--reflection; off by default), answers
    list_services."""
    server = build_server(
        MemorySource({RAY: snapshot()}), clock=FakeClock(T0), extra=[("reflection", True)]
    )
    names: list[str] = []
    async with server, grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        async for reply in stub.ServerReflectionInfo(iter([request])):
            names += [s.name for s in reply.list_services_response.service]
    assert sorted(names) == sorted(
        [SERVICE_NAME, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"]
    )


async def test_metrics_endpoint_counts_rpcs_and_exports_targets(env: Env) -> None:
    """/metrics has RPCs by method and code, latency, target per group, data age."""
    await env.stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()))
    with pytest.raises(grpc.aio.AioRpcError):
        await env.stub.IsActive(ref(**meta(cluster="other")))
    url = f"http://127.0.0.1:{env.server.metrics_port}/metrics"
    body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read().decode())
    for line in [
        'keda_ray_scaler_rpcs_total{code="OK",method="GetMetrics"} 1.0',
        'keda_ray_scaler_rpcs_total{code="NOT_FOUND",method="IsActive"} 1.0',
        'keda_ray_scaler_rpc_duration_seconds_count{method="GetMetrics"} 1.0',
        'keda_ray_scaler_target_replicas{cluster="ray/ray",group="cpu"} 10.0',
        'keda_ray_scaler_data_age_seconds{cluster="ray/ray"} 0.0',
        'keda_ray_scaler_refreshes_total{cluster="ray/ray",outcome="ok"} 1.0',
        'keda_ray_scaler_plan_duration_seconds_count{cluster="ray/ray"} 1.0',
    ]:
        assert line in body.splitlines(), line


async def test_calls_beyond_max_concurrent_rpcs_are_resource_exhausted() -> None:
    """With a limit of 1, an open stream holds the only slot: a unary call is refused."""
    server = build_server(
        MemorySource({RAY: snapshot()}),
        clock=FakeClock(T0),
        target_settings=TargetSettings(refresh_interval_s=3600),
        extra=[("max_concurrent_rpcs", 1)],
    )
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = pb_grpc.ExternalScalerStub(channel)
            stream = stub.StreamMetricSpec(ref())
            await asyncio.wait_for(stream.read(), STEP_S)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.GetMetricSpec(ref())
            assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            stream.cancel()
    finally:
        await server.stop(grace_s=0)
