"""``keda-ray-scaler serve``: the KEDA external scaler (gRPC), reading the agents' metrics.

Flags only (no environment variables). Bad flags exit 2 with one line; SIGTERM and SIGINT stop
gracefully (health NOT_SERVING, streams ended, calls in flight finished within ``--grace``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import signal
import time
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import structlog
from prometheus_client import CollectorRegistry

from keda_ray_scaler.cli import SUMMARY, add_logging_flags, configure_logging_from
from keda_ray_scaler.errors import BindError, ConfigError
from keda_ray_scaler.identity import ClusterRef, NamespaceGrants
from keda_ray_scaler.rpc.refresher import SourceFactory
from keda_ray_scaler.rpc.server import ScalerServer, ServerSettings, TlsFiles
from keda_ray_scaler.rpc.targets import TargetSettings
from keda_ray_scaler.sources.base import Source
from keda_ray_scaler.sources.caps import DataCaps
from keda_ray_scaler.sources.prometheus import PrometheusSettings, PrometheusSource
from keda_ray_scaler.sources.scrape import ScrapeSettings, ScrapeSource
from keda_ray_scaler.sources.transport import HttpSettings, RetrySettings, source_metrics

_WHERE = "serve"
_log = structlog.get_logger(__name__)

#: ``(flag, DataCaps field, help)`` of each cap on one Ray cluster's series.
_CAP_FLAGS: Final = (
    ("--max-series", "max_series", "series of one Ray cluster"),
    ("--max-worker-groups", "max_worker_groups", "worker groups of one Ray cluster"),
    ("--max-shapes", "max_shapes", "demand shapes of one Ray cluster (the agent's --max-shapes)"),
    ("--max-placement-groups", "max_placement_groups", "placement-group shapes of one cluster"),
    ("--max-pg-bundles", "max_bundles_per_placement_group", "bundles of one placement group"),
    ("--max-resource-names", "max_resource_names", "distinct resource names of one cluster"),
    ("--max-name-chars", "max_name_chars", "characters of a group, pod or resource name"),
)
#: Where credentials go instead of a URL.
_CREDENTIAL_FLAGS: Final = (
    "--basic-auth-user with --basic-auth-password-file, or --bearer-token-file"
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``serve`` and its flags."""
    p = subparsers.add_parser(
        "serve",
        help=SUMMARY["serve"],
        description="Answer KEDA with each Ray worker group's target replicas.",
    )
    _listening_flags(p)
    _source_flags(p)
    _behaviour_flags(p)
    _bound_flags(p)
    _connection_flags(p)
    add_logging_flags(p)


def _listening_flags(p: argparse.ArgumentParser) -> None:
    """Where and how ``serve`` listens."""
    g = p.add_argument_group("listening")
    g.add_argument("--host", default="0.0.0.0", help="address to bind (default: all)")
    g.add_argument("--port", type=int, default=9090, help="gRPC port (default: 9090)")
    g.add_argument(
        "--metrics-port", type=int, default=9100, help="/metrics port; -1 disables (9100)"
    )
    g.add_argument(
        "--health-port",
        type=int,
        default=None,
        help="extra plaintext port serving only grpc.health.v1, for kubelet probes",
    )
    g.add_argument("--tls-cert", type=Path, help="server certificate (PEM); enables TLS")
    g.add_argument("--tls-key", type=Path, help="server private key (PEM)")
    g.add_argument(
        "--tls-client-ca",
        "--client-ca",
        dest="tls_client_ca",
        type=Path,
        help="CA that signs client certificates; enables mTLS (needs --tls-cert)",
    )


def _source_flags(p: argparse.ArgumentParser) -> None:
    """Where the Ray clusters' data comes from."""
    g = p.add_argument_group("data source")
    g.add_argument("--source", choices=("prometheus", "scrape"), default="prometheus")
    g.add_argument("--prometheus-url", help="Prometheus base URL (source prometheus)")
    g.add_argument(
        "--agent-url",
        action="append",
        default=[],
        metavar="NAMESPACE/CLUSTER=URL",
        help="agent /metrics URL of the Ray cluster CLUSTER in NAMESPACE (source scrape; "
        "repeat per cluster); only ScaledObjects of NAMESPACE read it",
    )
    g.add_argument("--bearer-token-file", type=Path, help="bearer token, re-read on change")
    g.add_argument("--basic-auth-user", help="HTTP basic auth user")
    g.add_argument("--basic-auth-password-file", type=Path, help="HTTP basic auth password file")
    g.add_argument("--ca-file", type=Path, help="CA bundle verifying Prometheus / the agents")
    g.add_argument("--client-cert", type=Path, help="client certificate for Prometheus mTLS")
    g.add_argument("--client-key", type=Path, help="client key for Prometheus mTLS")
    g.add_argument(
        "--insecure-skip-verify", action="store_true", help="do not verify the server certificate"
    )
    g.add_argument("--query-deadline", type=float, default=2.5, help="seconds per fetch (2.5)")
    g.add_argument("--query-attempts", type=int, default=3, help="tries per fetch (3)")


def _behaviour_flags(p: argparse.ArgumentParser) -> None:
    """Refresh, freshness and who reads what."""
    g = p.add_argument_group("behaviour")
    g.add_argument(
        "--refresh-interval", type=float, default=5.0, help="seconds between refreshes (5)"
    )
    g.add_argument("--max-age", type=float, default=60.0, help="max agent snapshot age, s (60)")
    g.add_argument(
        "--max-clock-skew",
        type=float,
        default=5.0,
        help="seconds an agent snapshot time may be ahead of this clock; beyond: UNAVAILABLE (5)",
    )
    g.add_argument(
        "--allow-cross-namespace",
        action="append",
        default=[],
        metavar="READER_NS=CLUSTER_NS",
        help="let ScaledObjects of READER_NS read Ray clusters of CLUSTER_NS (their "
        "rayClusterNamespace); default: each namespace reads only its own clusters",
    )
    g.add_argument(
        "--refresh-in-process",
        action="store_true",
        help="fetch and plan on the gRPC process itself instead of a child process "
        "(one process, less memory; RPC latency then includes fetching and planning)",
    )
    g.add_argument(
        "--stream-debounce",
        type=float,
        default=None,
        help="seconds inactive before StreamIsActive sends false (2 x refresh interval)",
    )


def _bound_flags(p: argparse.ArgumentParser) -> None:
    """Caps on what others can make the scaler spend."""
    g = p.add_argument_group(
        "bounds on what others can make the scaler spend",
        "A Ray cluster whose series exceed a cap is UNAVAILABLE (naming the cap), never "
        "truncated; a cluster beyond a quota is UNAVAILABLE without a query.",
    )
    caps = DataCaps()
    for flag, field, what in _CAP_FLAGS:
        g.add_argument(
            flag, type=int, default=getattr(caps, field), help=f"{what} ({getattr(caps, field)})"
        )
    limits = TargetSettings()
    g.add_argument(
        "--max-clusters",
        type=int,
        default=limits.max_clusters,
        help=f"Ray clusters refreshed at most, all namespaces ({limits.max_clusters})",
    )
    g.add_argument(
        "--max-clusters-per-namespace",
        type=int,
        default=limits.max_clusters_per_namespace,
        help="Ray clusters of one namespace refreshed at most: one tenant cannot fill "
        f"--max-clusters for the others ({limits.max_clusters_per_namespace})",
    )
    g.add_argument(
        "--unknown-rechecks-per-second",
        type=float,
        default=limits.unknown_rechecks_per_s,
        help="fetches of Ray clusters the source did not know, all together; each such "
        f"cluster is asked about at most every {limits.not_found_recheck_s:g} s "
        f"({limits.unknown_rechecks_per_s:g})",
    )
    g.add_argument(
        "--max-health-watches",
        type=int,
        default=ServerSettings().max_health_watches,
        help="grpc.health.v1 Watch streams at once on --port (none on --health-port, "
        f"which serves Check only) ({ServerSettings().max_health_watches})",
    )


def _connection_flags(p: argparse.ArgumentParser) -> None:
    """gRPC connection limits."""
    g = p.add_argument_group("connections")
    g.add_argument("--max-connection-age", type=float, default=300.0, help="seconds (300)")
    g.add_argument("--max-concurrent-rpcs", type=int, default=10_000, help="(10000)")
    g.add_argument("--max-concurrent-streams", type=int, default=4096, help="per connection")
    g.add_argument("--max-message-bytes", type=int, default=1024 * 1024, help="(1 MiB)")
    g.add_argument("--grace", type=float, default=10.0, help="graceful stop, seconds (10)")


def run(args: argparse.Namespace) -> int:
    """Build everything from flags, then serve until SIGTERM/SIGINT."""
    configure_logging_from(args, _WHERE)
    registry = CollectorRegistry()
    grants = namespace_grants(args)
    source: Source | None = build_source(args, registry)  # validates every flag here
    settings = server_settings(args)
    factory: SourceFactory | None = None
    if not args.refresh_in_process:
        _close(source)  # the child builds its own from the same flags
        source, factory = None, functools.partial(_refresher_source, args)
    server = ScalerServer(
        source,
        source_factory=factory,
        clock=time.time,
        settings=settings,
        target_settings=target_settings(args),
        registry=registry,
        stream_debounce_s=args.stream_debounce,
        grants=grants,
    )
    try:
        asyncio.run(_serve(server, args.grace, insecure_defaults(settings)))
    except BindError as exc:
        flag = "--" + exc.setting.replace("_", "-")
        raise ConfigError(_WHERE, flag, f"cannot listen on {exc.address}: {exc.problem}") from exc
    finally:
        _close(source)
    return 0


def _refresher_source(args: argparse.Namespace, registry: CollectorRegistry) -> Source:
    """The refresher process's source (called in that process): same logging, same flags."""
    configure_logging_from(args, _WHERE)
    return build_source(args, registry)


def _close(source: Source | None) -> None:
    close = getattr(source, "close", None)
    if close is not None:
        close()


async def _serve(server: ScalerServer, grace_s: float, warnings: list[tuple[str, str]]) -> None:
    await server.start()
    # Said once the ports are bound: a port that cannot be bound is the only line printed.
    for flag, message in warnings:
        _log.warning(message, flag=flag)
    # What exists now lives as long as the process: keep it out of the collector's full
    # passes (measured: a gen-2 collection of ~30 ms every few seconds at 2,000 RPC/s).
    gc.collect()
    gc.freeze()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    waiting = asyncio.create_task(server.wait())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    await server.stop(grace_s)
    with contextlib.suppress(asyncio.CancelledError):
        await waiting


def _check(ok: bool, flag: str, problem: str) -> None:
    if not ok:
        raise ConfigError(_WHERE, flag, problem)


def server_settings(args: argparse.Namespace) -> ServerSettings:
    """ServerSettings from flags; ConfigError naming the flag."""
    for flag in ("port", "metrics_port", "health_port"):
        value = getattr(args, flag)
        low = -1 if flag == "metrics_port" else 0
        _check(value is None or low <= value <= 65535, "--" + flag.replace("_", "-"), "bad port")
    tls: TlsFiles | None = None
    if args.tls_cert or args.tls_key:
        _check(
            bool(args.tls_cert and args.tls_key),
            "--tls-key",
            "--tls-cert and --tls-key go together",
        )
        for flag, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
            _check(path.is_file(), flag, f"{path} is not a readable file")
        if args.tls_client_ca:
            _check(
                args.tls_client_ca.is_file(),
                "--tls-client-ca",
                f"{args.tls_client_ca} is not a readable file",
            )
        tls = TlsFiles(args.tls_cert, args.tls_key, args.tls_client_ca)
    else:
        _check(args.tls_client_ca is None, "--tls-client-ca", "needs --tls-cert and --tls-key")
    for flag in ("max_connection_age", "grace"):
        _check(getattr(args, flag) >= 0, "--" + flag.replace("_", "-"), "must be >= 0")
    for flag in ("max_concurrent_rpcs", "max_concurrent_streams", "max_message_bytes"):
        _check(getattr(args, flag) >= 1, "--" + flag.replace("_", "-"), "must be >= 1")
    return ServerSettings(
        host=args.host,
        port=args.port,
        metrics_host=args.host,
        metrics_port=None if args.metrics_port < 0 else args.metrics_port,
        health_port=args.health_port,
        tls=tls,
        max_message_bytes=args.max_message_bytes,
        max_concurrent_rpcs=args.max_concurrent_rpcs,
        max_concurrent_streams=args.max_concurrent_streams,
        max_connection_age_s=args.max_connection_age,
        stop_grace_s=args.grace,
        max_health_watches=args.max_health_watches,
    )


def insecure_defaults(settings: ServerSettings) -> list[tuple[str, str]]:
    """``(flag, warning)`` for each way the gRPC port is open to anyone who reaches it.

    Every tenant's targets can be read there (and without TLS, KEDA's calls can be tampered
    with): said once at start, naming the flag that closes it.
    """
    if settings.tls is None:
        return [
            (
                "--tls-cert",
                "gRPC without TLS: any client that reaches the port reads every Ray cluster's "
                "targets, in plaintext; give --tls-cert, --tls-key and --tls-client-ca",
            )
        ]
    if settings.tls.client_ca_file is None:
        return [
            (
                "--tls-client-ca",
                "TLS without client authentication: any client that reaches the port reads "
                "every Ray cluster's targets; give --tls-client-ca",
            )
        ]
    return []


def target_settings(args: argparse.Namespace) -> TargetSettings:
    """TargetSettings from flags; ConfigError naming the flag."""
    _check(args.refresh_interval > 0, "--refresh-interval", "must be > 0")
    _check(args.max_age > args.refresh_interval, "--max-age", "must exceed --refresh-interval")
    _check(args.stream_debounce is None or args.stream_debounce >= 0, "--stream-debounce", ">= 0")
    _check(args.max_clock_skew >= 0, "--max-clock-skew", "must be >= 0")
    for flag in ("max_clusters", "max_clusters_per_namespace"):
        _check(getattr(args, flag) >= 1, "--" + flag.replace("_", "-"), "must be >= 1")
    _check(args.unknown_rechecks_per_second > 0, "--unknown-rechecks-per-second", "must be > 0")
    return TargetSettings(
        refresh_interval_s=args.refresh_interval,
        max_age_s=args.max_age,
        fetch_timeout_s=max(10.0, 2 * args.query_deadline),
        max_clock_skew_s=args.max_clock_skew,
        max_clusters=args.max_clusters,
        max_clusters_per_namespace=args.max_clusters_per_namespace,
        unknown_rechecks_per_s=args.unknown_rechecks_per_second,
    )


def data_caps(args: argparse.Namespace) -> DataCaps:
    """DataCaps from the ``--max-series`` ... flags; ConfigError naming the flag."""
    values: dict[str, int] = {}
    for flag, field, _ in _CAP_FLAGS:
        values[field] = getattr(args, _dest(flag))
        _check(values[field] >= 1, flag, "must be >= 1")
    return DataCaps(**values)


def _dest(flag: str) -> str:
    """The argparse destination of ``flag`` (``--max-pg-bundles`` -> ``max_pg_bundles``)."""
    return flag.removeprefix("--").replace("-", "_")


def check_no_credentials(flag: str, url: str) -> None:
    """ConfigError naming ``flag`` when ``url`` carries userinfo; the URL is not echoed.

    Credentials in a URL end up in every log line and error text that quotes it.
    """
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return  # the http(s) check names what is wrong with it
    _check(
        "@" not in netloc,
        flag,
        f"credentials in the URL are refused (they would be logged and sent to KEDA); "
        f"use {_CREDENTIAL_FLAGS}",
    )


def namespace_grants(args: argparse.Namespace) -> NamespaceGrants:
    """``--allow-cross-namespace READER_NS=CLUSTER_NS`` flags; ConfigError naming the flag."""
    return NamespaceGrants.parse(args.allow_cross_namespace, _WHERE, "--allow-cross-namespace")


def parse_agent_urls(values: list[str]) -> dict[ClusterRef, str]:
    """``NAMESPACE/CLUSTER=URL`` flags as a dict; ConfigError naming ``--agent-url``."""
    out: dict[ClusterRef, str] = {}
    for value in values:
        name, eq, url = value.partition("=")
        check_no_credentials("--agent-url", url if eq else value)
        _check(bool(eq and name and url), "--agent-url", f"{value!r} is not NAMESPACE/CLUSTER=URL")
        cluster = ClusterRef.parse(name, _WHERE, "--agent-url")
        _check(cluster not in out, "--agent-url", f"cluster {cluster} given twice")
        _check(url.startswith(("http://", "https://")), "--agent-url", f"{url!r} is not http(s)")
        out[cluster] = url
    return out


def build_source(args: argparse.Namespace, registry: CollectorRegistry) -> Source:
    """The data source the flags describe, its metrics in ``registry``."""
    http_fields: dict[str, Any] = {
        "ca_file": args.ca_file,
        "cert_file": args.client_cert,
        "key_file": args.client_key,
        "bearer_token_file": args.bearer_token_file,
        "basic_auth_user": args.basic_auth_user,
        "basic_auth_password_file": args.basic_auth_password_file,
        "insecure_skip_verify": args.insecure_skip_verify,
    }
    for key, value in http_fields.items():
        if isinstance(value, Path):
            flag = {"cert_file": "--client-cert", "key_file": "--client-key"}.get(
                key, "--" + key.replace("_", "-")
            )
            _check(value.is_file(), flag, f"{value} is not a readable file")
    try:
        http = HttpSettings(**http_fields)
        retry = RetrySettings(attempts=args.query_attempts, deadline_s=args.query_deadline)
    except ValueError as exc:
        raise ConfigError(_WHERE, "", str(exc)) from exc
    caps = data_caps(args)
    metrics = source_metrics(registry)
    if args.source == "prometheus":
        _check(bool(args.prometheus_url), "--prometheus-url", "required with --source prometheus")
        check_no_credentials("--prometheus-url", args.prometheus_url)
        _check(not args.agent_url, "--agent-url", "only with --source scrape")
        try:
            settings = PrometheusSettings(
                url=args.prometheus_url, http=http, retry=retry, caps=caps
            )
        except ValueError as exc:
            raise ConfigError(_WHERE, "--prometheus-url", str(exc)) from exc
        return PrometheusSource(settings, metrics=metrics)
    _check(bool(args.agent_url), "--agent-url", "at least one required with --source scrape")
    _check(not args.prometheus_url, "--prometheus-url", "only with --source prometheus")
    targets = parse_agent_urls(args.agent_url)
    scrape = ScrapeSettings(targets=targets, http=http, retry=retry, caps=caps)
    return ScrapeSource(scrape, metrics=metrics)
