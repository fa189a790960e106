"""Cost of one agent poll at 1,000 worker nodes and 200 demand shapes (issue 3).

The GCS reply is synthetic but real: a ``GetClusterStatusReply`` protobuf, serialized and parsed
back as the agent does. The call itself is measured against a gRPC server in another process that
answers ``AutoscalerStateService/GetClusterStatus`` with those bytes (and
``NodeInfoGcsService/GetClusterId``, which Ray's own client asks first): the agent's
``grpc.aio`` client, and beside it Ray's ``ray._raylet.GcsClient`` (the agent's client before
issue 15) when Ray is installed. Only this process's CPU is counted, so the server's is not.
Rule R1's two calls more (``docs/concepts/demand.md``) are measured the same way: the GCS's
``NodeResourceInfoGcsService/GetAllResourceUsage`` (one ``ResourcesData`` per node, a quarter
of them with a queue of their own) and the head raylet's ``NodeManagerService/GetResourceLoad``
(the head's queue: every task shape), served by the same stand-in, then combined.
Printed: CPU time (``time.process_time``, one core) per step and in all, median of repeats, and
the size of the ``/metrics`` body.
"""

from __future__ import annotations

import asyncio
import importlib.util
import multiprocessing
import statistics
import time
from collections.abc import Callable
from multiprocessing.queues import Queue
from typing import Any

NODES = 1_000
SHAPES = 200
PLACEMENT_GROUPS = 20
REPEATS = 15
HEAD_ID = b"\xff" * 28


def synthetic_reply(nodes: int = NODES, shapes: int = SHAPES) -> bytes:
    """A serialized reply: ``nodes`` workers in 3 groups, ``shapes`` task shapes, some PGs."""
    from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb

    groups = [("cpu", {"CPU": 10.0}), ("gpu", {"CPU": 8.0, "GPU": 1.0}), ("mem", {"CPU": 4.0})]
    states = []
    for i in range(nodes):
        group, res = groups[i % len(groups)]
        ip = f"10.{i // 65536}.{(i // 256) % 256}.{i % 256}"
        total = {**res, "memory": 34359738368.0, "object_store_memory": 10737418240.0}
        total[f"node:{ip}"] = 1.0
        busy = i % 4 == 0
        available = {**total, "CPU": 0.0} if busy else total
        states.append(
            pb.NodeState(
                node_id=i.to_bytes(28, "big"),
                instance_id=f"ray-{group}-{i:05d}",
                ray_node_type_name=group,
                node_ip_address=ip,
                status=pb.RUNNING if busy else pb.IDLE,
                idle_duration_ms=0 if busy else 1000 * i,
                total_resources=total,
                available_resources=available,
            )
        )
    requests = [
        pb.ResourceRequestByCount(
            request=pb.ResourceRequest(
                resources_bundle={"CPU": 1.0 + (k % 8), "memory": float(2**30 * (1 + k))}
            ),
            count=1 + k,
        )
        for k in range(shapes - PLACEMENT_GROUPS)
    ]
    gangs = [
        pb.GangResourceRequest(
            requests=[pb.ResourceRequest(resources_bundle={"CPU": 2.0 + j}) for _ in range(4)],
            details=f"{j:036x}:STRICT_SPREAD|PENDING",
        )
        for j in range(PLACEMENT_GROUPS)
    ]
    state = pb.ClusterResourceState(
        node_states=states, pending_resource_requests=requests, pending_gang_resource_requests=gangs
    )
    reply: bytes = pb.GetClusterStatusReply(cluster_resource_state=state).SerializeToString()
    return reply


def synthetic_usage(nodes: int = NODES) -> bytes:
    """A serialized ``GetAllResourceUsageReply``: the head and ``nodes`` workers as the GCS
    keeps them (resources, labels-free), every fourth worker with 2 queued shapes of its own."""
    from keda_ray_scaler.gcs._generated import gcs_service_pb2

    reply = gcs_service_pb2.GetAllResourceUsageReply()
    batch = reply.resource_usage_data.batch
    batch.add(node_id=HEAD_ID, node_manager_address="10.255.0.1")
    for i in range(nodes):
        ip = f"10.{i // 65536}.{(i // 256) % 256}.{i % 256}"
        total = {"CPU": 10.0, "memory": 34359738368.0, "object_store_memory": 10737418240.0}
        data = batch.add(
            node_id=i.to_bytes(28, "big"),
            node_manager_address=ip,
            resources_total=total,
            resources_available=total,
        )
        for k in range(2 if i % 4 == 0 else 0):
            entry = data.resource_load_by_shape.resource_demands.add(backlog_size=1 + k)
            entry.shape.update({"CPU": 1.0 + k})
    raw: bytes = reply.SerializeToString()
    return raw


def synthetic_head_load(shapes: int = SHAPES - PLACEMENT_GROUPS) -> bytes:
    """A serialized ``GetResourceLoadReply`` of the head raylet: ``shapes`` queued shapes."""
    from keda_ray_scaler.gcs._generated import node_manager_pb2

    reply = node_manager_pb2.GetResourceLoadReply()
    reply.resources.node_id = HEAD_ID
    for k in range(shapes):
        entry = reply.resources.resource_load_by_shape.resource_demands.add(
            num_ready_requests_queued=1, backlog_size=k
        )
        entry.shape.update({"CPU": 1.0 + (k % 8), "memory": float(2**30 * (1 + k))})
    raw: bytes = reply.SerializeToString()
    return raw


def raycluster(groups: int = 3) -> dict[str, Any]:
    """A RayCluster as the API serves it: ``groups`` worker groups, sized as the bench's."""
    specs = []
    for i in range(groups):
        container = {"name": "ray-worker", "resources": {"limits": {"cpu": "10", "memory": "32Gi"}}}
        specs.append(
            {
                "groupName": f"g{i}",
                "replicas": 0,
                "minReplicas": 0,
                "maxReplicas": 2000,
                "idleTimeoutSeconds": 60,
                "rayStartParams": {},
                "template": {"spec": {"containers": [container]}},
            }
        )
    return {
        "metadata": {"name": "bench", "namespace": "ray", "resourceVersion": "1"},
        "spec": {"enableInTreeAutoscaling": False, "workerGroupSpecs": specs},
    }


def cpu_ms(fn: Callable[[], Any], repeats: int = REPEATS) -> tuple[float, Any]:
    """Median CPU milliseconds of ``fn()`` over ``repeats`` runs, and its last result."""
    times, result = [], None
    for _ in range(repeats):
        started = time.process_time()
        result = fn()
        times.append((time.process_time() - started) * 1000)
    return statistics.median(times), result


def serve_reply(raw: bytes, ports: Queue[int], usage: bytes = b"", load: bytes = b"") -> None:
    """In a process of its own: a GCS stand-in on 127.0.0.1 answering ``raw`` (bytes as is),
    and ``usage`` to ``GetAllResourceUsage``, ``load`` to the raylet's ``GetResourceLoad``."""
    from concurrent import futures

    import grpc

    from keda_ray_scaler.gcs._generated.gcs_service_pb2 import GetClusterIdReply

    cluster_id = GetClusterIdReply(cluster_id=b"\x01" * 28).SerializeToString()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "ray.rpc.autoscaler.AutoscalerStateService",
                {"GetClusterStatus": grpc.unary_unary_rpc_method_handler(lambda _r, _c: raw)},
            ),
            grpc.method_handlers_generic_handler(
                "ray.rpc.NodeInfoGcsService",
                {"GetClusterId": grpc.unary_unary_rpc_method_handler(lambda _r, _c: cluster_id)},
            ),
            grpc.method_handlers_generic_handler(
                "ray.rpc.NodeResourceInfoGcsService",
                {"GetAllResourceUsage": grpc.unary_unary_rpc_method_handler(lambda _r, _c: usage)},
            ),
            grpc.method_handlers_generic_handler(
                "ray.rpc.NodeManagerService",
                {"GetResourceLoad": grpc.unary_unary_rpc_method_handler(lambda _r, _c: load)},
            ),
        )
    )
    ports.put(server.add_insecure_port("127.0.0.1:0"))
    server.start()
    server.wait_for_termination()


async def _agent_calls(address: str, repeats: int) -> list[float]:
    from keda_ray_scaler.gcs.client import GcsClient

    client = GcsClient(address)
    await client.get_cluster_status(timeout_s=10.0)  # connect outside the measure
    times = []
    for _ in range(repeats):
        started = time.process_time()
        await client.get_cluster_status(timeout_s=10.0)
        times.append((time.process_time() - started) * 1000)
    await client.close()
    return times


async def _r1_calls(address: str, repeats: int) -> tuple[list[float], list[float]]:
    """Client CPU ms of R1's two calls: ``GetAllResourceUsage`` and ``GetResourceLoad``."""
    from keda_ray_scaler.gcs.client import GcsClient
    from keda_ray_scaler.gcs.raylet import RayletAddress, RayletClient

    gcs = GcsClient(address)
    host, _, port = address.rpartition(":")
    raylet = RayletClient(RayletAddress("ff" * 28, host, int(port)))
    await gcs.get_all_resource_usage(timeout_s=10.0)  # connect outside the measure
    await raylet.get_resource_load(timeout_s=10.0)
    usage, load = [], []
    for _ in range(repeats):
        started = time.process_time()
        await gcs.get_all_resource_usage(timeout_s=10.0)
        usage.append((time.process_time() - started) * 1000)
        started = time.process_time()
        await raylet.get_resource_load(timeout_s=10.0)
        load.append((time.process_time() - started) * 1000)
    await gcs.close()
    await raylet.close()
    return usage, load


def _ray_calls(address: str, repeats: int) -> list[float]:
    from ray._raylet import GcsClient  # the agent's client before issue 15

    client = GcsClient(address=address)
    client.get_cluster_status(10)
    times = []
    for _ in range(repeats):
        started = time.process_time()
        client.get_cluster_status(10)
        times.append((time.process_time() - started) * 1000)
    return times


def call_cpu_ms(
    raw: bytes, usage: bytes, load: bytes, repeats: int = REPEATS
) -> tuple[float, float | None, float, float]:
    """Median client CPU ms of one ``GetClusterStatus`` answered ``raw``: the agent's client,
    and Ray's (None without Ray); then of R1's ``GetAllResourceUsage`` (``usage``) and
    ``GetResourceLoad`` (``load``) with the agent's clients."""
    context = multiprocessing.get_context("spawn")
    ports: Queue[int] = context.Queue()
    server = context.Process(target=serve_reply, args=(raw, ports, usage, load), daemon=True)
    server.start()
    try:
        address = f"127.0.0.1:{ports.get(timeout=60)}"
        ours = statistics.median(asyncio.run(_agent_calls(address, repeats)))
        rays = None
        if importlib.util.find_spec("ray") is not None:
            rays = statistics.median(_ray_calls(address, repeats))
        t_usage, t_load = asyncio.run(_r1_calls(address, repeats))
        return ours, rays, statistics.median(t_usage), statistics.median(t_load)
    finally:
        server.terminate()
        server.join(timeout=10)


def main() -> None:
    """Measure and print one poll's cost."""
    from prometheus_client import CollectorRegistry, generate_latest

    from keda_ray_scaler import schema
    from keda_ray_scaler.agent.http.exporter import SnapshotCollector
    from keda_ray_scaler.agent.http.series_memo import forget_series
    from keda_ray_scaler.agent.joining.pod_view import complete_nodes
    from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec
    from keda_ray_scaler.agent.ray.demand_filter import double_counted, poll_of, without
    from keda_ray_scaler.agent.ray.ray_status import parse_status
    from keda_ray_scaler.agent.ray.shape_bound import bound_shapes
    from keda_ray_scaler.agent.ray.task_load import node_load, task_load
    from keda_ray_scaler.gcs._generated.autoscaler_pb2 import GetClusterStatusReply
    from keda_ray_scaler.gcs._generated.gcs_service_pb2 import GetAllResourceUsageReply
    from keda_ray_scaler.gcs._generated.node_manager_pb2 import GetResourceLoadReply
    from keda_ray_scaler.model import ClusterSpec, PlanningInput, Resources, WorkerGroup

    spec = ClusterSpec(
        "bench",
        (
            WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=2000),
            WorkerGroup("gpu", Resources.of(CPU=8, GPU=1), max_replicas=2000),
            WorkerGroup("mem", Resources.of(CPU=4), max_replicas=2000),
        ),
    )
    raw = synthetic_reply()

    def wire_of(data: bytes) -> Any:
        reply = GetClusterStatusReply()
        reply.ParseFromString(data)
        return reply

    def wire() -> Any:
        return wire_of(raw)

    t_wire, reply = cpu_ms(wire)
    t_parse, state = cpu_ms(lambda: parse_status(reply, spec))
    t_bound, (demand, merged) = cpu_ms(lambda: bound_shapes(state.demand, SHAPES))
    t_nodes, nodes = cpu_ms(lambda: complete_nodes(spec, state.nodes, {}, None))
    # The double-count filter at the 5 s default interval (10 s window: 2 earlier polls): every
    # pod idle in both (every busy pod's use new: worst case), or all as now (steady).
    idle = [poll_of(float(t), (), demand) for t in (0, 5)]
    steady = [poll_of(float(t), nodes, demand) for t in (0, 5)]

    def filtered(earlier: list[Any]) -> Any:
        return without(demand, double_counted(earlier, poll_of(10.0, nodes, demand)))

    t_risen, _ = cpu_ms(lambda: filtered(idle))
    t_steady, _ = cpu_ms(lambda: filtered(steady))
    busy = sum(1 for n in nodes if n.available != n.total)
    snapshot = schema.ClusterSnapshot(PlanningInput(spec, demand, nodes), time.time(), True)
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(snapshot)

    # Cold: a collector of its own each time, nothing kept (agent_poll_bench: kept, per poll),
    # not even the forms and node runs kept across snapshots (forget_series).
    cold = (forget_series, lambda: SnapshotCollector(CollectorRegistry()).publish(snapshot))
    t_encode, _ = cpu_ms(lambda: [step() for step in cold])
    t_render, body = cpu_ms(lambda: generate_latest(registry))
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    demand_series = len(demand.bundles) + len(demand.constraints) + len(demand.placement_groups)
    big = parse_status(wire_of(synthetic_reply(nodes=0, shapes=1_000 + PLACEMENT_GROUPS)), spec)
    t_overflow, (_, overflow_merged) = cpu_ms(lambda: bound_shapes(big.demand, SHAPES))
    raw_usage, raw_load = synthetic_usage(), synthetic_head_load()
    usage_reply = GetAllResourceUsageReply.FromString(raw_usage)
    load_reply = GetResourceLoadReply.FromString(raw_load)

    def r1_combine() -> Any:
        cached = [node_load(r) for r in usage_reply.resource_usage_data.batch]
        return task_load([node_load(load_reply.resources)], cached)

    t_r1_wire, _ = cpu_ms(lambda: GetAllResourceUsageReply.FromString(raw_usage))
    t_r1_combine, queued = cpu_ms(r1_combine)
    t_call, t_ray_call, t_usage_call, t_load_call = call_cpu_ms(raw, raw_usage, raw_load)
    # KubeRay mode: a RayCluster version read into worker groups, once per change (the watch),
    # not per poll; the poll itself reads the latest spec (one attribute).
    rc = raycluster()
    t_rc, _ = cpu_ms(lambda: cluster_spec(rc))
    total = t_call + t_wire + t_parse + t_bound + t_nodes + t_risen + t_encode
    print(f"reply: {len(raw) / 1024:.0f} KiB protobuf, {NODES} nodes, {demand_series} shapes")
    print(f"  GCS call (grpc.aio)  {t_call:8.2f} ms CPU  (client side, server in its own process)")
    if t_ray_call is not None:
        print(f"    Ray's GcsClient    {t_ray_call:8.2f} ms CPU  (same server: the client before)")
    print(f"  protobuf parse       {t_wire:8.2f} ms CPU")
    print(f"  state -> model       {t_parse:8.2f} ms CPU")
    print(f"  bound shapes         {t_bound:8.2f} ms CPU  (merged {merged})")
    print(f"  complete nodes       {t_nodes:8.2f} ms CPU")
    print(f"  double count, rises  {t_risen:8.2f} ms CPU  ({busy} busy nodes, 2 earlier polls)")
    print(f"  double count, steady {t_steady:8.2f} ms CPU")
    print(f"  encode snapshot      {t_encode:8.2f} ms CPU")
    print(f"one poll, call -> metrics: {total:.1f} ms CPU (median of {REPEATS})")
    r1_total = t_usage_call + t_load_call + t_r1_wire + t_r1_combine
    print(
        f"rule R1 (--demand-read exact), more per poll: {r1_total:.1f} ms CPU, "
        f"{(len(raw_usage) + len(raw_load)) / 1024:.0f} KiB"
    )
    print(
        f"  GetAllResourceUsage  {t_usage_call:8.2f} ms CPU  "
        f"({len(raw_usage) / 1024:.0f} KiB, {NODES + 1} nodes)"
    )
    print(f"    protobuf parse     {t_r1_wire:8.2f} ms CPU")
    print(
        f"  head GetResourceLoad {t_load_call:8.2f} ms CPU  "
        f"({len(raw_load) / 1024:.0f} KiB, {SHAPES - PLACEMENT_GROUPS} shapes)"
    )
    print(
        f"  loads -> task demand {t_r1_combine:8.2f} ms CPU  ({len(queued)} task shapes; "
        "replaces S's, state -> model unchanged)"
    )
    print(f"one scrape, prometheus_client's render: {t_render:.1f} ms CPU (the agent's own")
    print("  /metrics writes what changed only: bench.agent_poll_bench)")
    print(f"/metrics body: {len(body) / 1024:.0f} KiB, {series} series")
    print(f"RayCluster change -> worker groups: {t_rc:.3f} ms CPU (per change, not per poll)")
    print(f"overflow: 1,020 shapes bounded to {SHAPES} in {t_overflow:.2f} ms CPU")
    print(f"  ({overflow_merged} series merged into one)")


if __name__ == "__main__":
    main()
