"""What one agent poll, one look between polls and one ``/metrics`` render cost at 10, 100 and
1,000 nodes, when Ray's answer is unchanged and when it changed (issue 39).

The agent polls as it runs (``AgentLoop.poll_once`` with its ``RayReader`` and ``GcsClient``,
export only: no scale-down step) against a GCS stand-in in another process that answers
``GetClusterStatus`` from a list of replies, one per call, as Ray's GCS would over consecutive
polls (:func:`answers`):

- **unchanged**: the same cluster each call, but what Ray changes at every call anyway: its
  ``cluster_resource_state_version`` and each node's ``node_state_version`` count up, and every
  idle node's ``idle_duration_ms`` grows with the agent's clock
  (``gcs_autoscaler_state_manager.cc`` adds the time since the node's last report): the
  stand-in sets it at each call from the time the bench's clock shows
  (:func:`~bench.agent_answers.idle_ms`), give or take 0.3 s of report timing. A second
  variant, **unchanged, no idle**, has every node busy, so only the counters move.
- **changed**: each call also moves the demand (every task shape's count) and a tenth of the
  nodes between busy and idle.

Demand is the GCS's sum (``--demand-read gcs``): the bench's earlier "one poll", as issue 39
quoted it; rule R1's two calls more are ``bench.agent_bench``'s. After each poll one scrape is
rendered as Prometheus asks it (OpenMetrics), plain and gzipped, by the app the agent serves and
by ``prometheus_client``'s own app on the same registry (what the agent served before); then
the looks until the next poll (``StatusWatch.look``, what the agent does every
``--watch-interval``: the call and the steady part of its bytes against the poll's), each
reading the next answer.
Printed: CPU (``time.process_time``, this process only: the stand-in's is not counted) and, for
the poll, wall milliseconds; medians of the repeats; and what an unchanged cluster costs per
``--interval`` of 5 s: one poll and a look every 0.5 s between.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from multiprocessing.queues import Queue
from typing import Any

from bench.agent_answers import INTERVAL_MS, answers, idle_ms
from bench.agent_bench import HEAD_ID
from bench.agent_look import HEAD_SHAPES, LOOKS_PER_INTERVAL, looked, r1_watch
from bench.agent_scrape import scrape, timed

SIZES = (10, 100, 1_000)
REPEATS = 15


def serve_answers(replies: Sequence[bytes], ports: Queue[int], clock: Any = None) -> None:
    """In a process of its own: a GCS stand-in on 127.0.0.1 answering ``GetClusterStatus`` with
    ``replies`` in turn (cycling), each idle node's idle time as :func:`idle_ms` says at the time
    ``clock`` (a shared ``multiprocessing.Value``) shows; ``InternalKVGet`` with "not found";
    also the head's raylet (``GetAllNodeInfo`` names it, ``GetResourceLoad`` answers
    :data:`HEAD_SHAPES` shapes)."""
    import threading
    from concurrent import futures

    import grpc

    from bench.agent_bench import synthetic_head_load
    from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
    from keda_ray_scaler.gcs._generated import gcs_pb2
    from keda_ray_scaler.gcs._generated import gcs_service_pb2 as gs

    parsed = [pb.GetClusterStatusReply.FromString(r) for r in replies]
    first: list[float] = []
    lock = threading.Lock()

    head_load = synthetic_head_load(HEAD_SHAPES)
    calls = iter(range(1 << 62))
    not_found = gs.InternalKVGetReply(status=gs.GcsStatus(code=17)).SerializeToString()
    cluster_id = gs.GetClusterIdReply(cluster_id=b"\x01" * 28).SerializeToString()
    port: list[int] = []  # the stand-in's own: it is the head's raylet too

    def status(_request: bytes, _context: Any) -> bytes:
        call = next(calls)
        if clock is None:
            return replies[call % len(replies)]
        with lock:
            if not first:
                first.append(clock.value)
            elapsed = clock.value - first[0]
            reply = parsed[call % len(parsed)]
            for i, ns in enumerate(reply.cluster_resource_state.node_states):
                if ns.idle_duration_ms:
                    ns.idle_duration_ms = idle_ms(i, elapsed, call)
            return reply.SerializeToString()

    def head(_request: bytes, _context: Any) -> bytes:
        info = gcs_pb2.GcsNodeInfo(
            node_id=HEAD_ID, node_manager_address="127.0.0.1", node_manager_port=port[0]
        )
        return gs.GetAllNodeInfoReply(node_info_list=[info]).SerializeToString()

    def handlers(service: str, methods: dict[str, Callable[[bytes, Any], bytes]]) -> Any:
        rpcs = {name: grpc.unary_unary_rpc_method_handler(fn) for name, fn in methods.items()}
        return grpc.method_handlers_generic_handler(service, rpcs)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers(
        (
            handlers("ray.rpc.autoscaler.AutoscalerStateService", {"GetClusterStatus": status}),
            handlers(
                "ray.rpc.NodeInfoGcsService",
                {"GetClusterId": lambda _r, _c: cluster_id, "GetAllNodeInfo": head},
            ),
            handlers("ray.rpc.InternalKVGcsService", {"InternalKVGet": lambda _r, _c: not_found}),
            handlers("ray.rpc.NodeManagerService", {"GetResourceLoad": lambda _r, _c: head_load}),
        )
    )
    port.append(server.add_insecure_port("127.0.0.1:0"))
    ports.put(port[0])
    server.start()
    server.wait_for_termination()


def spec_of() -> Any:
    """The three worker groups of the synthetic replies."""
    from keda_ray_scaler.model import ClusterSpec, Resources, WorkerGroup

    return ClusterSpec(
        "bench",
        (
            WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=2000),
            WorkerGroup("gpu", Resources.of(CPU=8, GPU=1), max_replicas=2000),
            WorkerGroup("mem", Resources.of(CPU=4), max_replicas=2000),
        ),
    )


class PollClock:
    """The agent's clock, moved on by the bench one ``--interval`` a poll (the polls run back to
    back, but the demand filter's window must hold the polls it holds at 5 s)."""

    def __init__(self) -> None:
        self.t = time.time()

    def now(self) -> float:
        return self.t

    async def sleep(self, s: float) -> None:
        self.t += s


#: What is measured after each poll: the agent's /metrics, plain and gzipped, and
#: prometheus_client's own app on the same registry (what the agent served before issue 39).
SCRAPES = ("render", "render_gz", "before", "before_gz")


async def _polls(address: str, polls: int, shown: Any) -> dict[str, list[float]]:
    """CPU (and wall) ms of each poll and of the scrapes after it (the first poll left out);
    ``shown``: where the stand-in reads the clock's time."""
    from prometheus_client import CollectorRegistry

    from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
    from keda_ray_scaler.agent.http.metrics_server import metrics_app
    from keda_ray_scaler.agent.loop import AgentLoop, LoopSettings
    from keda_ray_scaler.agent.ray.ray_state import DemandRead, RayReader
    from keda_ray_scaler.agent.ray.status_watch import Look, StatusWatch
    from keda_ray_scaler.gcs.client import GcsConnection
    from keda_ray_scaler.gcs.raylet import HeadRaylet

    spec = spec_of()
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry)
    gcs = GcsConnection(address)
    raylet = HeadRaylet()
    clock = PollClock()
    reader = RayReader(gcs, spec, demand=DemandRead.GCS, raylet=raylet, now=clock.now)
    gcs_only = StatusWatch(gcs, lambda: reader.seen, raylet, every_s=0.5, timeout_s=5.0)
    watch = await r1_watch(gcs, reader, raylet)
    settings = LoopSettings(scale_down=False)
    loop = AgentLoop(spec, reader, collector, AgentMetrics(registry, "bench"), clock, settings)
    ours, before = metrics_app(registry, collector), metrics_app(registry)
    apps = dict(zip(SCRAPES, (ours, ours, before, before), strict=True))
    names = ("poll", "poll_wall", "look", "gcs_look", *SCRAPES)
    out: dict[str, list[float]] = {name: [] for name in names}
    for k in range(polls + 1):
        clock.t += INTERVAL_MS / 1000
        shown.value = clock.t
        cpu, wall = time.process_time(), time.perf_counter()
        snapshot = await loop.poll_once()
        poll = ((time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000)
        assert snapshot.success, "the stand-in's answer was not read"
        scrapes = {
            name: timed(partial(scrape, app, name.endswith("_gz"))) for name, app in apps.items()
        }
        looks, gcs_looks = await looked(watch), await looked(gcs_only)
        if k:  # the first poll starts every cache
            out["poll"].append(poll[0])
            out["poll_wall"].append(poll[1])
            out["look"].extend(looks)
            out["gcs_look"].extend(gcs_looks)
            for name, (spent, _) in scrapes.items():
                out[name].append(spent)
    held = gcs.held()
    if held is not None:
        await held.close()
    out["same"] = [float(watch.seen[Look.SAME])]
    return out


def measure(replies: Sequence[bytes], polls: int = REPEATS) -> dict[str, float]:
    """Median figures of ``polls`` polls against a stand-in answering ``replies``."""
    context = multiprocessing.get_context("spawn")
    ports: Queue[int] = context.Queue()
    shown = context.Value("d", 0.0)
    server = context.Process(target=serve_answers, args=(replies, ports, shown), daemon=True)
    server.start()
    try:
        address = f"127.0.0.1:{ports.get(timeout=60)}"
        times = asyncio.run(_polls(address, polls, shown))
        return {name: statistics.median(values) for name, values in times.items()}
    finally:
        server.terminate()
        server.join(timeout=10)


def main() -> None:
    """Measure and print the poll and render costs (module doc)."""
    from keda_ray_scaler.telemetry import configure_logging

    configure_logging(json=True, level="info")  # as the agent runs: debug lines filtered
    print(f"one poll, one /metrics render, one look, ms (median of {REPEATS}):")
    print(
        f"{'nodes':>6} {'answer':<18} {'poll CPU':>9} {'wall':>6} | {'render CPU':>10} "
        f"{'gzip':>6} | {'before: render':>14} {'gzip':>6} | {'look CPU':>8} {'same':>4} "
        f"{'gcs only':>8}"
    )
    idle: list[str] = []
    costs: list[str] = []
    looks = (REPEATS + 1) * LOOKS_PER_INTERVAL
    for nodes in SIZES:
        cases = (
            ("unchanged", answers(nodes, REPEATS + 1, changed=False)),
            ("unchanged, no idle", answers(nodes, REPEATS + 1, changed=False, idle=False)),
            ("changed", answers(nodes, REPEATS + 1, changed=True)),
        )
        for label, replies in cases:
            f = measure(replies)
            print(
                f"{nodes:>6} {label:<18} {f['poll']:9.2f} {f['poll_wall']:6.2f} | "
                f"{f['render']:10.2f} {f['render_gz']:6.2f} | "
                f"{f['before']:14.2f} {f['before_gz']:6.2f} | {f['look']:8.2f} {f['same']:4.0f} "
                f"{f['gcs_look']:8.2f}",
                flush=True,
            )
            if label == "unchanged":
                per = f["poll"] + LOOKS_PER_INTERVAL * f["look"]
                idle.append(f"{nodes:>6} nodes: {per:.1f} ms CPU per 5 s")
                costs.append(f"{nodes:>6} nodes: idle poll {f['poll']:.2f}")
            elif label == "changed":
                both = f["poll"] + f["render_gz"]
                costs[-1] += (
                    f", changed poll + render {f['poll']:.2f} + {f['render_gz']:.2f} = {both:.2f}"
                )
    print("before: prometheus_client's own app on the same registry (the agent's /metrics before")
    print("  it served the snapshot as written); look: rule R1's (the head raylet's queue, then")
    print(f"  the GCS's reply), same: of its {looks} looks, those that saw no change; gcs only:")
    print("  the look with --demand-read gcs (no raylet read)")
    print(f"an unchanged cluster, one poll and {LOOKS_PER_INTERVAL} looks per --interval:")
    print("\n".join(idle))
    print("ms CPU of the idle poll (the --interval floor when nothing changed but idle times)")
    print("  and of a changed poll with the scrape after it (gzipped, as Prometheus asks):")
    print("\n".join(costs))


if __name__ == "__main__":
    main()
