"""ScrapeSource: the agent's /metrics read directly over HTTP(S), no Prometheus."""

from __future__ import annotations

import contextlib
import http.server
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import tenacity
from builders import cluster, group, inp, res
from prometheus_client import CollectorRegistry, Counter, generate_latest, start_http_server
from prometheus_server import SampleExporter, free_port, serve_registry
from tls_certs import make_certs

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.errors import (
    ConfigError,
    DeadlineExceeded,
    DemandUnavailable,
    FetchError,
    HttpStatusError,
    NotFound,
    SchemaError,
)
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.schema import ClusterSnapshot, Sample, decoding, encoding
from keda_ray_scaler.sources.metrics import SourceMetrics, source_metrics
from keda_ray_scaler.sources.scrape import (
    ScrapeSettings,
    ScrapeSource,
    parse_exposition,
)
from keda_ray_scaler.sources.source_settings import HttpSettings, RetrySettings
from keda_ray_scaler.sources.transport import classify

SEED_INPUT = inp(cluster(group("cpu", cpu=10, max=50)), bundles=[(res(cpu=5), 20)])
NOW_S = 1_795_000_000.25


def snapshot(*, when: float = NOW_S, success: bool = True) -> ClusterSnapshot:
    """The seed example (20 x {CPU: 5}, 10-CPU group) as cluster ``demo``."""
    return ClusterSnapshot(SEED_INPUT, when, success)


@pytest.fixture
def metrics() -> SourceMetrics:
    """Fresh source metrics."""
    return source_metrics(CollectorRegistry())


#: The cluster every test scrapes: ``demo`` in namespace ``ray``.
DEMO = ClusterRef("ray", "demo")


def source_for(
    url: str,
    metrics: SourceMetrics,
    http: HttpSettings | None = None,
    max_bytes: int = 1 << 20,
    **retry: Any,
) -> ScrapeSource:
    """A scrape source for cluster ``demo`` of namespace ``ray`` at ``url``, no backoff."""
    settings = ScrapeSettings(
        targets={DEMO: url},
        http=http or HttpSettings(),
        retry=RetrySettings(**retry),
        max_bytes=max_bytes,
    )
    return ScrapeSource(settings, metrics=metrics, wait=tenacity.wait_none())


def count(metrics: SourceMetrics, name: str, **labels: str) -> float:
    """The current value of one source counter."""
    metric = {"requests": metrics.requests, "failures": metrics.failures}[name]
    return float(metric.labels(**labels)._value.get())


@contextlib.contextmanager
def http_server(
    answer: Callable[[http.server.BaseHTTPRequestHandler], tuple[int, bytes]],
    raw: Callable[[http.server.BaseHTTPRequestHandler], None] | None = None,
) -> Iterator[str]:
    """A loopback HTTP server whose GET answer ``answer(handler)`` computes (or ``raw``
    writes whole); yields its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if raw is not None:
                raw(self)
                return
            status, body = answer(self)
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# --- answers ------------------------------------------------------------------------------


async def test_the_seed_example_round_trips_through_a_real_exposition(
    metrics: SourceMetrics,
) -> None:
    """A prometheus_client exporter's text, counters included, decodes to the same snapshot."""
    with SampleExporter(encoding.encode(snapshot())) as exporter:
        merged = Counter(
            "ray_scaler_demand_shapes_merged",
            "shapes merged",
            ["cluster"],
            registry=exporter.registry,
        )
        merged.labels("demo").inc(3)
        got = await source_for(exporter.url, metrics).fetch(DEMO)
    assert got == snapshot()
    assert count(metrics, "requests", source="scrape", outcome="ok") == 1


async def _fetch_served(registry: CollectorRegistry, metrics: SourceMetrics) -> ClusterSnapshot:
    """``registry`` served on a real port on 127.0.0.1, read back by the scrape source."""
    with serve_registry(registry) as address:
        return await source_for(f"http://{address}/metrics", metrics).fetch(DEMO)


async def test_the_agents_own_exporter_is_read_directly(metrics: SourceMetrics) -> None:
    """SnapshotCollector plus the agent's own counters and histogram: the same snapshot back."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(snapshot())
    AgentMetrics(registry, "demo").poll_duration.observe(0.01)
    got = await _fetch_served(registry, metrics)
    assert got == snapshot()


async def test_resource_names_ray_accepts_come_back_exactly_from_the_agents_port(
    metrics: SourceMetrics,
) -> None:
    """`,` `;` `=` newline, quotes, unicode through the exposition text; 5,000 chars stand in."""
    odd_names = {"a,b": 1, "c;d": 2, "e=f": 1, "g\nh": 1, 'ü "q" \\': 1, "x" * 5_000: 1}
    odd = group("odd", cpu=4, max=5, **odd_names)
    planning = inp(cluster(odd), bundles=[(res(cpu=1, **odd_names), 2)])
    sent = decoding.decode(encoding.encode(ClusterSnapshot(planning, NOW_S, True)))["demo"]
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(sent)
    got = await _fetch_served(registry, metrics)
    assert got == sent
    (bundle,) = got.input.demand.bundles
    names = {n for n, _ in bundle.resources}
    assert names == {"CPU", *list(odd_names)[:-1], schema.stand_in("x" * 5_000)}


async def test_stale_and_failed_snapshots_are_surfaced(metrics: SourceMetrics) -> None:
    """An old snapshot time and success=0 come through unchanged for the caller to refuse."""
    with SampleExporter(encoding.encode(snapshot(when=1000.0, success=False))) as exporter:
        got = await source_for(exporter.url, metrics).fetch(DEMO)
    assert (got.snapshot_time_s, got.success) == (1000.0, False)


@pytest.mark.parametrize(
    ("value", "problem"), [(math.nan, "not a finite number"), (1e300, "absurdly large")]
)
async def test_nan_and_absurd_values_are_unavailable_not_zero(
    metrics: SourceMetrics, value: float, problem: str
) -> None:
    """A NaN or absurd demand count is DemandUnavailable naming the series, counted bad_data."""
    samples = [
        Sample(s.name, s.labels, value) if s.name == schema.DEMAND_BUNDLES else s
        for s in encoding.encode(snapshot())
    ]
    with SampleExporter(samples) as exporter, pytest.raises(DemandUnavailable) as info:
        await source_for(exporter.url, metrics).fetch(DEMO)
    assert problem in str(info.value)
    assert "ray_scaler_demand_bundles" in str(info.value)
    assert count(metrics, "failures", source="scrape", error="bad_data") == 1


async def test_an_agent_exporting_another_cluster_is_empty_for_ours(
    metrics: SourceMetrics,
) -> None:
    """The configured target has no series for the cluster: DemandUnavailable, kind empty."""
    other = ClusterSnapshot(
        inp(type(SEED_INPUT.cluster)("other", SEED_INPUT.cluster.worker_groups)), NOW_S, True
    )
    with (
        SampleExporter(encoding.encode(other)) as exporter,
        pytest.raises(DemandUnavailable) as info,
    ):
        await source_for(exporter.url, metrics).fetch(DEMO)
    assert isinstance(info.value, FetchError) and info.value.kind == "empty"
    assert "found ['other']" in str(info.value)


async def test_a_cluster_without_a_target_is_not_found(metrics: SourceMetrics) -> None:
    """No URL configured for the cluster: NotFound, and no request is made."""
    with pytest.raises(NotFound, match="ray/nosuch"):
        await source_for("http://127.0.0.1:1/metrics", metrics).fetch(ClusterRef("ray", "nosuch"))
    assert count(metrics, "requests", source="scrape", outcome="connection") == 0


async def test_the_same_name_in_another_namespace_is_another_cluster(
    metrics: SourceMetrics,
) -> None:
    """The URL is configured for ray/demo: team-b/demo is not found, and nothing is scraped."""
    with pytest.raises(NotFound, match="team-b/demo"):
        await source_for("http://127.0.0.1:1/metrics", metrics).fetch(ClusterRef("team-b", "demo"))
    assert count(metrics, "requests", source="scrape", outcome="connection") == 0


def test_settings_refuse_a_hostile_cluster_name() -> None:
    """Target names are RFC 1123 labels, like the clusters they stand for."""
    with pytest.raises(ConfigError, match="cluster"):
        ScrapeSettings(targets={ClusterRef("ray", 'demo"}'): "http://127.0.0.1/metrics"})


# --- failures -------------------------------------------------------------------------------


async def test_a_stopped_agent_is_unavailable_after_bounded_retries(
    metrics: SourceMetrics,
) -> None:
    """Connection refused: 3 attempts, then DemandUnavailable from the cause."""
    url = f"http://127.0.0.1:{free_port()}/metrics"
    with pytest.raises(DemandUnavailable) as info:
        await source_for(url, metrics).fetch(DEMO)
    assert isinstance(info.value.__cause__, requests.ConnectionError)
    assert count(metrics, "requests", source="scrape", outcome="connection") == 3


async def test_server_errors_are_retried_and_not_found_is_not(metrics: SourceMetrics) -> None:
    """500 is tried every attempt; 404 once."""
    seen: list[str] = []

    def answer(h: http.server.BaseHTTPRequestHandler) -> tuple[int, bytes]:
        seen.append(h.path)
        return (500 if h.path == "/metrics" else 404), b""

    with http_server(answer) as url:
        with pytest.raises(DemandUnavailable):
            await source_for(url, metrics, attempts=3).fetch(DEMO)
        assert len(seen) == 3
        with pytest.raises(DemandUnavailable, match="HTTP 404"):
            await source_for(url + "/nope", metrics, attempts=3).fetch(DEMO)
    assert len(seen) == 4


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_refused_never_followed(metrics: SourceMetrics, status: int) -> None:
    """An agent URL answering a redirect to another server: the fetch is unavailable at once
    with kind ``redirect`` naming where it pointed, counted like any source error, and the
    other server is never asked."""
    asked_elsewhere: list[str] = []

    def elsewhere(h: http.server.BaseHTTPRequestHandler) -> tuple[int, bytes]:
        asked_elsewhere.append(h.path)
        return 200, b""

    def redirect(target: str) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
        def do_get(h: http.server.BaseHTTPRequestHandler) -> None:
            h.send_response(status)
            h.send_header("Location", target)
            h.send_header("Content-Length", "0")
            h.end_headers()

        return do_get

    with (
        http_server(elsewhere) as target,
        http_server(lambda h: (200, b""), redirect(target)) as url,
        pytest.raises(FetchError) as info,
    ):
        await source_for(url, metrics, attempts=3).fetch(DEMO)
    assert asked_elsewhere == []
    assert info.value.kind == "redirect"
    assert f"HTTP {status}: redirect to {target} refused" in str(info.value)
    assert "--agent-url" in str(info.value)
    assert count(metrics, "requests", source="scrape", outcome="redirect") == 1  # not retried
    assert count(metrics, "failures", source="scrape", error="redirect") == 1


async def test_text_that_does_not_parse_is_bad_data(metrics: SourceMetrics) -> None:
    """An HTML error page in place of metrics is DemandUnavailable, kind bad_data."""
    with (
        http_server(lambda h: (200, b"<html>proxy error {oops</html>\n")) as url,
        pytest.raises(DemandUnavailable) as info,
    ):
        await source_for(url, metrics).fetch(DEMO)
    assert isinstance(info.value, FetchError) and info.value.kind == "bad_data"


async def test_an_oversized_answer_is_refused(metrics: SourceMetrics) -> None:
    """An answer above max_bytes is bad data, not parsed."""
    body = b"# padding\n" * 2000
    with http_server(lambda h: (200, body)) as url, pytest.raises(DemandUnavailable) as info:
        await source_for(url, metrics, max_bytes=10_000).fetch(DEMO)
    assert "larger than 10000 bytes" in str(info.value)


def test_parse_exposition_keeps_only_agent_series() -> None:
    """Other exporters' series in the same text are ignored."""
    text = 'up 1\nray_scaler_snapshot_success{cluster="demo"} 1\n'
    assert parse_exposition(text) == [
        Sample("ray_scaler_snapshot_success", {"cluster": "demo"}, 1.0)
    ]


def test_parse_exposition_rejects_negative_values() -> None:
    """A negative count is a SchemaError naming the series."""
    with pytest.raises(SchemaError, match=r"ray_scaler_demand_bundles.*negative"):
        parse_exposition('ray_scaler_demand_bundles{cluster="demo"} -3\n')


# --- credentials ------------------------------------------------------------------------------


async def test_bearer_token_file_is_sent_and_reread(metrics: SourceMetrics, tmp_path: Path) -> None:
    """The agent behind a token check: the rotated token is picked up without a restart."""
    exporter = SampleExporter(encoding.encode(snapshot()))
    registry = exporter.registry
    expected = {"token": "one"}
    seen: list[str] = []

    def answer(h: http.server.BaseHTTPRequestHandler) -> tuple[int, bytes]:
        header = h.headers.get("Authorization", "")
        seen.append(header)
        if header != f"Bearer {expected['token']}":
            return 401, b""
        return 200, generate_latest(registry)

    token = tmp_path / "token"
    token.write_text("one\n")
    with http_server(answer) as url:
        source = source_for(url, metrics, HttpSettings(bearer_token_file=token))
        assert (await source.fetch(DEMO)) == snapshot()
        token.write_text("two-rotated\n")
        expected["token"] = "two-rotated"
        assert (await source.fetch(DEMO)) == snapshot()
    assert seen == ["Bearer one", "Bearer two-rotated"]


async def test_mtls_scrape_with_a_custom_ca(metrics: SourceMetrics, tmp_path: Path) -> None:
    """HTTPS with client certificates required: right CA and cert pass, a wrong CA is tls."""
    certs = make_certs()
    ca, _ = certs.ca.write(tmp_path, "ca")
    wrong_ca, _ = certs.wrong_ca.write(tmp_path, "wrong-ca")
    server_crt, server_key = certs.server.write(tmp_path, "server")
    client_crt, client_key = certs.client.write(tmp_path, "client")
    exporter = SampleExporter(encoding.encode(snapshot()))
    port = free_port()
    server, thread = start_http_server(
        port,
        addr="127.0.0.1",
        registry=exporter.registry,
        certfile=str(server_crt),
        keyfile=str(server_key),
        client_cafile=str(ca),
        client_auth_required=True,
    )
    url = f"https://127.0.0.1:{port}/metrics"
    try:
        good = HttpSettings(ca_file=ca, cert_file=client_crt, key_file=client_key)
        assert (await source_for(url, metrics, good).fetch(DEMO)) == snapshot()
        bad = HttpSettings(ca_file=wrong_ca, cert_file=client_crt, key_file=client_key)
        with pytest.raises(DemandUnavailable) as info:
            await source_for(url, metrics, bad).fetch(DEMO)
        assert isinstance(info.value, FetchError) and info.value.kind == "tls"
        no_cert = HttpSettings(ca_file=ca)
        with pytest.raises(DemandUnavailable):
            await source_for(url, metrics, no_cert, attempts=1).fetch(DEMO)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert count(metrics, "requests", source="scrape", outcome="ok") == 1


async def test_a_missing_token_file_is_an_auth_error_without_retry(
    metrics: SourceMetrics, tmp_path: Path
) -> None:
    """An unreadable credential file fails at once (kind auth), before anything is sent."""
    seen: list[str] = []

    def answer(h: http.server.BaseHTTPRequestHandler) -> tuple[int, bytes]:
        seen.append(h.path)
        return 200, b""

    http_settings = HttpSettings(bearer_token_file=tmp_path / "absent")
    with http_server(answer) as url, pytest.raises(DemandUnavailable) as info:
        await source_for(url, metrics, http_settings).fetch(DEMO)
    assert isinstance(info.value, FetchError) and info.value.kind == "auth"
    assert isinstance(info.value.__cause__, FileNotFoundError)
    assert seen == []


@pytest.mark.parametrize(
    ("exc", "kind", "retried"),
    [
        (DeadlineExceeded("spent"), "timeout", False),
        (TimeoutError(), "timeout", True),
        (requests.Timeout(), "timeout", True),
        (requests.exceptions.SSLError(), "tls", False),
        (requests.ConnectionError(), "connection", True),
        (HttpStatusError(503, ""), "http", True),
        (HttpStatusError(429, ""), "http", True),
        (HttpStatusError(404, ""), "http", False),
        (HttpStatusError(302, ""), "redirect", False),
        (HttpStatusError(308, ""), "redirect", False),
        (HttpStatusError(401, ""), "auth", False),
        (HttpStatusError(403, ""), "auth", False),
        (SchemaError("bad"), "bad_data", False),
        (requests.exceptions.JSONDecodeError("x", "doc", 0), "bad_data", False),
        (FileNotFoundError("token"), "auth", False),
    ],
)
def test_errors_are_classified_and_only_transient_ones_retried(
    exc: BaseException, kind: str, retried: bool
) -> None:
    """The retry policy's table: kind label and whether another attempt is made."""
    assert classify(exc) == (kind, retried)


async def test_a_url_with_credentials_leaves_them_out_of_the_error_text(
    metrics: SourceMetrics,
) -> None:
    """user:password@ in a target URL (built without the CLI, which refuses it): the failure
    text, logged and sent to KEDA, names the host but not the password."""
    url = f"http://scaler:Sup3rS3cret@127.0.0.1:{free_port()}/metrics"
    with pytest.raises(DemandUnavailable) as info:
        await source_for(url, metrics, attempts=1).fetch(DEMO)
    assert "Sup3rS3cret" not in str(info.value) and "scaler:" not in str(info.value)
    assert f"at http://127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}/metrics" in str(info.value)
