"""Health over real loopback gRPC: ``Check`` always answers, ``Watch`` streams are bounded."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from fake_clock import FakeClock
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rpc_builders import T0, cluster_ref, snapshot

from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.sources.base import MemorySource

SERVING = health_pb2.HealthCheckResponse.SERVING
#: the probe port's concurrent-RPC limit, which 64 Watch streams used to fill
PROBE_LIMIT = 64


@pytest.fixture
async def server() -> AsyncIterator[ScalerServer]:
    srv = build_server(
        MemorySource({cluster_ref("ray"): snapshot()}),
        clock=FakeClock(T0),
        health_port=0,
        extra=[("max_health_watches", 4)],
    )
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop(grace_s=0)


def limited(srv: ScalerServer) -> float | None:
    return srv.registry.get_sample_value(
        "keda_ray_scaler_limit_refusals_total", {"limit": "health_watch"}
    )


async def check(channel: grpc.aio.Channel) -> int:
    reply = await health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=""), timeout=5
    )
    return int(reply.status)


async def test_watch_streams_on_the_probe_port_cannot_starve_the_kubelets_check(
    server: ScalerServer,
) -> None:
    """64 Watch calls on the probe port are UNIMPLEMENTED at once; Check still answers."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.health_port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        watches = [
            stub.Watch(health_pb2.HealthCheckRequest(service="")) for _ in range(PROBE_LIMIT)
        ]
        codes = []
        for call in watches:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await asyncio.wait_for(call.read(), 5)
            codes.append(info.value.code())
        assert set(codes) == {grpc.StatusCode.UNIMPLEMENTED}
        assert await check(channel) == SERVING
    assert limited(server) == PROBE_LIMIT


async def test_main_port_serves_a_few_watch_streams_and_refuses_more(
    server: ScalerServer,
) -> None:
    """At most max_health_watches (4) Watch streams; the fifth is RESOURCE_EXHAUSTED; Check
    answers meanwhile, and a slot frees when a stream ends."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        open_ = [stub.Watch(health_pb2.HealthCheckRequest(service="")) for _ in range(4)]
        for call in open_:
            assert (await asyncio.wait_for(call.read(), 5)).status == SERVING
        extra = stub.Watch(health_pb2.HealthCheckRequest(service=""))
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await asyncio.wait_for(extra.read(), 5)
        assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "at most 4 health Watch streams" in (info.value.details() or "")
        assert await check(channel) == SERVING
        open_[0].cancel()
        again = stub.Watch(health_pb2.HealthCheckRequest(service=""))
        for _ in range(50):  # the cancelled stream's slot is released on the server's loop
            try:
                assert (await asyncio.wait_for(again.read(), 5)).status == SERVING
                break
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.05)
                again = stub.Watch(health_pb2.HealthCheckRequest(service=""))
        else:
            pytest.fail("a freed Watch slot was never reused")
        for call in (*open_[1:], again):
            call.cancel()
    assert limited(server) is not None and limited(server) >= 1  # type: ignore[operator]
