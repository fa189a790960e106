"""Wire compatibility with KEDA's own externalscaler.proto, and generated-code drift."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from fake_clock import FakeClock
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_tools import protoc
from rpc_builders import T0, cluster_ref, meta, snapshot
from shared_ref import KEDA, missing

from keda_ray_scaler.rpc import keda_protogen
from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.sources.base import MemorySource

#: The tests' Ray cluster: ``ray`` in namespace ``ray``.
RAY = cluster_ref("ray")

KEDA_PROTO_DIR = KEDA
KEDA_PROTO = KEDA_PROTO_DIR / "externalscaler.proto"


class KedaClient:
    """A client built from KEDA's proto, in a private descriptor pool (no clash with ours)."""

    def __init__(self, descriptor_set: Path, channel: grpc.aio.Channel) -> None:
        files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
        pool = descriptor_pool.DescriptorPool()
        for f in files.file:
            pool.Add(f)
        self.types = {
            name: message_factory.GetMessageClass(
                pool.FindMessageTypeByName(f"externalscaler.{name}")
            )
            for name in (
                "ScaledObjectRef",
                "IsActiveResponse",
                "GetMetricSpecResponse",
                "GetMetricsRequest",
                "GetMetricsResponse",
            )
        }
        self.service = pool.FindServiceByName("externalscaler.ExternalScaler")
        self._channel = channel

    def call(self, method: str) -> Callable[..., Any]:
        m = self.service.methods_by_name[method]
        path = f"/{self.service.full_name}/{method}"
        request_type = self.types[m.input_type.name]
        response_type = self.types[m.output_type.name]
        factory = self._channel.unary_stream if m.server_streaming else self._channel.unary_unary
        return factory(
            path,
            request_serializer=request_type.SerializeToString,
            response_deserializer=response_type.FromString,
        )


@pytest.fixture
async def keda(tmp_path: Path) -> AsyncIterator[tuple[KedaClient, ScalerServer]]:
    if not KEDA_PROTO.exists():
        missing("KEDA's proto", KEDA_PROTO)
    out = tmp_path / "keda.pb"
    code = protoc.main(
        ["protoc", f"-I{KEDA_PROTO_DIR}", f"--descriptor_set_out={out}", str(KEDA_PROTO)]
    )
    assert code == 0
    server = build_server(
        MemorySource({RAY: snapshot(tasks={5: 20})}),
        clock=FakeClock(T0),
        target_settings=TargetSettings(refresh_interval_s=3600),
    )
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield KedaClient(out, channel), server
    finally:
        await channel.close()
        await server.stop(grace_s=0)


async def test_keda_proto_client_calls_every_rpc(keda: tuple[KedaClient, ScalerServer]) -> None:
    """A client compiled from KEDA's proto gets the seed example's answers from all five RPCs."""
    client, _ = keda
    t = client.types
    ref = t["ScaledObjectRef"](name="cpu-workers", namespace="ray", scalerMetadata=meta())
    spec = await client.call("GetMetricSpec")(ref)
    assert [(s.metricName, s.targetSize, s.targetSizeFloat) for s in spec.metricSpecs] == [
        ("ray-ray.cpu", 1, 1.0)
    ]
    request = t["GetMetricsRequest"](scaledObjectRef=ref, metricName="ray-ray.cpu")
    values = await client.call("GetMetrics")(request)
    assert [(v.metricName, v.metricValue, v.metricValueFloat) for v in values.metricValues] == [
        ("ray-ray.cpu", 10, 10.0)
    ]
    assert (await client.call("IsActive")(ref)).result is True
    active = client.call("StreamIsActive")(ref)
    assert (await asyncio.wait_for(active.read(), 5)).result is True
    active.cancel()
    specs = client.call("StreamMetricSpec")(ref)
    assert await asyncio.wait_for(specs.read(), 5) == spec
    specs.cancel()


def test_our_proto_declares_the_same_wire_contract_as_kedas(tmp_path: Path) -> None:
    """Same package, service, methods, streaming flags, messages, field numbers and types."""
    if not KEDA_PROTO.exists():
        missing("KEDA's proto", KEDA_PROTO)

    def contract(proto_dir: Path, name: str) -> dict[str, Any]:
        out = tmp_path / f"{proto_dir.name}.pb"
        assert protoc.main(["protoc", f"-I{proto_dir}", f"--descriptor_set_out={out}", name]) == 0
        (f,) = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
        return {
            "package": f.package,
            "services": {
                s.name: {
                    m.name: (m.input_type, m.output_type, m.server_streaming, m.client_streaming)
                    for m in s.method
                }
                for s in f.service
            },
            "messages": {
                m.name: {(fd.name, fd.number, fd.type, fd.label, fd.type_name) for fd in m.field}
                for m in f.message_type
            },
        }

    ours = contract(keda_protogen.PROTO_DIR, str(keda_protogen.PROTO_DIR / "externalscaler.proto"))
    theirs = contract(KEDA_PROTO_DIR, str(KEDA_PROTO))
    assert ours == theirs


def test_generated_code_matches_a_fresh_make_proto(tmp_path: Path) -> None:
    """Regenerating into a temporary directory gives byte-identical files."""
    fresh = keda_protogen.generate(tmp_path)
    committed = sorted(p for p in keda_protogen.OUT_DIR.iterdir() if p.suffix in {".py", ".pyi"})
    assert [p.name for p in fresh] == [p.name for p in committed]
    for new, old in zip(fresh, committed, strict=True):
        assert new.read_bytes() == old.read_bytes(), f"{old.name} drifted: run `make proto`"
