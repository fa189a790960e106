"""``keda-ray-scaler serve``: flag validation, and a real process answering over gRPC."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rpc_builders import meta

from keda_ray_scaler.cli import serve, serve_flags
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.server_settings import ServerSettings
from keda_ray_scaler.rpc.tls import TlsFiles

#: Runs the console script's entry point.
RUNNER = """
import sys
from keda_ray_scaler.cli import main
sys.exit(main(sys.argv[1:]))
"""


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve_flags.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


@pytest.mark.parametrize(
    ("argv", "flag", "problem"),
    [
        ([], "--prometheus-url", "required with --source prometheus"),
        (["--source", "scrape"], "--agent-url", "at least one required"),
        (["--source", "scrape", "--agent-url", "ray/Ray=http://x"], "--agent-url", "RFC 1123"),
        (["--source", "scrape", "--agent-url", "ray/ray"], "--agent-url", "NAMESPACE/CLUSTER=URL"),
        (["--source", "scrape", "--agent-url", "ray=http://x"], "--agent-url", "NAMESPACE/CLUSTER"),
        (["--source", "scrape", "--agent-url", "ray/ray=file:///etc"], "--agent-url", "http(s)"),
        (
            ["--prometheus-url", "http://p", "--bearer-token-file", "/nonexistent"],
            "--bearer-token-file",
            "not a readable file",
        ),
        (["--prometheus-url", "ftp://p"], "--prometheus-url", "must be http(s)"),
        (["--prometheus-url", "http://p", "--max-shapes", "0"], "--max-shapes", "must be >= 1"),
        (["--prometheus-url", "http://p", "--max-pg-bundles", "-1"], "--max-pg-bundles", ">= 1"),
    ],
    ids=[
        "no-url",
        "no-agent",
        "bad-cluster",
        "no-equals",
        "no-namespace",
        "file-url",
        "no-token-file",
        "ftp",
        "shapes-cap",
        "bundles-cap",
    ],
)
def test_bad_source_flags_name_the_flag(argv: list[str], flag: str, problem: str) -> None:
    """Source flags are checked before anything starts; the error names the flag."""
    from prometheus_client import CollectorRegistry

    with pytest.raises(ConfigError) as info:
        serve.build_source(parse(*argv), CollectorRegistry())
    assert info.value.field == flag
    assert problem in str(info.value)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--tls-cert", "/nonexistent", "--tls-key", "/nonexistent"], "--tls-cert"),
        (["--tls-cert", "/nonexistent"], "--tls-key"),
        (["--client-ca", "/x"], "--tls-client-ca"),
        (["--port", "70000"], "--port"),
        (["--max-concurrent-rpcs", "0"], "--max-concurrent-rpcs"),
        (["--max-streams-per-peer", "0"], "--max-streams-per-peer"),
        (["--max-streams-per-connection", "0"], "--max-streams-per-connection"),
        (["--client-identity", "keda\n"], "--client-identity"),
        (["--client-identity", " keda"], "--client-identity"),
    ],
    ids=[
        "missing-cert-file",
        "cert-without-key",
        "ca-without-tls",
        "port",
        "rpcs",
        "streams-per-peer",
        "streams-per-connection",
        "identity-with-newline",
        "identity-with-space",
    ],
)
def test_bad_server_flags_name_the_flag(argv: list[str], flag: str) -> None:
    """Listening and TLS flags are validated with the flag in the error."""
    with pytest.raises(ConfigError) as info:
        serve_flags.server_settings(parse(*argv))
    assert info.value.field == flag


def test_agent_urls_are_keyed_by_namespace_and_cluster() -> None:
    """Two namespaces may each have a cluster named demo: two agents, two keys."""
    urls = serve.parse_agent_urls(["team-a/demo=http://a/metrics", "team-b/demo=http://b/metrics"])
    assert urls == {
        ClusterRef("team-a", "demo"): "http://a/metrics",
        ClusterRef("team-b", "demo"): "http://b/metrics",
    }


@pytest.mark.parametrize("value", ["ops", "ops=", "Ops=ray", "ops=ray/demo"])
def test_bad_cross_namespace_grants_name_the_flag(value: str) -> None:
    """--allow-cross-namespace takes READER_NS=CLUSTER_NS, both namespace names."""
    with pytest.raises(ConfigError, match="READER_NS=CLUSTER_NS") as info:
        serve_flags.namespace_grants(parse("--allow-cross-namespace", value))
    assert info.value.field == "--allow-cross-namespace"


def test_by_default_no_namespace_reads_another() -> None:
    """No flag: only same-namespace reads; a flag grants exactly its pair."""
    assert serve_flags.namespace_grants(parse()).pairs == frozenset()
    grants = serve_flags.namespace_grants(parse("--allow-cross-namespace", "ops=ray"))
    assert (grants.allows("ops", "ray"), grants.allows("ray", "ops")) == (True, False)


def test_a_negative_clock_skew_is_refused() -> None:
    """--max-clock-skew below 0 would refuse every snapshot: a flag error."""
    with pytest.raises(ConfigError) as info:
        serve_flags.target_settings(parse("--max-clock-skew", "-1"))
    assert info.value.field == "--max-clock-skew"
    assert serve_flags.target_settings(parse()).max_clock_skew_s == 5.0


def test_max_age_must_exceed_the_refresh_interval() -> None:
    """--max-age 5 with --refresh-interval 5 is refused."""
    with pytest.raises(ConfigError) as info:
        serve_flags.target_settings(parse("--max-age", "5", "--refresh-interval", "5"))
    assert info.value.field == "--max-age"


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUNNER, *argv], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--prometheus-url", "http://scaler:Sup3rS3cret@prometheus:9090"],
        ["--source", "scrape", "--agent-url", "ray/ray=http://scaler:Sup3rS3cret@agent/metrics"],
        ["--source", "scrape", "--agent-url", "http://scaler:Sup3rS3cret@agent/metrics"],
    ],
    ids=["prometheus-url", "agent-url", "agent-url-without-name"],
)
def test_credentials_in_a_url_are_refused_naming_the_file_flags(argv: list[str]) -> None:
    """user:password@ in a URL: exit 2, one line naming the flag and the file flags to use,
    and the password never printed."""
    done = run_cli("serve", *argv)
    flag = "--prometheus-url" if "--prometheus-url" in argv else "--agent-url"
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"keda-ray-scaler serve: {flag}: credentials in the URL are refused (they would be "
        "logged and sent to KEDA); use --basic-auth-user with --basic-auth-password-file, or "
        "--bearer-token-file"
    ]


def test_plaintext_and_unauthenticated_tls_are_named_by_the_flag_that_closes_them(
    tmp_path: Path,
) -> None:
    """No TLS: a warning naming --tls-cert; TLS without a client CA: one naming
    --tls-client-ca; mTLS: no warning."""
    cert, key, ca = (tmp_path / n for n in ("c.pem", "k.pem", "ca.pem"))
    plaintext = serve.insecure_defaults(ServerSettings())
    server_only = serve.insecure_defaults(ServerSettings(tls=TlsFiles(cert, key)))
    mutual = serve.insecure_defaults(ServerSettings(tls=TlsFiles(cert, key, ca)))
    assert [flag for flag, _ in plaintext] == ["--tls-cert"]
    assert "without TLS" in plaintext[0][1]
    assert [flag for flag, _ in server_only] == ["--tls-client-ca"]
    assert "without client authentication" in server_only[0][1]
    assert mutual == []


def test_mtls_serving_every_certificate_of_the_ca_is_named_by_the_identity_flag(
    tmp_path: Path,
) -> None:
    """mTLS with --client-identity '': a warning naming --client-identity; the flags pass
    the identity, the stream bounds and reflection to the settings."""
    cert, key, ca = (tmp_path / n for n in ("c.pem", "k.pem", "ca.pem"))
    anyone = ServerSettings(tls=TlsFiles(cert, key, ca), client_identity="")
    assert [flag for flag, _ in serve.insecure_defaults(anyone)] == ["--client-identity"]
    settings = serve_flags.server_settings(
        parse(
            "--client-identity=keda-operator",
            "--max-streams-per-peer=7",
            "--max-streams-per-connection=5",
            "--reflection",
        )
    )
    assert (settings.client_identity, settings.reflection) == ("keda-operator", True)
    assert (settings.max_streams_per_peer, settings.max_streams_per_connection) == (7, 5)


def test_bad_flag_exits_2_with_one_line() -> None:
    """A bad flag: exit code 2 and exactly one line on stderr naming it."""
    done = run_cli("serve", "--source", "scrape")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "keda-ray-scaler serve: --agent-url: at least one required with --source scrape"
    ]


@pytest.fixture
def serve_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, object]]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUNNER,
            "serve",
            "--host=127.0.0.1",
            "--port=0",
            "--health-port=0",
            "--metrics-port=-1",
            "--source=scrape",
            "--agent-url=ray/ray=http://127.0.0.1:9/metrics",
            "--query-attempts=1",
            "--query-deadline=0.5",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        assert proc.stderr is not None
        started: dict[str, object] = {}
        for line in proc.stderr:
            event = json.loads(line)
            if event.get("event") == "scaler serving":
                started = event
                break
        assert started, "serve never reported it was serving"
        # the warning follows at once, once the ports are bound (plaintext: one warning)
        warning = json.loads(proc.stderr.readline())
        assert warning["level"] == "warning"
        started["warned_flags"] = [warning["flag"]]
        yield proc, started
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)


async def test_serve_process_answers_and_stops_on_sigterm(
    serve_process: tuple[subprocess.Popen[str], dict[str, object]],
) -> None:
    """The real process: GetMetricSpec answers, an unreachable agent is UNAVAILABLE,
    health is SERVING on the probe port, SIGTERM exits 0 and stops the refresher child."""
    proc, started = serve_process
    assert (started["level"], started["tls"]) == ("info", False)
    assert started["warned_flags"] == ["--tls-cert"]  # said at start, naming the flag
    async with grpc.aio.insecure_channel(f"127.0.0.1:{started['port']}") as channel:
        stub = pb_grpc.ExternalScalerStub(channel)
        spec = await stub.GetMetricSpec(pb.ScaledObjectRef(scalerMetadata=meta()), timeout=5)
        assert spec.metricSpecs[0].metricName == "ray-ray.cpu"
        ref = pb.ScaledObjectRef(namespace="ray", scalerMetadata=meta())
        # until the child's first refresh has failed (and logged): "no data yet" before it
        deadline = time.monotonic() + 60
        while True:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref), timeout=5)
            assert info.value.code() is grpc.StatusCode.UNAVAILABLE
            details = info.value.details() or ""
            if "no data yet" not in details or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        assert "no data yet" not in details, details
    async with grpc.aio.insecure_channel(f"127.0.0.1:{started['health_port']}") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=5
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    os.kill(proc.pid, signal.SIGTERM)
    assert await asyncio.to_thread(proc.wait, 30) == 0
    assert proc.stderr is not None
    events = [json.loads(line) for line in proc.stderr.read().splitlines()]
    children = [e["pid"] for e in events if e.get("event") == "refresher process started"]
    assert len(children) == 1, "one refresher child process, started once"
    refresh_failed = [e for e in events if e.get("event") == "refresh failed"]
    assert refresh_failed and refresh_failed[0]["cluster"] == "ray"  # the child logs JSON too
    with pytest.raises(ProcessLookupError):  # stopped with the server, not left behind
        os.kill(children[0], 0)
