"""PrometheusSource against a real Prometheus scraping an agent-shaped exporter on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import math
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests
import tenacity
from builders import cluster, group, inp, node, pg, res
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_server import (
    BASIC_AUTH_BCRYPT,
    BASIC_AUTH_PASSWORD,
    BASIC_AUTH_USER,
    PrometheusServer,
    SampleExporter,
    requires_prometheus,
    serve_registry,
)
from structlog.testing import capture_logs
from tls_certs import make_certs

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.errors import ConfigError, DemandUnavailable, FetchError, NotFound
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import NodeStatus, Strategy
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.server import build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.schema import ClusterSnapshot, Sample, decoding, digest, encoding
from keda_ray_scaler.sources import promql
from keda_ray_scaler.sources.metrics import SourceMetrics, source_metrics
from keda_ray_scaler.sources.prometheus import PrometheusSettings, PrometheusSource
from keda_ray_scaler.sources.source_settings import HttpSettings, RetrySettings

pytestmark = [requires_prometheus, pytest.mark.prometheus]

SEED_INPUT = inp(cluster(group("cpu", cpu=10, max=50)), bundles=[(res(cpu=5), 20)])
NOW_S = 1_795_000_000.25
#: One series per scenario cluster (demo, stale, failed, nan, absurd, lost, agent).
SNAPSHOT_SERIES = "ray_scaler_snapshot_timestamp_seconds"
#: A label value that would break out of a naively built matcher.
HOSTILE = 'x"} or vector(1) or {a="\\'


def in_ray(name: str) -> ClusterRef:
    """Ray cluster ``name`` in namespace ``ray``, where every exporter here is "discovered"."""
    return ClusterRef("ray", name)


def snapshot(name: str, *, when: float = NOW_S, success: bool = True) -> ClusterSnapshot:
    """The seed example (20 x {CPU: 5}, 10-CPU group) as cluster ``name``."""
    spec = SEED_INPUT.cluster
    renamed = type(spec)(name, spec.worker_groups, spec.max_workers, spec.upscaling_speed)
    return ClusterSnapshot(type(SEED_INPUT)(renamed, SEED_INPUT.demand), when, success)


def exported(snap: ClusterSnapshot) -> list[Sample]:
    """The series the agent exports for ``snap``: encoded and sealed."""
    return digest.seal(encoding.encode(snap))


def with_demand_value(name: str, value: float) -> list[Sample]:
    """Cluster ``name``'s series with its demand count replaced by ``value``."""
    return [
        Sample(s.name, s.labels, value) if s.name == schema.DEMAND_BUNDLES else s
        for s in exported(snapshot(name))
    ]


def served() -> list[Sample]:
    """Every scenario, one cluster each, served by the main exporter."""
    return [
        *exported(snapshot("demo")),
        *exported(snapshot("stale", when=1000.0)),
        *exported(snapshot("failed", success=False)),
        *with_demand_value("nan", math.nan),
        *with_demand_value("absurd", 1e300),
        Sample("ray_scaler_probe", {"cluster": HOSTILE}, 7.0),
    ]


@pytest.fixture(scope="module")
def exporter() -> Iterator[SampleExporter]:
    """The main exporter: every scenario cluster."""
    with SampleExporter(served()) as e:
        yield e


@pytest.fixture(scope="module")
def lost_exporter() -> Iterator[SampleExporter]:
    """A second agent, for cluster ``lost``, that a test stops."""
    with SampleExporter(exported(snapshot("lost"))) as e:
        yield e


#: Resource names Ray accepts that a label or a shape must survive (the last as its stand-in).
ODD_NAMES = {"a,b": 1, "c;d": 2, "e=f": 1, "g\nh": 1, 'ü "q" \\': 1, "x" * 5_000: 1}


def agent_snapshot() -> ClusterSnapshot:
    """A richer cluster ``agent``: three groups (one with odd resource names), a placement
    group, a constraint, four pods."""
    cpu, gpu = group("cpu", cpu=10, max=50), group("gpu", cpu=8, gpu=1, min=1, max=8, cost=4.0)
    odd = group("odd", cpu=4, max=5, **ODD_NAMES)
    planning = inp(
        type(SEED_INPUT.cluster)("agent", (cpu, gpu, odd), max_workers=40, upscaling_speed=2.0),
        bundles=[(res(cpu=5), 20), (res(cpu=1, gpu=1), 3), (res(cpu=1, **ODD_NAMES), 2)],
        pgs=[
            pg(Strategy.STRICT_SPREAD, res(cpu=4), res(cpu=4), count=2),
            pg(Strategy.PACK, res(**{"c;d": 1}), res(**{"a,b": 1})),
        ],
        constraints=[(res(gpu=1), 4)],
        nodes=[
            node("cpu-a", cpu, used={"CPU": 5}),
            node("cpu-b", cpu, idle=120.0, status=NodeStatus.VICTIM),
            node("gpu-a", gpu, idle=30.5),
            node("odd-a", odd, used={"a,b": 1}),
        ],
    )
    snap = ClusterSnapshot(planning, NOW_S, True)
    return decoding.decode(encoding.encode(snap))["agent"]  # the canonical (sorted) form


@pytest.fixture(scope="module")
def agent_exporter() -> Iterator[str]:
    """The agent's own exporter (SnapshotCollector and AgentMetrics) on 127.0.0.1."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(agent_snapshot())
    own = AgentMetrics(registry, "agent")
    own.poll_errors.inc(2)
    own.poll_duration.observe(0.004)
    with serve_registry(registry) as address:
        yield address


@pytest.fixture(scope="module")
def prometheus(
    tmp_path_factory: pytest.TempPathFactory,
    exporter: SampleExporter,
    lost_exporter: SampleExporter,
    agent_exporter: str,
) -> Iterator[PrometheusServer]:
    """One plain Prometheus for the module, with every scenario scraped once."""
    workdir = tmp_path_factory.mktemp("prom")
    targets = [exporter.target, lost_exporter.target, agent_exporter]
    with PrometheusServer(workdir, targets) as p:
        p.wait_for_series(SNAPSHOT_SERIES, 7)
        yield p


@pytest.fixture
def metrics() -> SourceMetrics:
    """Fresh source metrics."""
    return source_metrics(CollectorRegistry())


def source_for(
    url: str, metrics: SourceMetrics, http: HttpSettings | None = None, **retry: Any
) -> PrometheusSource:
    """A source with no backoff (tenacity.wait_none) and the given retry settings."""
    settings = PrometheusSettings(
        url=url, http=http or HttpSettings(), retry=RetrySettings(**retry)
    )
    return PrometheusSource(settings, metrics=metrics, wait=tenacity.wait_none())


def count(metrics: SourceMetrics, name: str, **labels: str) -> float:
    """The current value of one source counter."""
    metric = {"requests": metrics.requests, "failures": metrics.failures}[name]
    return float(metric.labels(**labels)._value.get())


# --- answers ------------------------------------------------------------------------------


async def test_the_seed_example_round_trips_through_prometheus(
    prometheus: PrometheusServer, metrics: SourceMetrics
) -> None:
    """20 x {CPU: 5} and a 10-CPU group come back as the same PlanningInput, time and flag."""
    got = await source_for(prometheus.url, metrics).fetch(in_ray("demo"))
    assert got == snapshot("demo")
    assert got.input.demand.bundles[0].count == 20
    assert count(metrics, "requests", source="prometheus", outcome="ok") == 1


async def test_the_agents_own_exporter_round_trips_through_prometheus(
    prometheus: PrometheusServer, metrics: SourceMetrics
) -> None:
    """What the agent's collector publishes is what the source reads, beside its own series."""
    assert prometheus.query('ray_scaler_agent_poll_errors_total{cluster="agent"}') != []
    assert (await source_for(prometheus.url, metrics).fetch(in_ray("agent"))) == agent_snapshot()


async def test_a_stale_snapshot_is_surfaced_with_the_agents_time(
    prometheus: PrometheusServer, metrics: SourceMetrics
) -> None:
    """The agent's old snapshot time comes through unchanged, so the caller can refuse it."""
    got = await source_for(prometheus.url, metrics).fetch(in_ray("stale"))
    assert got.snapshot_time_s == 1000.0


async def test_a_failed_agent_poll_is_surfaced(
    prometheus: PrometheusServer, metrics: SourceMetrics
) -> None:
    """success=0 from the agent comes through as success=False."""
    got = await source_for(prometheus.url, metrics).fetch(in_ray("failed"))
    assert got.success is False


@pytest.mark.parametrize(
    ("name", "problem"), [("nan", "not a finite number"), ("absurd", "absurdly large")]
)
async def test_nan_and_absurd_values_are_unavailable_not_zero(
    prometheus: PrometheusServer, metrics: SourceMetrics, name: str, problem: str
) -> None:
    """A NaN or absurd demand count is DemandUnavailable naming the series, counted bad_data."""
    with pytest.raises(DemandUnavailable) as info:
        await source_for(prometheus.url, metrics).fetch(in_ray(name))
    assert problem in str(info.value)
    assert "ray_scaler_demand_bundles" in str(info.value)
    assert count(metrics, "failures", source="prometheus", error="bad_data") == 1


async def test_an_unknown_cluster_is_not_found(
    prometheus: PrometheusServer, metrics: SourceMetrics
) -> None:
    """A cluster Prometheus never saw is NotFound, after the lookback query."""
    with pytest.raises(NotFound, match="ray/nosuch"):
        await source_for(prometheus.url, metrics).fetch(in_ray("nosuch"))
    assert count(metrics, "requests", source="prometheus", outcome="ok") == 2


# --- injection ----------------------------------------------------------------------------


async def test_injection_in_a_cluster_name_is_refused_before_any_query(
    prometheus: PrometheusServer, metrics: SourceMetrics
) -> None:
    """A hostile cluster name is a ConfigError and no request leaves the scaler."""
    with pytest.raises(ConfigError, match="cluster"):
        await source_for(prometheus.url, metrics).fetch(in_ray('demo"} or vector(1) or {a="'))
    assert count(metrics, "requests", source="prometheus", outcome="ok") == 0


def test_quoted_label_values_match_exactly_in_a_real_prometheus(
    prometheus: PrometheusServer,
) -> None:
    """The escaping is valid PromQL: a hostile value matches only the series that carries it."""
    matched = prometheus.query("ray_scaler_probe{cluster=" + promql.quote(HOSTILE) + "}")
    assert [(r["metric"]["cluster"], r["value"][1]) for r in matched] == [(HOSTILE, "7")]
    assert prometheus.query("{cluster=" + promql.quote('demo"} or vector(1) or {a="') + "}") == []


# --- lost targets and a stopped Prometheus ------------------------------------------------


async def test_a_lost_target_is_unavailable_not_zero(
    prometheus: PrometheusServer, lost_exporter: SampleExporter, metrics: SourceMetrics
) -> None:
    """A known cluster's agent stops: empty answer -> DemandUnavailable 'target may be lost'."""
    source = source_for(prometheus.url, metrics)
    assert (await source.fetch(in_ray("lost"))) == snapshot("lost")
    lost_exporter.stop()
    prometheus.wait_for_empty('ray_scaler_snapshot_success{cluster="lost"}')
    with pytest.raises(DemandUnavailable, match="target may be lost") as info:
        await source.fetch(in_ray("lost"))
    assert isinstance(info.value, FetchError) and info.value.kind == "empty"
    assert count(metrics, "failures", source="prometheus", error="empty") == 1
    assert (await source.fetch(in_ray("demo"))) == snapshot("demo")


async def test_prometheus_stopped_is_unavailable_after_bounded_retries(
    prometheus: PrometheusServer, metrics: SourceMetrics
) -> None:
    """Connection refused: 3 attempts, then DemandUnavailable from the cause, retries logged."""
    source = source_for(prometheus.url, metrics)
    prometheus.stop()
    try:
        with capture_logs() as logs, pytest.raises(DemandUnavailable) as info:
            await source.fetch(in_ray("demo"))
    finally:
        prometheus.start()
        prometheus.wait_for_series('ray_scaler_snapshot_success{cluster="demo"}', 1)
    assert isinstance(info.value, FetchError) and info.value.kind == "connection"
    assert isinstance(info.value.__cause__, requests.ConnectionError)
    assert count(metrics, "requests", source="prometheus", outcome="connection") == 3
    assert [e["attempt"] for e in logs if e["event"] == "source_retry"] == [1, 2]
    assert [e["error_kind"] for e in logs if e["event"] == "source_failed"] == ["connection"]


# --- transport: deadline, retry policy ------------------------------------------------------


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """A TCP listener that accepts connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@contextlib.contextmanager
def status_server(status: int) -> Iterator[tuple[str, list[str]]]:
    """An HTTP server answering every GET with ``status``; yields its URL and the paths seen."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_a_silent_server_times_out_within_the_deadline(metrics: SourceMetrics) -> None:
    """No answer: the fetch ends as a timeout, bounded by deadline_s across all attempts."""
    with silent_server() as url, pytest.raises(DemandUnavailable) as info:
        await source_for(url, metrics, deadline_s=0.5).fetch(in_ray("demo"))
    assert isinstance(info.value, FetchError) and info.value.kind == "timeout"
    assert count(metrics, "failures", source="prometheus", error="timeout") == 1


async def test_a_pending_fetch_does_not_block_the_event_loop(metrics: SourceMetrics) -> None:
    """While the HTTP call waits in its thread, the loop runs other work (here: the test)."""
    loop = asyncio.get_running_loop()
    connected = asyncio.Event()
    release = threading.Event()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)

        def serve_one() -> None:
            conn, _ = listener.accept()
            with conn:
                loop.call_soon_threadsafe(connected.set)
                conn.recv(65536)
                release.wait(10)  # answer only once the test has looked
                conn.sendall(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

        thread = threading.Thread(target=serve_one, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        source = source_for(url, metrics, attempts=1, deadline_s=10.0)
        fetch = asyncio.create_task(source.fetch(in_ray("demo")))
        try:
            await asyncio.wait_for(connected.wait(), 10)
            assert not fetch.done()
        finally:
            release.set()
        with pytest.raises(DemandUnavailable, match="HTTP 503"):
            await fetch
        thread.join(5)


async def test_server_errors_are_retried(metrics: SourceMetrics) -> None:
    """503 is transient: every attempt is made, then DemandUnavailable kind http."""
    with status_server(503) as (url, seen), pytest.raises(DemandUnavailable) as info:
        await source_for(url, metrics, attempts=4).fetch(in_ray("demo"))
    assert len(seen) == 4
    assert isinstance(info.value, FetchError) and info.value.kind == "http"


async def test_client_errors_are_not_retried(metrics: SourceMetrics) -> None:
    """400 is our fault, not transient: one request only."""
    with status_server(400) as (url, seen), pytest.raises(DemandUnavailable):
        await source_for(url, metrics, attempts=4).fetch(in_ray("demo"))
    assert len(seen) == 1


async def test_the_query_carries_a_server_side_timeout(metrics: SourceMetrics) -> None:
    """Prometheus is told to stop evaluating within the deadline too."""
    with status_server(503) as (url, seen), pytest.raises(DemandUnavailable):
        await source_for(url, metrics, attempts=1, deadline_s=2.0).fetch(in_ray("demo"))
    assert "timeout=" in seen[0]
    assert seen[0].startswith("/api/v1/query?query=%7B__name__%3D~%22ray_scaler_.%2B%22")


# --- credentials: bearer token (through a checking proxy), basic auth, TLS and mTLS ----------


class BearerProxy:
    """A reverse proxy that forwards to Prometheus only with ``Authorization: Bearer <token>``."""

    def __init__(self, upstream: str) -> None:
        self.token = ""
        self.seen: list[str] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                header = self.headers.get("Authorization", "")
                proxy.seen.append(header)
                if header != f"Bearer {proxy.token}":
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                upstream_answer = requests.get(upstream + self.path, timeout=5)
                body = upstream_answer.content
                self.send_response(upstream_answer.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop the proxy."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


async def test_bearer_token_file_is_sent_and_reread_when_rotated(
    prometheus: PrometheusServer, metrics: SourceMetrics, tmp_path: Path
) -> None:
    """The token file is read per request and re-read after it changes; a bad token is auth."""
    token_file = tmp_path / "token"
    token_file.write_text("first-token\n")
    proxy = BearerProxy(prometheus.url)
    try:
        source = source_for(proxy.url, metrics, http=HttpSettings(bearer_token_file=token_file))
        proxy.token = "first-token"
        assert (await source.fetch(in_ray("demo"))) == snapshot("demo")
        token_file.write_text("second-token-rotated\n")
        proxy.token = "second-token-rotated"
        assert (await source.fetch(in_ray("demo"))) == snapshot("demo")
        proxy.token = "something-else"
        with pytest.raises(DemandUnavailable) as info:
            await source.fetch(in_ray("demo"))
    finally:
        proxy.close()
    assert isinstance(info.value, FetchError) and info.value.kind == "auth"
    assert proxy.seen == [
        "Bearer first-token",
        "Bearer second-token-rotated",
        "Bearer second-token-rotated",
    ]


@pytest.fixture(scope="module")
def secure_prometheus(
    tmp_path_factory: pytest.TempPathFactory, exporter: SampleExporter
) -> Iterator[tuple[PrometheusServer, dict[str, Path]]]:
    """Prometheus with TLS, client certificates required, and basic auth."""
    workdir = tmp_path_factory.mktemp("secure-prom")
    certs = make_certs()
    files: dict[str, Path] = {}
    files["ca"], _ = certs.ca.write(workdir, "ca")
    files["wrong_ca"], _ = certs.wrong_ca.write(workdir, "wrong-ca")
    files["server_crt"], files["server_key"] = certs.server.write(workdir, "server")
    files["client_crt"], files["client_key"] = certs.client.write(workdir, "client")
    files["password"] = workdir / "password"
    files["password"].write_text(BASIC_AUTH_PASSWORD + "\n")
    files["wrong_password"] = workdir / "wrong-password"
    files["wrong_password"].write_text("guess\n")
    web = {
        "tls_server_config": {
            "cert_file": str(files["server_crt"]),
            "key_file": str(files["server_key"]),
            "client_auth_type": "RequireAndVerifyClientCert",
            "client_ca_file": str(files["ca"]),
        },
        "basic_auth_users": {BASIC_AUTH_USER: BASIC_AUTH_BCRYPT},
    }
    with PrometheusServer(workdir, [exporter.target], web_config=web) as p:
        p.wait_for_series(
            'ray_scaler_snapshot_success{cluster="demo"}',
            1,
            verify=str(files["ca"]),
            cert=(str(files["client_crt"]), str(files["client_key"])),
            auth=(BASIC_AUTH_USER, BASIC_AUTH_PASSWORD),
        )
        yield p, files


def secure_http(files: dict[str, Path], **overrides: Any) -> HttpSettings:
    """Settings that satisfy the secure Prometheus, with some fields overridden."""
    fields: dict[str, Any] = {
        "ca_file": files["ca"],
        "cert_file": files["client_crt"],
        "key_file": files["client_key"],
        "basic_auth_user": BASIC_AUTH_USER,
        "basic_auth_password_file": files["password"],
    }
    fields.update(overrides)
    return HttpSettings(**fields)


async def test_tls_client_certificate_and_basic_auth_round_trip(
    secure_prometheus: tuple[PrometheusServer, dict[str, Path]], metrics: SourceMetrics
) -> None:
    """Custom CA, client certificate and basic auth from a password file reach the data."""
    server, files = secure_prometheus
    assert server.url.startswith("https://")
    got = await source_for(server.url, metrics, http=secure_http(files)).fetch(in_ray("demo"))
    assert got == snapshot("demo")


async def test_a_wrong_password_is_an_auth_error_without_retry(
    secure_prometheus: tuple[PrometheusServer, dict[str, Path]], metrics: SourceMetrics
) -> None:
    """401 is not transient: one request, DemandUnavailable kind auth."""
    server, files = secure_prometheus
    http = secure_http(files, basic_auth_password_file=files["wrong_password"])
    with pytest.raises(DemandUnavailable) as info:
        await source_for(server.url, metrics, http=http).fetch(in_ray("demo"))
    assert isinstance(info.value, FetchError) and info.value.kind == "auth"
    assert count(metrics, "requests", source="prometheus", outcome="auth") == 1


async def test_a_server_certificate_from_another_ca_is_refused(
    secure_prometheus: tuple[PrometheusServer, dict[str, Path]], metrics: SourceMetrics
) -> None:
    """Verifying with the wrong CA fails the TLS handshake: kind tls, no retry."""
    server, files = secure_prometheus
    http = secure_http(files, ca_file=files["wrong_ca"])
    with pytest.raises(DemandUnavailable) as info:
        await source_for(server.url, metrics, http=http).fetch(in_ray("demo"))
    assert isinstance(info.value, FetchError) and info.value.kind == "tls"
    assert count(metrics, "requests", source="prometheus", outcome="tls") == 1


async def test_without_a_client_certificate_the_server_refuses(
    secure_prometheus: tuple[PrometheusServer, dict[str, Path]], metrics: SourceMetrics
) -> None:
    """mTLS required: no client certificate, no data."""
    server, files = secure_prometheus
    http = secure_http(files, cert_file=None, key_file=None)
    with pytest.raises(DemandUnavailable):
        await source_for(server.url, metrics, http=http, attempts=1).fetch(in_ray("demo"))
    assert count(metrics, "requests", source="prometheus", outcome="ok") == 0


def test_settings_refuse_half_configured_credentials() -> None:
    """A certificate without its key, or both bearer and basic auth, is refused at startup."""
    with pytest.raises(ValueError, match="cert_file and key_file"):
        HttpSettings(cert_file=Path("c"))
    with pytest.raises(ValueError, match="not both"):
        HttpSettings(
            bearer_token_file=Path("t"), basic_auth_user="u", basic_auth_password_file=Path("p")
        )
    with pytest.raises(ValueError, match="http"):
        PrometheusSettings(url="prometheus:9090")


# --- end to end: real Prometheus -> PrometheusSource -> the scaler over loopback gRPC -----------


def scaled_object(cluster_name: str) -> pb.ScaledObjectRef:
    """KEDA's ScaledObjectRef for worker group ``cpu`` of ``cluster_name``."""
    metadata = {"rayCluster": cluster_name, "workerGroup": "cpu"}
    return pb.ScaledObjectRef(name="cpu-workers", namespace="ray", scalerMetadata=metadata)


async def test_seed_example_end_to_end_through_grpc_and_prometheus_stopped_is_unavailable(
    prometheus: PrometheusServer,
) -> None:
    """GetMetrics 10 and IsActive true from real Prometheus; stopped -> UNAVAILABLE, not 0."""
    metrics = source_metrics(CollectorRegistry())
    source = source_for(prometheus.url, metrics)
    server = build_server(
        source,
        clock=lambda: NOW_S,  # the agent's snapshot is fresh at this instant
        target_settings=TargetSettings(refresh_interval_s=3600, max_age_s=60),
    )
    ref = scaled_object("demo")
    request = pb.GetMetricsRequest(scaledObjectRef=ref, metricName="ray-demo.cpu")
    async with server, grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = pb_grpc.ExternalScalerStub(channel)
        answer = await stub.GetMetrics(request)
        assert [(v.metricName, v.metricValue, v.metricValueFloat) for v in answer.metricValues] == [
            ("ray-demo.cpu", 10, 10.0)
        ]
        assert (await stub.IsActive(ref)).result is True
        with pytest.raises(grpc.aio.AioRpcError) as stale:
            await stub.IsActive(scaled_object("stale"))  # the agent's snapshot is old
        assert stale.value.code() is grpc.StatusCode.UNAVAILABLE
        prometheus.stop()
        try:
            await server.cache.refresh()
            with pytest.raises(grpc.aio.AioRpcError) as down:
                await stub.GetMetrics(request)
            with pytest.raises(grpc.aio.AioRpcError) as down_active:
                await stub.IsActive(ref)
        finally:
            prometheus.start()
            prometheus.wait_for_series('ray_scaler_snapshot_success{cluster="demo"}', 1)
    assert down.value.code() is grpc.StatusCode.UNAVAILABLE
    assert down_active.value.code() is grpc.StatusCode.UNAVAILABLE
    assert "connection" in (down.value.details() or "")


def prometheus_source(url: str, registry: CollectorRegistry) -> PrometheusSource:
    """The refresher child's source factory (module level: it is pickled)."""
    return source_for(url, source_metrics(registry))


async def test_refresher_process_answers_from_real_prometheus_and_relays_its_metrics(
    prometheus: PrometheusServer,
) -> None:
    """As ``serve`` runs: the child queries Prometheus; GetMetrics 10, and the child's source
    and plan metrics appear on the parent's registry."""
    server = build_server(
        source_factory=functools.partial(prometheus_source, prometheus.url),
        clock=lambda: NOW_S,  # the parent judges freshness, with its clock
        target_settings=TargetSettings(refresh_interval_s=3600, max_age_s=60, first_wait_s=10),
    )
    ref = scaled_object("demo")
    request = pb.GetMetricsRequest(scaledObjectRef=ref, metricName="ray-demo.cpu")
    async with server, grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        answer = await pb_grpc.ExternalScalerStub(channel).GetMetrics(request)
        lines = (await asyncio.to_thread(generate_latest, server.registry)).decode().splitlines()
    assert answer.metricValues[0].metricValue == 10
    for line in (
        'keda_ray_scaler_source_requests_total{outcome="ok",source="prometheus"} 1.0',
        'keda_ray_scaler_plan_duration_seconds_count{cluster="ray/demo"} 1.0',
        'keda_ray_scaler_rpcs_total{code="OK",method="GetMetrics"} 1.0',
    ):
        assert line in lines, line
