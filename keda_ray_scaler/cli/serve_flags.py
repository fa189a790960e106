"""The flags of ``keda-ray-scaler serve`` and the settings they make, each checked.

``add_parser`` registers the flags (:mod:`keda_ray_scaler.cli` imports this module alone to build
the parser, so ``serve --help`` and a bad flag load no data source); ``server_settings``,
``target_settings``, ``data_caps`` and ``namespace_grants`` turn them into the server's settings,
raising :class:`~keda_ray_scaler.errors.ConfigError` naming the flag. The scaler itself, and its
data source, are :mod:`keda_ray_scaler.cli.serve`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from keda_ray_scaler.cli import add_command, add_logging_flags
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import NamespaceGrants
from keda_ray_scaler.rpc.server_settings import ServerSettings
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.tls import TlsFiles
from keda_ray_scaler.sources.series_caps import DataCaps

#: The ``where`` of serve's ConfigErrors: its flags' and its start-up's.
WHERE: Final = "serve"
#: What ``serve --help`` says the command does.
_DESCRIPTION: Final = "Answer KEDA with each Ray worker group's target replicas."

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


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``serve`` and its flags (:data:`_FLAG_GROUPS`)."""
    add_command(subparsers, "serve", _DESCRIPTION, *_FLAG_GROUPS)


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
        "cluster is asked about again after one refresh interval, doubling at each miss to "
        f"{limits.not_found_recheck_s:g} s ({limits.unknown_rechecks_per_s:g})",
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


#: The flag groups of ``serve``, in ``--help`` order.
_FLAG_GROUPS: Final = (
    _listening_flags,
    _source_flags,
    _behaviour_flags,
    _bound_flags,
    _connection_flags,
    add_logging_flags,
)


def check(ok: bool, flag: str, problem: str) -> None:
    """A :class:`ConfigError` naming ``flag`` and ``problem`` unless ``ok``."""
    if not ok:
        raise ConfigError(WHERE, flag, problem)


def server_settings(args: argparse.Namespace) -> ServerSettings:
    """ServerSettings from flags; ConfigError naming the flag."""
    for flag in ("port", "metrics_port", "health_port"):
        value = getattr(args, flag)
        low = -1 if flag == "metrics_port" else 0
        check(value is None or low <= value <= 65535, "--" + flag.replace("_", "-"), "bad port")
    tls: TlsFiles | None = None
    if args.tls_cert or args.tls_key:
        check(
            bool(args.tls_cert and args.tls_key),
            "--tls-key",
            "--tls-cert and --tls-key go together",
        )
        for flag, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
            check(path.is_file(), flag, f"{path} is not a readable file")
        if args.tls_client_ca:
            check(
                args.tls_client_ca.is_file(),
                "--tls-client-ca",
                f"{args.tls_client_ca} is not a readable file",
            )
        tls = TlsFiles(args.tls_cert, args.tls_key, args.tls_client_ca)
    else:
        check(args.tls_client_ca is None, "--tls-client-ca", "needs --tls-cert and --tls-key")
    for flag in ("max_connection_age", "grace"):
        check(getattr(args, flag) >= 0, "--" + flag.replace("_", "-"), "must be >= 0")
    for flag in ("max_concurrent_rpcs", "max_concurrent_streams", "max_message_bytes"):
        check(getattr(args, flag) >= 1, "--" + flag.replace("_", "-"), "must be >= 1")
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


def target_settings(args: argparse.Namespace) -> TargetSettings:
    """TargetSettings from flags; ConfigError naming the flag."""
    check(args.refresh_interval > 0, "--refresh-interval", "must be > 0")
    check(args.max_age > args.refresh_interval, "--max-age", "must exceed --refresh-interval")
    check(args.stream_debounce is None or args.stream_debounce >= 0, "--stream-debounce", ">= 0")
    check(args.max_clock_skew >= 0, "--max-clock-skew", "must be >= 0")
    for flag in ("max_clusters", "max_clusters_per_namespace"):
        check(getattr(args, flag) >= 1, "--" + flag.replace("_", "-"), "must be >= 1")
    check(args.unknown_rechecks_per_second > 0, "--unknown-rechecks-per-second", "must be > 0")
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
        check(values[field] >= 1, flag, "must be >= 1")
    return DataCaps(**values)


def _dest(flag: str) -> str:
    """The argparse destination of ``flag`` (``--max-pg-bundles`` -> ``max_pg_bundles``)."""
    return flag.removeprefix("--").replace("-", "_")


def namespace_grants(args: argparse.Namespace) -> NamespaceGrants:
    """``--allow-cross-namespace READER_NS=CLUSTER_NS`` flags; ConfigError naming the flag."""
    return NamespaceGrants.parse(args.allow_cross_namespace, WHERE, "--allow-cross-namespace")
