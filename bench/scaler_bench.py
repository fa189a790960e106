"""Scaler load: many ScaledObjects calling the KEDA pattern over real loopback gRPC.

One scaler server runs in its own process with an in-memory source holding 100 Ray clusters of
10 worker groups each (1,000 ScaledObjects). The load generator runs in this process:

1. throughput: GetMetrics from a fixed number of concurrent callers, as fast as the server
   answers (RPS, p50/p99);
2. KEDA pattern at a fixed rate: every ScaledObject calls GetMetricSpec, GetMetrics and
   IsActive in turn, spread evenly (open loop, so latency is not queueing of our own making);
   p50/p99 per method;
3. source queries: fetches per refresh round, per cluster; the target is exactly one query set
   per cluster per interval, whatever the number of ScaledObjects.

Targets on a 2-core machine: >= 2,000 GetMetrics/s with p99 <= 10 ms; 1,000 ScaledObjects over
100 clusters with one query set per cluster per interval.
"""

from __future__ import annotations

import asyncio
import contextvars
import multiprocessing as mp
import os
import time
from multiprocessing.connection import Connection
from typing import Any

CLUSTERS = 100
GROUPS = 10
REFRESH_INTERVAL_S = 1.0
THROUGHPUT_CALLERS = 16
THROUGHPUT_S = 5.0
PATTERN_RATE_PER_S = 900  # RPCs/s in the KEDA-pattern phase: ~4x what 1,000 ScaledObjects
# make with KEDA defaults (3 RPCs per 30 s poll + HPA reads of GetMetricSpec/GetMetrics per 15 s)
PATTERN_S = 6.0
TARGET_RPS = 2_000
TARGET_P99_S = 0.010


def _snapshots(now: float) -> dict[str, Any]:
    from keda_ray_scaler.model import (
        Bundle,
        ClusterSpec,
        Demand,
        Resources,
        WorkerGroup,
        WorkerNode,
    )
    from keda_ray_scaler.model import PlanningInput as In
    from keda_ray_scaler.schema import ClusterSnapshot

    out = {}
    for c in range(CLUSTERS):
        groups = tuple(
            WorkerGroup(f"g{g}", Resources.of(CPU=4 * (g + 1)), 0, 100) for g in range(GROUPS)
        )
        nodes = tuple(
            WorkerNode(f"c{c}-g{g}-{i}", f"g{g}", groups[g].resources, groups[g].resources)
            for g in range(GROUPS)
            for i in range(g % 3)
        )
        demand = Demand(bundles=(Bundle(Resources.of(CPU=2), 10 + c % 7),))
        name = f"ray-{c}"
        out[name] = ClusterSnapshot(
            In(ClusterSpec(name, groups, upscaling_speed=1000), demand, nodes), now, True
        )
    return out


def _serve(conn: Connection) -> None:
    """The server process: serve until told to stop, then report source counts."""
    from keda_ray_scaler.rpc.server import build_server
    from keda_ray_scaler.rpc.targets import TargetSettings
    from keda_ray_scaler.sources.base import MemorySource

    in_round: contextvars.ContextVar[bool] = contextvars.ContextVar("in_round", default=False)

    class FreshSource(MemorySource):
        """Snapshots re-stamped with the current time at every fetch (an agent that is up).

        Counts fetches made by refresh rounds apart from those requests trigger (a task
        inherits the context it was created in, so the flag tells them apart exactly).
        """

        by_requests = 0
        by_rounds = 0

        async def fetch(self, cluster: str) -> Any:
            from dataclasses import replace

            if in_round.get():
                self.by_rounds += 1
            else:
                self.by_requests += 1
            snap = await super().fetch(cluster)
            return replace(snap, snapshot_time_s=time.time())

    async def main() -> None:
        source = FreshSource(_snapshots(time.time()))
        server = build_server(
            source,
            clock=time.time,
            target_settings=TargetSettings(refresh_interval_s=REFRESH_INTERVAL_S, max_age_s=30),
        )
        per_round: list[int] = []  # fetches made by each refresh round
        refresh = server.cache.refresh

        async def counted() -> None:
            before = source.by_rounds
            token = in_round.set(True)
            try:
                await refresh()
            finally:
                in_round.reset(token)
            per_round.append(source.by_rounds - before)

        server.cache.refresh = counted  # type: ignore[method-assign]  # count per round
        await server.start()
        conn.send(server.port)
        await asyncio.to_thread(conn.recv)  # "mark": the measured window starts
        mark = len(per_round)
        conn.send("ok")
        await asyncio.to_thread(conn.recv)  # "stop"
        conn.send(
            {
                "by_requests": source.by_requests,
                "window_rounds": per_round[mark:],
            }
        )
        await server.stop(grace_s=1)

    asyncio.run(main())


def _serve_bare(conn: Connection) -> None:
    """A server whose GetMetrics returns a constant: the transport's own ceiling here."""
    import grpc

    from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
    from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc

    answer = pb.GetMetricsResponse(metricValues=[pb.MetricValue(metricName="m", metricValue=1)])

    class Bare(pb_grpc.ExternalScalerServicer):  # type: ignore[misc]
        async def GetMetrics(self, request: Any, context: Any) -> Any:
            return answer

    async def main() -> None:
        server = grpc.aio.server()
        pb_grpc.add_ExternalScalerServicer_to_server(Bare(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        conn.send(port)
        await asyncio.to_thread(conn.recv)
        await server.stop(0)

    asyncio.run(main())


async def _throughput(call: Any, requests: list[Any]) -> tuple[float, list[float]]:
    """GetMetrics from THROUGHPUT_CALLERS concurrent callers for THROUGHPUT_S: RPS, latencies."""
    latencies: list[float] = []
    deadline = time.perf_counter() + THROUGHPUT_S

    async def caller(i: int) -> None:
        k = i
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            await call(requests[k % len(requests)])
            latencies.append(time.perf_counter() - t)
            k += THROUGHPUT_CALLERS

    started = time.perf_counter()
    await asyncio.gather(*(caller(i) for i in range(THROUGHPUT_CALLERS)))
    return len(latencies) / (time.perf_counter() - started), latencies


async def _bare_load(port: int) -> tuple[float, list[float]]:
    import grpc

    from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
    from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.ExternalScalerStub(channel)
        request = pb.GetMetricsRequest(
            scaledObjectRef=pb.ScaledObjectRef(
                scalerMetadata={"rayCluster": "ray-0", "workerGroup": "g0"}
            )
        )
        await stub.GetMetrics(request)
        return await _throughput(stub.GetMetrics, [request])


async def _handler_cost(calls: int = 20_000) -> float:
    """Seconds per GetMetrics inside the servicer, no transport: the scaler's own share."""
    from prometheus_client import CollectorRegistry

    from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
    from keda_ray_scaler.rpc.servicer import ExternalScalerServicer
    from keda_ray_scaler.rpc.targets import TargetCache
    from keda_ray_scaler.sources.base import MemorySource
    from keda_ray_scaler.telemetry import scaler_metrics

    metrics = scaler_metrics(CollectorRegistry())
    cache = TargetCache(MemorySource(_snapshots(time.time())), clock=time.time, metrics=metrics)
    servicer = ExternalScalerServicer(cache, metrics=metrics, clock=time.time)
    requests = [
        pb.GetMetricsRequest(
            scaledObjectRef=pb.ScaledObjectRef(
                scalerMetadata={"rayCluster": f"ray-{c}", "workerGroup": f"g{g}"}
            )
        )
        for c in range(CLUSTERS)
        for g in range(GROUPS)
    ]
    for r in requests:
        await servicer.GetMetrics(r, None)
    started = time.perf_counter()
    for n in range(calls):
        await servicer.GetMetrics(requests[n % len(requests)], None)
    return (time.perf_counter() - started) / calls


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _load(port: int, conn: Connection) -> dict[str, Any]:
    import grpc

    from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
    from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc

    refs = [
        pb.ScaledObjectRef(
            name=f"ray-{c}-g{g}",
            namespace="ray",
            scalerMetadata={"rayCluster": f"ray-{c}", "workerGroup": f"g{g}"},
        )
        for c in range(CLUSTERS)
        for g in range(GROUPS)
    ]
    requests = [pb.GetMetricsRequest(scaledObjectRef=r) for r in refs]
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    stub = pb_grpc.ExternalScalerStub(channel)
    # warm-up: every ScaledObject once, so every cluster is registered and planned
    await asyncio.gather(*(stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=r)) for r in refs))

    await asyncio.to_thread(conn.send, "mark")  # count source fetches from here to the end
    await asyncio.to_thread(conn.recv)

    # 1. throughput
    rps, latencies = await _throughput(stub.GetMetrics, requests)

    # 2. KEDA pattern, open loop
    by_method: dict[str, list[float]] = {"GetMetricSpec": [], "GetMetrics": [], "IsActive": []}
    late = 0

    errors: dict[str, int] = {}

    async def one(method: str, ref: Any) -> None:
        t = time.perf_counter()
        try:
            if method == "GetMetricSpec":
                await stub.GetMetricSpec(ref)
            elif method == "GetMetrics":
                await stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref))
            else:
                await stub.IsActive(ref)
        except grpc.aio.AioRpcError as exc:
            key = f"{method} {exc.code().name} {exc.details()}"
            errors[key] = errors.get(key, 0) + 1
            return
        by_method[method].append(time.perf_counter() - t)

    methods = list(by_method)
    total = int(PATTERN_RATE_PER_S * PATTERN_S)
    gap = 1.0 / PATTERN_RATE_PER_S
    tasks = []
    t0 = time.perf_counter()
    pattern_started = time.time()
    for n in range(total):
        due = t0 + n * gap
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.005:
            late += 1
        ref = refs[(n // 3) % len(refs)]
        tasks.append(asyncio.create_task(one(methods[n % 3], ref)))
    await asyncio.gather(*tasks)
    pattern_elapsed = time.time() - pattern_started
    await asyncio.to_thread(conn.send, "stop")
    counts = await asyncio.to_thread(conn.recv)
    await channel.close()
    return {
        "rps": rps,
        "p50": _pct(latencies, 0.5),
        "p99": _pct(latencies, 0.99),
        "pattern": by_method,
        "pattern_rps": total / pattern_elapsed,
        "late": late,
        "errors": errors,
        "counts": counts,
    }


def main() -> None:
    """Run the benchmark and print figures against the targets."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child,), daemon=True)
    proc.start()
    try:
        port = parent.recv()
        r = asyncio.run(_load(port, parent))
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve_bare, args=(child,), daemon=True)
    proc.start()
    try:
        bare_rps, bare = asyncio.run(_bare_load(parent.recv()))
        parent.send("stop")
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    handler_s = asyncio.run(_handler_cost())
    ms = 1000.0
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} (other work competes)")
    print(f"scaler: {CLUSTERS} Ray clusters x {GROUPS} groups = {CLUSTERS * GROUPS} ScaledObjects")
    ok = r["rps"] >= TARGET_RPS and r["p99"] <= TARGET_P99_S
    print(
        f"GetMetrics throughput ({THROUGHPUT_CALLERS} concurrent callers, {THROUGHPUT_S:.0f} s): "
        f"{r['rps']:,.0f} RPS, p50 {r['p50'] * ms:.2f} ms, p99 {r['p99'] * ms:.2f} ms "
        f"[target >= {TARGET_RPS:,} RPS, p99 <= {TARGET_P99_S * ms:.0f} ms: "
        f"{'OK' if ok else 'MISSED'}]"
    )
    print(
        "  same load against a constant-answer grpc.aio servicer (transport ceiling here): "
        f"{bare_rps:,.0f} RPS, p50 {_pct(bare, 0.5) * ms:.2f} ms, "
        f"p99 {_pct(bare, 0.99) * ms:.2f} ms"
    )
    print(
        f"  GetMetrics inside the servicer, no transport: {handler_s * 1e6:.1f} us per call "
        f"({1 / handler_s:,.0f} calls/s on one core)"
    )
    print(
        f"KEDA pattern at {r['pattern_rps']:,.0f} RPC/s open loop ({PATTERN_S:.0f} s, "
        f"{r['late']} sends late by > 5 ms):"
    )
    for method, values in r["pattern"].items():
        print(
            f"  {method:14s} n={len(values):6d}  p50 {_pct(values, 0.5) * ms:.2f} ms  "
            f"p99 {_pct(values, 0.99) * ms:.2f} ms"
        )
    for error, n in sorted(r["errors"].items()):
        print(f"  ERROR x{n}: {error}")
    c = r["counts"]
    rounds = c["window_rounds"]
    steady = bool(rounds) and min(rounds) == max(rounds) == CLUSTERS
    print(
        f"source: {c['by_requests']} fetches triggered by requests for {CLUSTERS} new clusters "
        f"({CLUSTERS * GROUPS} ScaledObjects asking at once) [target {CLUSTERS}: "
        f"{'OK' if c['by_requests'] == CLUSTERS else 'MISSED'}]"
    )
    print(
        f"source: {len(rounds)} refresh rounds ({REFRESH_INTERVAL_S:.0f} s interval) during the "
        f"load, fetches per round min {min(rounds, default=0)} max {max(rounds, default=0)} "
        f"[target {CLUSTERS} = one per cluster per interval: {'OK' if steady else 'MISSED'}]"
    )


if __name__ == "__main__":
    main()
