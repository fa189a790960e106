"""Who may call, over real gRPC with TLS certificates made here: only KEDA's certificate is
served, streams are bounded per connection and per client address, reflection is off."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from fake_clock import FakeClock
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from kube_emulator import until
from rpc_builders import T0, cluster_ref, meta, snapshot
from tls_certs import Certs, Pem, make_certs

from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.tls import TlsFiles
from keda_ray_scaler.sources.base import MemorySource

STEP_S = 5.0  # a generous bound for one answer over loopback
#: Small bounds for the tests: two streams a connection, three an address.
PER_CONNECTION, PER_PEER = 2, 3
#: KEDA's pod in the stream tests: another loopback address than the flooding client's.
KEDA_ADDRESS = "127.0.0.2"


@pytest.fixture(scope="module")
def certs() -> Certs:
    return make_certs()


async def mtls_server(tmp_path: Path, certs: Certs, **fields: Any) -> ScalerServer:
    """A started mTLS scaler on loopback; ``fields`` override ServerSettings."""
    cert, key = certs.server.write(tmp_path, "server")
    ca = tmp_path / "ca.crt"
    ca.write_bytes(certs.ca.cert)
    server = build_server(
        MemorySource({cluster_ref("ray"): snapshot(tasks={5: 20})}),
        clock=FakeClock(T0),
        tls=TlsFiles(cert, key, ca),
        target_settings=TargetSettings(refresh_interval_s=3600),
        extra=list(fields.items()),
    )
    await server.start()
    return server


@pytest.fixture
async def server(tmp_path: Path, certs: Certs) -> AsyncIterator[ScalerServer]:
    srv = await mtls_server(
        tmp_path,
        certs,
        max_streams_per_connection=PER_CONNECTION,
        max_streams_per_peer=PER_PEER,
    )
    try:
        yield srv
    finally:
        await srv.stop(grace_s=0)


def channel(port: int, certs: Certs, client: Pem, *, own_connection: bool = False) -> Any:
    """A TLS channel to ``localhost:port`` presenting ``client``; ``own_connection``: never
    shares grpc's connection with another channel."""
    credentials = grpc.ssl_channel_credentials(
        root_certificates=certs.ca.cert, private_key=client.key, certificate_chain=client.cert
    )
    options = [("grpc.use_local_subchannel_pool", 1)] if own_connection else []
    return grpc.aio.secure_channel(f"localhost:{port}", credentials, options=options)


def ref() -> pb.ScaledObjectRef:
    return pb.ScaledObjectRef(name="cpu-workers", namespace="ray", scalerMetadata=meta())


def counted(srv: ScalerServer, metric: str, **labels: str) -> float | None:
    return srv.registry.get_sample_value(f"keda_ray_scaler_{metric}_total", labels)


async def first_answer(call: Any) -> Any:
    """The stream's first message (raises the call's error)."""
    return await asyncio.wait_for(call.read(), STEP_S)


async def refusal(call: Any) -> grpc.aio.AioRpcError:
    """The error a unary or stream call ends with (fails the test when it is answered)."""
    streaming = isinstance(call, grpc.aio.UnaryStreamCall)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await (first_answer(call) if streaming else asyncio.wait_for(call, STEP_S))
    return info.value


# --- identity ------------------------------------------------------------------------------


async def test_kedas_certificate_is_served(server: ScalerServer, certs: Certs) -> None:
    """mTLS with KEDA's certificate (CN keda): every call is answered, nothing refused."""
    async with channel(server.port, certs, certs.client) as ch:
        stub = pb_grpc.ExternalScalerStub(ch)
        assert (await stub.IsActive(ref(), timeout=STEP_S)).result is True
        metrics = await stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()), timeout=STEP_S)
        assert metrics.metricValues[0].metricValue == 10
        assert (await first_answer(stub.StreamIsActive(ref()))).result is True
    assert counted(server, "refusals", reason="client_identity") == 0


async def test_a_certificate_from_the_ca_naming_someone_else_is_permission_denied(
    server: ScalerServer, certs: Certs
) -> None:
    """A client certificate the same CA signed, CN team-a (as whoever may use the CA's issuer
    can have it signed): every call, streams and health included, is PERMISSION_DENIED
    naming both names and the flag, each counted."""
    async with channel(server.port, certs, certs.impostor) as ch:
        stub = pb_grpc.ExternalScalerStub(ch)
        calls = [
            stub.IsActive(ref(), timeout=STEP_S),
            stub.GetMetricSpec(ref(), timeout=STEP_S),
            stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref()), timeout=STEP_S),
            stub.StreamIsActive(ref()),
            stub.StreamMetricSpec(ref()),
            health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=STEP_S),
        ]
        errors = [await refusal(call) for call in calls]
    assert {e.code() for e in errors} == {grpc.StatusCode.PERMISSION_DENIED}
    assert errors[0].details() == (
        "the client certificate names 'team-a', not 'keda': only KEDA's certificate is served "
        "(--client-identity)"
    )
    assert counted(server, "refusals", reason="client_identity") == len(calls)
    assert counted(server, "rpcs", method="IsActive", code="PERMISSION_DENIED") == 1
    assert server.gate.quota.open_streams("ipv4:127.0.0.1:1") == (0, 0)  # none was counted


async def test_the_identity_is_a_setting_and_empty_serves_every_certificate_of_the_ca(
    tmp_path: Path, certs: Certs
) -> None:
    """--client-identity team-a serves team-a and refuses KEDA's; '' serves both."""
    for identity, served in (("team-a", {"team-a"}), ("", {"keda", "team-a"})):
        srv = await mtls_server(tmp_path, certs, client_identity=identity)
        try:
            answered = set()
            for name, pem in (("keda", certs.client), ("team-a", certs.impostor)):
                async with channel(srv.port, certs, pem) as ch:
                    with contextlib.suppress(grpc.aio.AioRpcError):
                        await pb_grpc.ExternalScalerStub(ch).IsActive(ref(), timeout=STEP_S)
                        answered.add(name)
            assert answered == served, identity
        finally:
            await srv.stop(grace_s=0)


async def test_without_client_authentication_there_is_no_identity_to_check() -> None:
    """Plaintext (no certificate at all): the gate checks no identity (serve warns instead)."""
    srv = build_server(MemorySource({cluster_ref("ray"): snapshot()}), clock=FakeClock(T0))
    async with srv:
        assert srv.gate.identity is None
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
            await pb_grpc.ExternalScalerStub(ch).IsActive(ref(), timeout=STEP_S)


# --- streams -------------------------------------------------------------------------------


class SourceProxy:
    """A TCP relay on loopback whose connections to the server come from ``source``: the
    server sees another client address, as it would see KEDA's pod beside a flooding one."""

    def __init__(self, upstream_port: int, source: str) -> None:
        self._upstream = upstream_port
        self._source = source
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> SourceProxy:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(
            "127.0.0.1", self._upstream, local_addr=(self._source, 0)
        )
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(_pipe(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while chunk := await src.read(65536):
            dst.write(chunk)
            await dst.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        dst.close()


async def test_streams_beyond_the_bounds_are_refused_while_kedas_stream_still_opens(
    server: ScalerServer, certs: Certs
) -> None:
    """One address floods: its third stream on one connection is RESOURCE_EXHAUSTED naming
    --max-streams-per-connection, its fourth over two connections --max-streams-per-peer, each
    counted; KEDA's pod (another address) still opens its stream; a closed stream frees its
    slot."""
    flood_a = channel(server.port, certs, certs.client, own_connection=True)
    flood_b = channel(server.port, certs, certs.client, own_connection=True)
    async with flood_a, flood_b, SourceProxy(server.port, KEDA_ADDRESS) as proxy:
        a, b = pb_grpc.ExternalScalerStub(flood_a), pb_grpc.ExternalScalerStub(flood_b)
        held = [a.StreamIsActive(ref()), a.StreamMetricSpec(ref())]
        for call in held:
            await first_answer(call)
        over_connection = await refusal(a.StreamIsActive(ref()))
        held.append(b.StreamIsActive(ref()))
        await first_answer(held[-1])
        over_peer = await refusal(b.StreamIsActive(ref()))
        async with channel(proxy.port, certs, certs.client) as keda:
            answer = await first_answer(pb_grpc.ExternalScalerStub(keda).StreamIsActive(ref()))
            assert answer.result is True
            # the unary calls were never bounded by the streams
            assert (await a.IsActive(ref(), timeout=STEP_S)).result is True
        held.pop(0).cancel()
        reopened = await _open_within(a, STEP_S)
        reopened.cancel()
    # the flood's connections closed with their streams still open (never cancelled): the
    # server ends each stream's handler, and every slot of the address is free again
    await until(lambda: server.gate.quota.open_streams(LOOPBACK_PEER) == (0, 0), STEP_S)
    assert (over_connection.code(), over_peer.code()) == (grpc.StatusCode.RESOURCE_EXHAUSTED,) * 2
    assert over_connection.details() == (
        "at most 2 streams at once on one connection (--max-streams-per-connection)"
    )
    assert over_peer.details() == (
        "at most 3 streams at once from one client address (--max-streams-per-peer)"
    )
    assert counted(server, "limit_refusals", limit="streams_per_connection") == 1
    assert counted(server, "limit_refusals", limit="streams_per_peer") == 1


#: A peer string of the flood's address (the port is not part of the address's count).
LOOPBACK_PEER = "ipv4:127.0.0.1:1"


async def _open_within(stub: pb_grpc.ExternalScalerStub, seconds: float) -> Any:
    """A StreamIsActive opened as soon as a slot is free (the server sees a cancel a moment
    after the client sends it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        call = stub.StreamIsActive(ref())
        try:
            await first_answer(call)
            return call
        except grpc.aio.AioRpcError as exc:
            if exc.code() is not grpc.StatusCode.RESOURCE_EXHAUSTED or loop.time() > deadline:
                raise
        await asyncio.sleep(0.05)


# --- reflection ----------------------------------------------------------------------------


async def test_reflection_is_off_by_default(server: ScalerServer, certs: Certs) -> None:
    """Server reflection is UNIMPLEMENTED unless asked for (--reflection)."""
    assert server.settings.reflection is False
    async with channel(server.port, certs, certs.client) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in stub.ServerReflectionInfo(iter([request]), timeout=STEP_S):
                pass
    assert info.value.code() is grpc.StatusCode.UNIMPLEMENTED
