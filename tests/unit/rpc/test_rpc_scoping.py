"""Cluster identity over a real loopback gRPC channel: who may read which cluster, and which
data is refused (cross namespace, two origins, a snapshot time from the future)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest
import structlog.testing
from fake_clock import FakeClock
from prometheus_client import generate_latest
from rpc_builders import T0, cluster_ref, meta, snapshot

from keda_ray_scaler.errors import Refusal, UntrustedData
from keda_ray_scaler.identity import NamespaceGrants
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.sources.base import MemorySource

#: Team a's cluster ``demo`` (20 x {CPU: 5} pending: target 10) and team b's own ``demo`` (none).
TEAM_A_DEMO = cluster_ref("demo", "team-a")
TEAM_B_DEMO = cluster_ref("demo", "team-b")


@dataclass
class Env:
    server: ScalerServer
    source: MemorySource
    clock: FakeClock
    stub: pb_grpc.ExternalScalerStub

    def refusals(self, reason: Refusal) -> float:
        value = self.server.registry.get_sample_value(
            "keda_ray_scaler_refusals_total", {"reason": reason.value}
        )
        return -1.0 if value is None else value


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    clock = FakeClock(T0)
    source = MemorySource(
        {
            TEAM_A_DEMO: snapshot("demo", tasks={5: 20}),
            TEAM_B_DEMO: snapshot("demo"),
        }
    )
    server = build_server(
        source,
        clock=clock,
        target_settings=TargetSettings(refresh_interval_s=3600, max_age_s=60),
        grants=NamespaceGrants.parse(["ops=team-a"], "test", "grants"),
    )
    async with server, grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield Env(server, source, clock, pb_grpc.ExternalScalerStub(channel))


def asking(namespace: str, **metadata: str) -> pb.GetMetricsRequest:
    """GetMetrics of worker group cpu of ``demo``, from a ScaledObject in ``namespace``."""
    ref = pb.ScaledObjectRef(
        name="cpu", namespace=namespace, scalerMetadata=meta("demo", **metadata)
    )
    return pb.GetMetricsRequest(scaledObjectRef=ref, metricName="ray-demo.cpu")


async def target(env: Env, request: pb.GetMetricsRequest) -> int:
    return int((await env.stub.GetMetrics(request)).metricValues[0].metricValue)


async def refused(env: Env, request: pb.GetMetricsRequest) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.stub.GetMetrics(request)
    return info.value.code(), info.value.details() or ""


async def test_each_namespace_reads_its_own_cluster_of_a_shared_name(env: Env) -> None:
    """Two teams' clusters named demo are two clusters: each ScaledObject gets its own target."""
    assert await target(env, asking("team-a")) == 10
    assert await target(env, asking("team-b")) == 0


@pytest.mark.parametrize("namespace", ["team-c", "kube-system"])
async def test_a_namespace_without_such_a_cluster_gets_not_found(env: Env, namespace: str) -> None:
    """The review's probe: another namespace asking for demo reads nobody's target."""
    assert await refused(env, asking(namespace)) == (
        grpc.StatusCode.NOT_FOUND,
        f"Ray cluster {namespace}/demo not found",
    )


async def test_a_call_without_a_namespace_is_invalid_and_reads_nothing(env: Env) -> None:
    """KEDA always sends the ScaledObject's namespace; a call without one cannot be scoped."""
    fetches = env.source.fetches
    assert await refused(env, asking("")) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "scaledObjectRef: namespace: required (the ScaledObject's namespace)",
    )
    assert env.source.fetches == fetches


async def test_naming_another_namespace_without_a_grant_is_permission_denied(env: Env) -> None:
    """team-b naming team-a's cluster: PERMISSION_DENIED, counted, one log line, no fetch."""
    fetches = env.source.fetches
    with structlog.testing.capture_logs() as logs:
        code, details = await refused(env, asking("team-b", rayClusterNamespace="team-a"))
    assert code is grpc.StatusCode.PERMISSION_DENIED
    assert details == (
        "a ScaledObject in namespace 'team-b' may not read Ray cluster team-a/demo: only "
        "clusters of its own namespace, unless the scaler runs with "
        "--allow-cross-namespace team-b=team-a"
    )
    assert env.refusals(Refusal.CROSS_NAMESPACE) == 1.0
    assert [(e["event"], e["reason"], e["scaled_object_namespace"]) for e in logs] == [
        ("rpc refused", Refusal.CROSS_NAMESPACE, "team-b")
    ]
    assert env.source.fetches == fetches


async def test_a_grant_lets_the_named_reader_read_and_nobody_else(env: Env) -> None:
    """--allow-cross-namespace ops=team-a: ops reads team-a's target; team-b still may not."""
    assert await target(env, asking("ops", rayClusterNamespace="team-a")) == 10
    code, _ = await refused(env, asking("team-b", rayClusterNamespace="team-a"))
    assert code is grpc.StatusCode.PERMISSION_DENIED


async def test_a_snapshot_time_from_the_future_is_unavailable_and_counted(env: Env) -> None:
    """An agent time 6 s ahead (skew 5 s) is refused: UNAVAILABLE, future_snapshot counted."""
    env.source.snapshots[TEAM_A_DEMO] = snapshot("demo", tasks={5: 20}, t=T0 + 6)
    code, details = await refused(env, asking("team-a"))
    assert (code, details) == (
        grpc.StatusCode.UNAVAILABLE,
        "Ray cluster team-a/demo: agent snapshot time is 6s in the future "
        "(max clock skew 5s): refused",
    )
    assert env.refusals(Refusal.FUTURE_SNAPSHOT) == 1.0


async def test_a_snapshot_within_the_clock_skew_is_answered(env: Env) -> None:
    """5 s ahead is skew, not forgery: answered as usual."""
    env.source.snapshots[TEAM_A_DEMO] = snapshot("demo", tasks={5: 20}, t=T0 + 5)
    assert await target(env, asking("team-a")) == 10


async def test_two_origins_are_unavailable_and_counted(env: Env) -> None:
    """A source that found two origins: UNAVAILABLE with both named, two_origins counted."""
    env.source.failure = UntrustedData(Refusal.TWO_ORIGINS, "Ray cluster 'demo': 'a' and 'b'")
    code, details = await refused(env, asking("team-a"))
    assert (code, details) == (grpc.StatusCode.UNAVAILABLE, "Ray cluster 'demo': 'a' and 'b'")
    assert env.refusals(Refusal.TWO_ORIGINS) == 1.0


async def test_every_refusal_reason_is_exported_from_the_start(env: Env) -> None:
    """The reason label is a fixed set, each series present at 0 before any refusal."""
    lines = generate_latest(env.server.registry).decode().splitlines()
    for reason in Refusal:
        assert f'keda_ray_scaler_refusals_total{{reason="{reason.value}"}} 0.0' in lines
