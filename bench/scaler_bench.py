"""Scaler load: many ScaledObjects calling the KEDA pattern over real loopback gRPC.

One scaler server runs in its own process with an in-memory source holding 100 Ray clusters of
10 worker groups each (1,000 ScaledObjects), refreshed every second (5x the default rate, so
the planner's share of the CPU is not understated). The load comes from a Go gRPC client
(``bench/scaler_loadgen.go``, built in a temporary directory when ``go`` is installed: KEDA's
own client is Go, and a Go client costs the shared cores far less than a Python one), else from
a grpc.aio client in this process (``SCALER_BENCH_CLIENT=python`` forces it). Phases:

1. capacity: GetMetrics from a few concurrent callers (closed loop), as fast as the server
   answers; RPS, latency, and the server's own CPU per RPC (its process time / RPCs);
2. target: GetMetrics at a fixed 2,000/s (open loop: one call every 0.5 ms whatever the
   answers, so latency is not queueing of the generator's own making); p50/p99;
3. KEDA pattern at a fixed rate: GetMetricSpec, GetMetrics and IsActive in turn for every
   ScaledObject, open loop; p50/p99 per method;
4. the same capacity and target load against a grpc.aio servicer that returns a constant (the
   transport's own cost on this machine);
5. source queries: fetches per refresh round, per cluster; the target is exactly one query set
   per cluster per interval, whatever the number of ScaledObjects.

Targets on a 2-core machine: >= 2,000 GetMetrics/s with p99 <= 10 ms; 1,000 ScaledObjects over
100 clusters with one query set per cluster per interval.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import multiprocessing as mp
import os
import shutil
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

CLUSTERS = 100
LARGE = 10  # large clusters among CLUSTERS in the large-cluster phases
LARGE_SHAPES = 50  # demand shapes of a large cluster (1,000 pods): ~27 ms per plan here
GROUPS = 10
REFRESH_INTERVAL_S = 1.0
DEFAULT_REFRESH_S = 5.0  # TargetSettings.refresh_interval_s
CAPACITY_CALLERS = 8  # closed loop: enough to keep the server busy, few enough to not queue
PHASE_S = 5.0  # closed-loop and KEDA-pattern phases
TARGET_PHASE_S = 20.0  # open-loop phases at the target rate: 40,000 calls per p99
TARGET_RPS = 2_000
TARGET_P99_S = 0.010
PATTERN_RATE_PER_S = 2_000  # RPC/s, the three methods in turn (KEDA defaults with 1,000
# ScaledObjects make ~250/s: 3 RPCs per 30 s poll + HPA reads of GetMetrics every 15 s)
METHODS = ("GetMetricSpec", "GetMetrics", "IsActive")
GO_GRPC = "google.golang.org/grpc v1.72.0"
LOADGEN_GO = Path(__file__).with_name("scaler_loadgen.go")
MS = 1000.0


def _snapshots(now: float, large: int = 0) -> dict[str, Any]:
    """``CLUSTERS`` snapshots; the first ``large`` of them big (see :func:`_large_input`)."""
    from keda_ray_scaler.identity import ClusterRef
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

    out: dict[Any, Any] = {}
    for c in range(CLUSTERS):
        name = f"ray-{c}"
        if c < large:
            out[ClusterRef("ray", name)] = ClusterSnapshot(_large_input(name), now, True)
            continue
        groups = tuple(
            WorkerGroup(f"g{g}", Resources.of(CPU=4 * (g + 1)), 0, 100) for g in range(GROUPS)
        )
        nodes = tuple(
            WorkerNode(f"c{c}-g{g}-{i}", f"g{g}", groups[g].resources, groups[g].resources)
            for g in range(GROUPS)
            for i in range(g % 3)
        )
        demand = Demand(bundles=(Bundle(Resources.of(CPU=2), 10 + c % 7),))
        out[ClusterRef("ray", name)] = ClusterSnapshot(
            In(ClusterSpec(name, groups, upscaling_speed=1000), demand, nodes), now, True
        )
    return out


def _large_input(name: str) -> Any:
    """A big Ray cluster with the bench's ten group names: 1,000 pods (a fifth with free
    capacity), 20 pending bundles of each of LARGE_SHAPES shapes (CPU, GPU, custom)."""
    from bench.instances import GIB, distinct_shapes
    from keda_ray_scaler.model import (
        Bundle,
        ClusterSpec,
        Demand,
        PlanningInput,
        Resources,
        WorkerGroup,
        WorkerNode,
    )

    def res(g: int) -> Resources:
        if g < 7:
            return Resources.of(CPU=8 * (g + 1), memory=32 * (g + 1) * GIB)
        if g < 9:
            return Resources.of(CPU=32, GPU=4 * (g - 6), memory=256 * GIB)
        return Resources.of(CPU=16, memory=64 * GIB, fpga=2)

    groups = tuple(WorkerGroup(f"g{g}", res(g), 0, 10_000) for g in range(GROUPS))
    nodes = []
    for i in range(1000):
        g = groups[i % GROUPS]
        free = (
            Resources.from_units({k: v * (i % 3) // 4 for k, v in g.resources})
            if i % 5 == 0
            else Resources()
        )
        nodes.append(WorkerNode(f"{name}-{g.name}-{i}", g.name, g.resources, free))
    demand = Demand(bundles=tuple(Bundle(shape, 20) for shape in distinct_shapes(LARGE_SHAPES)))
    return PlanningInput(ClusterSpec(name, groups, upscaling_speed=1000), demand, tuple(nodes))


def _commands(conn: Connection, on: dict[str, Callable[[], Any]]) -> Any:
    """Answer the bench's commands until "stop": ``cpu`` (process seconds, all threads)."""

    async def loop() -> None:
        while True:
            command = await asyncio.to_thread(conn.recv)
            if command == "stop":
                return
            if command == "cpu":
                conn.send(time.process_time())
            else:  # off the loop: the refresher's relayed metrics arrive through it
                conn.send(await asyncio.to_thread(on[command]))

    return loop()


_IN_ROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("in_round", default=False)


class _FreshSource:
    """Snapshots re-stamped with the current time at every fetch (an agent that is up).

    Counts fetches made by refresh rounds apart from those requests trigger (a task inherits
    the context it was created in, so the in-process bench's round flag tells them apart).
    """

    def __init__(self, large: int = 0) -> None:
        self.snapshots = _snapshots(time.time(), large)
        self.by_requests = 0
        self.by_rounds = 0

    async def fetch(self, cluster: Any) -> Any:
        from dataclasses import replace

        if _IN_ROUND.get():
            self.by_rounds += 1
        else:
            self.by_requests += 1
        return replace(self.snapshots[cluster], snapshot_time_s=time.time())


def _fresh_source(large: int, registry: Any) -> _FreshSource:
    """The refresher child's source factory (module level: it is pickled)."""
    del registry
    return _FreshSource(large)


def _rss_mib(pid: int | None) -> float:
    """Resident memory of a process in MiB, from /proc; 0 when unknown."""
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cpu_of(pid: int | None) -> float:
    """CPU seconds (user + system) of another process, from /proc; 0 when unknown."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _serve(
    conn: Connection,
    refresh_interval_s: float = REFRESH_INTERVAL_S,
    in_process: bool = False,
    large: int = 0,
) -> None:
    """The scaler process, as ``serve`` runs it: refresh in a child process unless
    ``in_process`` (``--refresh-in-process``); serve until told to stop."""
    import functools
    import gc

    from keda_ray_scaler.rpc.server import build_server
    from keda_ray_scaler.rpc.target_settings import TargetSettings

    async def main() -> None:
        settings = TargetSettings(refresh_interval_s=refresh_interval_s, max_age_s=30)
        source = _FreshSource(large)
        if in_process:
            server = build_server(source, clock=time.time, target_settings=settings)
        else:
            factory = functools.partial(_fresh_source, large)
            server = build_server(source_factory=factory, clock=time.time, target_settings=settings)
        per_round: list[int] = []  # fetches made by each refresh round (in process only)
        refresh = server.cache.refresh

        async def counted(*, pace_s: float = 0.0) -> None:
            before = source.by_rounds
            token = _IN_ROUND.set(True)
            try:
                await refresh(pace_s=pace_s)  # type: ignore[call-arg]  # TargetCache here
            finally:
                _IN_ROUND.reset(token)
            per_round.append(source.by_rounds - before)

        if in_process:
            server.cache.refresh = counted  # type: ignore[method-assign]  # count per round
        await server.start()
        gc.collect()  # as ``serve`` does after starting
        gc.freeze()
        conn.send(server.port)
        marks: list[int] = []

        def mark() -> str:
            marks.append(len(per_round))
            return "ok"

        def plans() -> tuple[float, float]:
            """Plans made so far and their total time (the plan_duration histogram)."""
            n = total = 0.0
            for family in server.registry.collect():
                if family.name == "keda_ray_scaler_plan_duration_seconds":
                    for sample in family.samples:
                        if sample.name.endswith("_count"):
                            n += sample.value
                        elif sample.name.endswith("_sum"):
                            total += sample.value
            return n, total

        def counts() -> dict[str, Any]:
            # the round running at the mark may have started during the warm-up, with fewer
            # clusters registered: count whole rounds after it
            return {"by_requests": source.by_requests, "window_rounds": per_round[marks[0] + 1 :]}

        def child_cpu() -> float:
            return _cpu_of(getattr(server.cache, "pid", None))

        def rss() -> tuple[float, float]:
            return _rss_mib(os.getpid()), _rss_mib(getattr(server.cache, "pid", None))

        await _commands(
            conn,
            {"mark": mark, "counts": counts, "plans": plans, "child_cpu": child_cpu, "rss": rss},
        )
        await server.stop(grace_s=1)

    asyncio.run(main())


def _serve_bare(conn: Connection) -> None:
    """A grpc.aio server whose unary RPCs return constants: the transport's own cost here."""
    import grpc

    from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
    from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc

    value = pb.MetricValue(metricName="m", metricValue=1, metricValueFloat=1.0)
    answer = pb.GetMetricsResponse(metricValues=[value])
    spec = pb.GetMetricSpecResponse(metricSpecs=[pb.MetricSpec(metricName="m", targetSize=1)])
    active = pb.IsActiveResponse(result=True)

    class Bare(pb_grpc.ExternalScalerServicer):  # type: ignore[misc]  # generated base is untyped
        async def GetMetrics(self, request: Any, context: Any) -> Any:
            return answer

        async def GetMetricSpec(self, request: Any, context: Any) -> Any:
            return spec

        async def IsActive(self, request: Any, context: Any) -> Any:
            return active

    async def main() -> None:
        server = grpc.aio.server()
        pb_grpc.add_ExternalScalerServicer_to_server(Bare(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        conn.send(port)
        await _commands(conn, {})
        await server.stop(0)

    asyncio.run(main())


# --- requests and load generators ------------------------------------------------------------


def _records(pattern: bool) -> bytes:
    """Serialized requests, one record per call (loadgen format): every ScaledObject in turn.

    ``pattern``: GetMetricSpec, GetMetrics, IsActive for each ScaledObject; else GetMetrics.
    """
    from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb

    out = bytearray()
    for c in range(CLUSTERS):
        for g in range(GROUPS):
            ref = pb.ScaledObjectRef(
                name=f"ray-{c}-g{g}",
                namespace="ray",
                scalerMetadata={
                    "scalerAddress": "keda-ray-scaler.keda.svc:9090",
                    "rayCluster": f"ray-{c}",
                    "workerGroup": f"g{g}",
                },
            )
            metrics = pb.GetMetricsRequest(scaledObjectRef=ref, metricName=f"ray-ray-{c}.g{g}")
            calls: list[tuple[int, Any]] = (
                [(0, ref), (1, metrics), (2, ref)] if pattern else [(1, metrics)]
            )
            for method, message in calls:
                body = message.SerializeToString()
                out += struct.pack(">BI", method, len(body)) + body
    return bytes(out)


def _parse_records(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    while data:
        method, size = struct.unpack(">BI", data[:5])
        out.append((method, data[5 : 5 + size]))
        data = data[5 + size :]
    return out


def _go() -> str | None:
    found = shutil.which("go")
    if found is None and Path("/usr/local/go/bin/go").exists():
        found = "/usr/local/go/bin/go"
    return found


def _build_loadgen(workdir: Path) -> tuple[Path | None, str]:
    """Build the Go load generator in ``workdir``: its path, or None and why not."""
    if os.environ.get("SCALER_BENCH_CLIENT") == "python":
        return None, "SCALER_BENCH_CLIENT=python"
    go = _go()
    if go is None:
        return None, "go not installed"
    module, version = GO_GRPC.split()
    (workdir / "go.mod").write_text(
        f"module scalerloadgen\n\ngo 1.23\n\nrequire {module} {version}\n"
    )
    shutil.copy(LOADGEN_GO, workdir / "main.go")
    binary = workdir / "loadgen"
    try:
        for args in (["mod", "tidy"], ["build", "-o", str(binary), "."]):
            subprocess.run([go, *args], cwd=workdir, check=True, capture_output=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        return None, f"go build failed: {exc} {detail.decode(errors='replace')[-300:]}"
    return binary, f"Go {GO_GRPC} client, one connection (like KEDA)"


class Load:
    """Runs one load phase against a port with the Go generator or the Python fallback."""

    def __init__(self, binary: Path | None, workdir: Path) -> None:
        self.binary = binary
        self.files = {}
        for name, pattern in (("metrics", False), ("pattern", True)):
            path = workdir / f"{name}.bin"
            path.write_bytes(_records(pattern))
            self.files[name] = path

    def run(
        self, port: int, requests: str, mode: str, value: float, seconds: float = PHASE_S
    ) -> dict[str, Any]:
        """One phase: ``mode`` closed (``value`` callers) or open (``value`` calls/s)."""
        if self.binary is not None:
            flag = ["-c", str(int(value))] if mode == "closed" else ["-rate", str(value)]
            command = [str(self.binary), "-addr", f"127.0.0.1:{port}", "-mode", mode, *flag]
            command += ["-requests", str(self.files[requests]), "-duration", f"{seconds}s"]
            # One P: plenty for these rates, and no idle Ps spinning on the cores the server
            # under test shares with it here (measured: 0.45 -> 0.38 cores for the generator)
            env = {**os.environ, "GOMAXPROCS": "1"}
            done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
            result: dict[str, Any] = json.loads(done.stdout)
            return result
        records = _parse_records(self.files[requests].read_bytes())
        return asyncio.run(_python_load(port, records, mode, value, seconds))


async def _python_load(
    port: int, records: list[tuple[int, bytes]], mode: str, value: float, seconds: float
) -> dict[str, Any]:
    """The fallback generator (grpc.aio, raw bytes): same phases and result as the Go one."""
    import grpc

    latencies: list[list[float]] = [[], [], []]
    errors: dict[str, int] = {}
    late = 0
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        calls = [channel.unary_unary(f"/externalscaler.ExternalScaler/{m}") for m in METHODS]

        async def one(n: int) -> None:
            method, body = records[n % len(records)]
            t = time.perf_counter()
            try:
                await calls[method](body)
            except grpc.aio.AioRpcError as exc:
                key = f"{METHODS[method]} {exc.code().name}"
                errors[key] = errors.get(key, 0) + 1
                return
            latencies[method].append(time.perf_counter() - t)

        for n in range(64):  # connect and warm up
            await one(n)
        latencies = [[], [], []]
        started = time.perf_counter()
        deadline = started + seconds
        if mode == "closed":
            counter = iter(range(1 << 62))

            async def caller() -> None:
                while time.perf_counter() < deadline:
                    await one(next(counter))

            await asyncio.gather(*(caller() for _ in range(int(value))))
        else:
            gap = 1.0 / value
            tasks = []
            for n in range(int(seconds * value)):
                delay = started + n * gap - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                elif delay < -0.001:
                    late += 1
                tasks.append(asyncio.create_task(one(n)))
            await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
    methods = {}
    for m, values in enumerate(latencies):
        if values:
            methods[METHODS[m]] = {
                "n": len(values),
                **{f"p{q}_ms": _pct(values, q / 100) * MS for q in (50, 90, 99)},
                "max_ms": max(values) * MS,
            }
    return {"elapsed_s": elapsed, "methods": methods, "errors": errors, "late": late}


# --- the benchmark ---------------------------------------------------------------------------


class Server:
    """A server process (``_serve`` or ``_serve_bare``) driven over a pipe."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        # not daemonic: the scaler starts its own refresher child; stop() ends it
        self._proc = ctx.Process(target=target, args=(child, *args))
        self._proc.start()
        self.port: int = self._conn.recv()
        self.has_child = target is _serve and not (args[1:2] and args[1])

    def ask(self, command: str) -> Any:
        self._conn.send(command)
        return self._conn.recv()

    def phase(
        self,
        load: Load,
        requests: str,
        mode: str,
        value: float,
        *,
        plans: bool = False,
        seconds: float = PHASE_S,
    ) -> dict[str, Any]:
        """One load phase, with the server's CPU seconds (all its threads) spent during it.

        ``plans``: also the number of plans made during the phase and their total time.
        """
        plans_before = self.ask("plans") if plans else (0.0, 0.0)
        before, child_before = self.ask("cpu"), self.child_cpu()
        result = load.run(self.port, requests, mode, value, seconds)
        result["server_cpu_s"] = self.ask("cpu") - before
        result["child_cpu_s"] = self.child_cpu() - child_before
        if plans:
            after = self.ask("plans")
            result["plans"] = after[0] - plans_before[0]
            result["plan_s"] = after[1] - plans_before[1]
        return result

    def child_cpu(self) -> float:
        """CPU seconds of the refresher child so far (0 for other servers)."""
        return float(self.ask("child_cpu")) if self.has_child else 0.0

    def stop(self) -> None:
        self._conn.send("stop")
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()


def _warm_up(port: int) -> None:
    """Every ScaledObject once, all at once: registers and plans every cluster."""
    import grpc

    async def run() -> None:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary("/externalscaler.ExternalScaler/GetMetrics")
            await asyncio.gather(*(call(body) for _, body in _parse_records(_records(False))))

    asyncio.run(run())


class _InProcessContext:
    """The two calls the servicer makes on its gRPC context, for calls with no transport."""

    def set_trailing_metadata(self, metadata: tuple[tuple[str, str], ...]) -> None:
        """Trailing metadata goes nowhere without a transport."""

    async def abort(self, code: object, details: str) -> None:
        raise RuntimeError(f"GetMetrics failed in the benchmark: {code} {details}")


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
                namespace="ray",
                scalerMetadata={"rayCluster": f"ray-{c}", "workerGroup": f"g{g}"},
            )
        )
        for c in range(CLUSTERS)
        for g in range(GROUPS)
    ]
    context: Any = _InProcessContext()
    for r in requests:
        await servicer.GetMetrics(r, context)
    started = time.perf_counter()
    for n in range(calls):
        await servicer.GetMetrics(requests[n % len(requests)], context)
    return (time.perf_counter() - started) / calls


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _calls(r: dict[str, Any]) -> int:
    return int(sum(m["n"] for m in r["methods"].values()) + sum(r["errors"].values()))


def _line(label: str, r: dict[str, Any], method: str = "GetMetrics") -> str:
    m = r["methods"].get(method, {"n": 0, "p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0})
    n = _calls(r)
    cpu_us = r["server_cpu_s"] / n * 1e6 if n else 0.0
    cores = r["server_cpu_s"] / r["elapsed_s"]
    child = r.get("child_cpu_s", 0.0)
    refresher = f", refresher process {child / r['elapsed_s']:.2f} cores" if child else ""
    return (
        f"{label}: {n / r['elapsed_s']:,.0f} RPC/s, p50 {m['p50_ms']:.2f} ms, "
        f"p99 {m['p99_ms']:.2f} ms, max {m['max_ms']:.1f} ms; server {cpu_us:.0f} us CPU/RPC "
        f"(= {1e6 / max(cpu_us, 1e-9):,.0f} RPC/s on a core of its own; used {cores:.2f} cores"
        f"{refresher})"
    )


def _verdict(r: dict[str, Any]) -> str:
    """OK when the phase reached the target rate without errors and with p99 in bounds."""
    m = r["methods"].get("GetMetrics", {"n": 0, "p99_ms": float("inf")})
    achieved = _calls(r) / r["elapsed_s"]
    ok = not r["errors"] and achieved >= 0.98 * TARGET_RPS and m["p99_ms"] <= TARGET_P99_S * MS
    return "OK" if ok else "MISSED"


def _problems(r: dict[str, Any]) -> str:
    notes = [f"{n} x {e}" for e, n in sorted(r["errors"].items())]
    if r["late"]:
        notes.append(f"{r['late']} sends late by > 1 ms (generator starved)")
    if any("CANCELLED" in e for e in r["errors"]):
        notes.append("CANCELLED: grpc-core shed calls queued too long for the server")
    return "; ".join(notes)


def _large_plan_ms() -> float:
    """Planning time of one large cluster here (best of 3)."""
    from keda_ray_scaler.planner import plan

    inp = _large_input("ray-0")
    times = []
    for _ in range(3):
        started = time.perf_counter()
        plan(inp)
        times.append(time.perf_counter() - started)
    return min(times) * MS


def _target_phase(load: Load, refresh_s: float, in_process: bool, large: int) -> dict[str, Any]:
    """A fresh server, warmed up, then one open-loop phase at the target rate."""
    server = Server(_serve, refresh_s, in_process, large)
    try:
        _warm_up(server.port)
        return server.phase(load, "metrics", "open", TARGET_RPS, seconds=TARGET_PHASE_S)
    finally:
        server.stop()


def main() -> None:
    """Run the benchmark and print figures against the targets."""
    with tempfile.TemporaryDirectory(prefix="scaler-bench-") as tmp:
        workdir = Path(tmp)
        started = time.perf_counter()
        binary, client = _build_loadgen(workdir)
        build_s = time.perf_counter() - started
        load = Load(binary, workdir)
        # --refresh-in-process: source counts (the same TargetCache runs in the child), and
        # the open-loop latency when fetching and planning share the RPC process
        inproc = Server(_serve, REFRESH_INTERVAL_S, True)
        try:
            _warm_up(inproc.port)
            inproc.ask("mark")  # count source fetches from here to the end
            in_process = inproc.phase(load, "metrics", "open", TARGET_RPS, seconds=TARGET_PHASE_S)
            counts = inproc.ask("counts")
        finally:
            inproc.stop()
        ours = Server(_serve)  # as ``serve`` runs: refresh in a child process
        try:
            _warm_up(ours.port)
            capacity = ours.phase(load, "metrics", "closed", CAPACITY_CALLERS, plans=True)
            target = ours.phase(load, "metrics", "open", TARGET_RPS, seconds=TARGET_PHASE_S)
            pattern = ours.phase(load, "pattern", "open", PATTERN_RATE_PER_S)
            rss = ours.ask("rss")
        finally:
            ours.stop()
        at_default = _target_phase(load, DEFAULT_REFRESH_S, False, 0)
        # LARGE clusters of 1,000 pods and LARGE_SHAPES shapes among the 100: each plan is
        # tens of ms, which in-process refresh adds to every call arriving meanwhile
        large = _target_phase(load, DEFAULT_REFRESH_S, False, LARGE)
        large_in_process = _target_phase(load, DEFAULT_REFRESH_S, True, LARGE)
        bare = Server(_serve_bare)
        try:
            bare_capacity = bare.phase(load, "metrics", "closed", CAPACITY_CALLERS)
            bare_target = bare.phase(load, "metrics", "open", TARGET_RPS, seconds=TARGET_PHASE_S)
        finally:
            bare.stop()
    handler_s = asyncio.run(_handler_cost())

    load_avg = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load_avg[0]:.1f} (other work competes)")
    print(f"scaler: {CLUSTERS} Ray clusters x {GROUPS} groups = {CLUSTERS * GROUPS} ScaledObjects")
    if binary is None:
        print(f"load generator: Python grpc.aio in the bench process ({client})")
        print("  it shares the 2 cores and costs about as much CPU per RPC as the server")
    else:
        print(f"load generator: {client}, built in {build_s:.0f} s")
    print(_line(f"GetMetrics capacity, {CAPACITY_CALLERS} callers, closed loop", capacity))
    print("  " + _line("constant-answer grpc.aio servicer, same load", bare_capacity))
    print(f"memory (RSS): RPC process {rss[0]:.0f} MiB, refresher process {rss[1]:.0f} MiB")
    per_plan_ms = capacity["plan_s"] * MS / max(1, capacity["plans"])
    print(
        f"  planning in the refresher process: {capacity['plans']:.0f} plans of "
        f"{per_plan_ms:.2f} ms (refresh every {REFRESH_INTERVAL_S:.0f} s; the default is 5 s)"
    )
    goal = f"target >= {TARGET_RPS:,}/s with p99 <= {TARGET_P99_S * MS:.0f} ms"
    open_loop = f"GetMetrics at {TARGET_RPS:,}/s, open loop for {TARGET_PHASE_S:g} s"
    rows = [
        (f"{open_loop}, refresh every {REFRESH_INTERVAL_S:g} s", target),
        (f"  same, default refresh every {DEFAULT_REFRESH_S:g} s", at_default),
        ("  same, refresh every 1 s, --refresh-in-process", in_process),
        (
            f"  {LARGE} of the clusters large ({_large_plan_ms():.0f} ms per plan), "
            f"refresh every {DEFAULT_REFRESH_S:g} s",
            large,
        ),
        ("  same large clusters, --refresh-in-process", large_in_process),
    ]
    for label, r in rows:
        print(_line(label, r) + f" [{goal}: {_verdict(r)}]")
        if _problems(r):
            print(f"    {_problems(r)}")
    print("  " + _line("constant-answer grpc.aio servicer, same load", bare_target))
    print(
        f"  GetMetrics inside the servicer, no transport: {handler_s * 1e6:.1f} us per call "
        f"({1 / handler_s:,.0f} calls/s on one core)"
    )
    print(_line(f"KEDA pattern at {PATTERN_RATE_PER_S:,} RPC/s, open loop", pattern, "IsActive"))
    for method in METHODS:
        v = pattern["methods"].get(method)
        if v:
            print(
                f"  {method:14s} n={v['n']:6d}  p50 {v['p50_ms']:.2f} ms  p99 {v['p99_ms']:.2f} ms"
            )
    if _problems(pattern):
        print(f"  {_problems(pattern)}")
    rounds = counts["window_rounds"]
    steady = bool(rounds) and min(rounds) == max(rounds) == CLUSTERS
    print(
        f"source: {counts['by_requests']} fetches triggered by requests for {CLUSTERS} new "
        f"clusters ({CLUSTERS * GROUPS} ScaledObjects asking at once) [target {CLUSTERS}: "
        f"{'OK' if counts['by_requests'] == CLUSTERS else 'MISSED'}]"
    )
    print(
        f"source: {len(rounds)} refresh rounds ({REFRESH_INTERVAL_S:.0f} s interval) during the "
        f"load, fetches per round min {min(rounds, default=0)} max {max(rounds, default=0)} "
        f"[target {CLUSTERS} = one per cluster per interval: {'OK' if steady else 'MISSED'}]"
    )


if __name__ == "__main__":
    main()
