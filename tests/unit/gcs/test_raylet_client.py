"""The head raylet's client and rule R1's reads against ``grpc.aio`` servers on 127.0.0.1 playing
Ray's GCS and the head's raylet (no Ray): the address found through ``GetAllNodeInfo``, the
token and deadline on ``GetResourceLoad``, one-line failures, and the reader's counted fallback
to the GCS's sum whenever a read R1 adds fails.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
import pytest_asyncio
from grpc import aio
from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.loop import AgentLoop, LoopSettings
from keda_ray_scaler.agent.metric_names import DEMAND_FALLBACKS
from keda_ray_scaler.agent.ray.ray_state import DemandRead, RayReader
from keda_ray_scaler.agent.ray.task_load_read import Fallback, read_task_load
from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.demo.raylets import free_port
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.gcs._generated import (
    autoscaler_pb2_grpc,
    gcs_pb2,
    gcs_service_pb2,
    gcs_service_pb2_grpc,
    node_manager_pb2,
    node_manager_pb2_grpc,
)
from keda_ray_scaler.gcs.client import GcsClient, GcsConnection
from keda_ray_scaler.gcs.raylet import HeadRaylet, RayletAddress, RayletClient
from keda_ray_scaler.model import Bundle, ClusterSpec, Resources, WorkerGroup

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
HEAD, WORKER = "aa" * 28, "bb" * 28
TOKEN = "s3cret-token"


def load(node_id: str, **counts: int) -> gcs_pb2.ResourcesData:
    """A node's ``ResourcesData`` with ``counts`` ready tasks per CPU count (``c5=3``)."""
    data = gcs_pb2.ResourcesData(node_id=bytes.fromhex(node_id))
    for name, n in counts.items():
        entry = data.resource_load_by_shape.resource_demands.add(num_ready_requests_queued=n)
        entry.shape["CPU"] = float(name.removeprefix("c"))
    return data


def status() -> pb.GetClusterStatusReply:
    """The snapshot: the head, one worker with 5 CPUs used, and the GCS's sum of 4 pending."""
    reply = pb.GetClusterStatusReply()
    state = reply.cluster_resource_state
    head = state.node_states.add(node_id=bytes.fromhex(HEAD), status=pb.RUNNING)
    head.total_resources["node:__internal_head__"] = 1.0
    worker = state.node_states.add(
        node_id=bytes.fromhex(WORKER),
        instance_id="ray-cpu-a",
        ray_node_type_name="cpu",
        status=pb.RUNNING,
    )
    worker.total_resources["CPU"] = 10.0
    worker.available_resources["CPU"] = 5.0
    state.pending_resource_requests.add(count=4).request.resources_bundle["CPU"] = 5.0
    state.cluster_resource_constraints.add()  # no v1 KV read
    return reply


@dataclass
class Fakes:
    """What the fake GCS and raylet answer, and what they were asked, in order."""

    raylet_port: int = 0
    head_load: gcs_pb2.ResourcesData = field(default_factory=lambda: load(HEAD, c5=3))
    usage: list[gcs_pb2.ResourcesData] = field(
        default_factory=lambda: [load(HEAD, c5=4), load(WORKER, c1=2)]
    )
    raylet_refuse: grpc.StatusCode | None = None
    raylet_sleep_s: float = 0.0
    usage_refuse: grpc.StatusCode | None = None
    known_node: bool = True
    calls: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def saw(self, rpc: str, context: aio.ServicerContext) -> None:
        self.calls.append((rpc, dict(context.invocation_metadata() or ())))


class Autoscaler(autoscaler_pb2_grpc.AutoscalerStateServiceServicer):
    def __init__(self, fakes: Fakes) -> None:
        self.fakes = fakes

    async def GetClusterStatus(self, request: Any, context: Any) -> Any:
        self.fakes.saw("GetClusterStatus", context)
        return status()


class Usage(gcs_service_pb2_grpc.NodeResourceInfoGcsServiceServicer):
    def __init__(self, fakes: Fakes) -> None:
        self.fakes = fakes

    async def GetAllResourceUsage(self, request: Any, context: Any) -> Any:
        self.fakes.saw("GetAllResourceUsage", context)
        if self.fakes.usage_refuse is not None:
            await context.abort(self.fakes.usage_refuse, "refused by the test")
        reply = gcs_service_pb2.GetAllResourceUsageReply()
        reply.resource_usage_data.batch.extend(self.fakes.usage)
        return reply


class Nodes(gcs_service_pb2_grpc.NodeInfoGcsServiceServicer):
    def __init__(self, fakes: Fakes) -> None:
        self.fakes = fakes

    async def GetAllNodeInfo(self, request: Any, context: Any) -> Any:
        self.fakes.saw("GetAllNodeInfo", context)
        reply = gcs_service_pb2.GetAllNodeInfoReply()
        alive = gcs_pb2.GcsNodeInfo.ALIVE
        # A Ray that ignores the selector answers every node: the one asked is picked.
        reply.node_info_list.add(
            node_id=bytes.fromhex(WORKER), node_manager_address="127.0.0.1", state=alive
        ).node_manager_port = 1
        if self.fakes.known_node:
            reply.node_info_list.add(
                node_id=bytes.fromhex(HEAD),
                node_manager_address="127.0.0.1",
                node_manager_port=self.fakes.raylet_port,
                state=alive,
            )
        return reply


class Raylet(node_manager_pb2_grpc.NodeManagerServiceServicer):
    def __init__(self, fakes: Fakes) -> None:
        self.fakes = fakes

    async def GetResourceLoad(self, request: Any, context: Any) -> Any:
        self.fakes.saw("GetResourceLoad", context)
        if self.fakes.raylet_sleep_s:
            await asyncio.sleep(self.fakes.raylet_sleep_s)
        if self.fakes.raylet_refuse is not None:
            await context.abort(self.fakes.raylet_refuse, "refused by the test")
        return node_manager_pb2.GetResourceLoadReply(resources=self.fakes.head_load)


@dataclass
class Served:
    fakes: Fakes
    gcs_address: str


@pytest_asyncio.fixture
async def served() -> AsyncIterator[Served]:
    """A fake GCS and a fake head raylet, each on its own port of 127.0.0.1."""
    fakes = Fakes()
    gcs, raylet = aio.server(), aio.server()
    autoscaler_pb2_grpc.add_AutoscalerStateServiceServicer_to_server(Autoscaler(fakes), gcs)
    gcs_service_pb2_grpc.add_NodeResourceInfoGcsServiceServicer_to_server(Usage(fakes), gcs)
    gcs_service_pb2_grpc.add_NodeInfoGcsServiceServicer_to_server(Nodes(fakes), gcs)
    node_manager_pb2_grpc.add_NodeManagerServiceServicer_to_server(Raylet(fakes), raylet)
    port = gcs.add_insecure_port("127.0.0.1:0")
    fakes.raylet_port = raylet.add_insecure_port("127.0.0.1:0")
    await gcs.start()
    await raylet.start()
    try:
        yield Served(fakes, f"127.0.0.1:{port}")
    finally:
        await gcs.stop(None)
        await raylet.stop(None)


def rpcs(fakes: Fakes) -> list[str]:
    return [rpc for rpc, _ in fakes.calls]


async def test_r1_takes_the_head_fresh_and_the_other_nodes_from_the_gcs(served: Served) -> None:
    """Snapshot first, then the GCS's node loads, then the head raylet (found once): the head's
    3 fresh tasks replace its 4 cached ones, the worker's own queue is added."""
    gcs = GcsConnection(served.gcs_address)
    reader = RayReader(gcs, SPEC, timeout_s=5)
    try:
        state = await reader.read()
        again = await reader.read()
    finally:
        await gcs.close()
    assert state.demand.bundles == (
        Bundle(Resources.of(CPU=1), 2),
        Bundle(Resources.of(CPU=5), 3),
    )
    assert state.fallback is None and again == state
    assert rpcs(served.fakes) == [
        "GetClusterStatus",
        "GetAllResourceUsage",
        "GetAllNodeInfo",
        "GetResourceLoad",
        "GetClusterStatus",
        "GetAllResourceUsage",
        "GetResourceLoad",
    ]


async def test_the_gcs_read_is_the_snapshots_sum_alone(served: Served) -> None:
    gcs = GcsConnection(served.gcs_address)
    try:
        state = await RayReader(gcs, SPEC, timeout_s=5, demand=DemandRead.GCS).read()
    finally:
        await gcs.close()
    assert state.demand.bundles == (Bundle(Resources.of(CPU=5), 4),)
    assert rpcs(served.fakes) == ["GetClusterStatus"]


@pytest.mark.parametrize(
    ("breaks", "reason", "message"),
    [
        ("raylet", Fallback.RAYLET, "GetResourceLoad failed (INTERNAL: refused by the test)"),
        ("slow", Fallback.RAYLET, "GetResourceLoad: no answer within 0.5s (DEADLINE_EXCEEDED)"),
        ("unknown", Fallback.RAYLET, f"GetAllNodeInfo: no alive node {HEAD}"),
        ("usage", Fallback.NODE_LOADS, "GetAllResourceUsage: GCS unavailable (UNAVAILABLE"),
    ],
)
async def test_a_failed_r1_read_falls_back_to_the_gcs_sum_and_is_counted(
    served: Served, breaks: str, reason: Fallback, message: str
) -> None:
    """The poll succeeds with Ray's own sum; the loop counts the fallback by reason; the next
    poll looks the raylet up again."""
    fakes = served.fakes
    fakes.raylet_refuse = grpc.StatusCode.INTERNAL if breaks == "raylet" else None
    fakes.raylet_sleep_s = 5.0 if breaks == "slow" else 0.0
    fakes.known_node = breaks != "unknown"
    fakes.usage_refuse = grpc.StatusCode.UNAVAILABLE if breaks == "usage" else None
    gcs = GcsConnection(served.gcs_address)
    registry = CollectorRegistry()
    reader = RayReader(gcs, SPEC, timeout_s=0.5)
    loop = AgentLoop(
        SPEC,
        reader,
        SnapshotCollector(registry),
        AgentMetrics(registry, "demo"),
        SystemClock(),
        LoopSettings(scale_down=False, use_window_s=0),
    )
    try:
        state = await reader.read()
        snapshot = await loop.poll_once()
    finally:
        await gcs.close()
    assert state.fallback is reason
    assert message in state.fallback_error
    assert state.demand.bundles == (Bundle(Resources.of(CPU=5), 4),)
    assert snapshot.success
    assert snapshot.input.demand.bundles == (Bundle(Resources.of(CPU=5), 4),)
    labels = {"cluster": "demo", "reason": reason.value}
    assert registry.get_sample_value(DEMAND_FALLBACKS, labels) == 1.0
    if breaks in ("raylet", "slow"):
        assert rpcs(fakes).count("GetAllNodeInfo") == 2  # looked up again after the failure


async def test_no_head_in_the_snapshot_is_a_fallback_without_any_further_call(
    served: Served,
) -> None:
    gcs = GcsConnection(served.gcs_address)
    reader = RayReader(gcs, SPEC, timeout_s=5)
    try:
        reply = status()
        del reply.cluster_resource_state.node_states[0]
        read = await read_task_load(gcs.get(), HeadRaylet(), reply, 5.0)
    finally:
        await gcs.close()
    assert read.queued is None and read.fallback is Fallback.NO_HEAD
    assert rpcs(served.fakes) == []
    assert reader.demand is DemandRead.EXACT


async def test_the_raylet_call_carries_the_token_and_a_failure_names_the_raylet(
    served: Served,
) -> None:
    address = RayletAddress(HEAD, "127.0.0.1", served.fakes.raylet_port)
    client = RayletClient(address, token=TOKEN)
    try:
        data = await client.get_resource_load(timeout_s=5)
        served.fakes.raylet_refuse = grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(RayError) as caught:
            await client.get_resource_load(timeout_s=5)
    finally:
        await client.close()
    assert data == served.fakes.head_load
    assert [md.get("authorization") for _, md in served.fakes.calls] == [f"Bearer {TOKEN}"] * 2
    assert str(caught.value).startswith(
        f"raylet {address.target}: GetResourceLoad: Ray token authentication failed, "
        "the token sent was refused"
    )


async def test_a_raylet_that_is_not_listening_fails_at_once_naming_it() -> None:
    address = RayletAddress(HEAD, "127.0.0.1", free_port())
    client = RayletClient(address)
    started = time.monotonic()
    try:
        with pytest.raises(RayError, match=rf"^raylet 127.0.0.1:{address.port}: GetResourceLoad: "):
            await client.get_resource_load(timeout_s=5)
    finally:
        await client.close()
    assert time.monotonic() - started < 4.0


async def test_the_node_info_lookup_picks_the_node_asked_among_all(served: Served) -> None:
    client = GcsClient(served.gcs_address)
    try:
        info = await client.get_node_info(HEAD, timeout_s=5)
        served.fakes.known_node = False
        none = await client.get_node_info(HEAD, timeout_s=5)
    finally:
        await client.close()
    assert info is not None and info.node_manager_port == served.fakes.raylet_port
    assert none is None


def test_an_ipv6_raylet_address_is_bracketed() -> None:
    assert RayletAddress(HEAD, "fd00::1", 4321).target == "[fd00::1]:4321"
    assert RayletAddress(HEAD, "10.0.0.1", 4321).target == "10.0.0.1:4321"
