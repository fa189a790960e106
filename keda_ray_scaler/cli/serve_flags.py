"""The flags of ``keda-ray-scaler serve`` and the settings they make, each checked.

``add_parser`` registers the flags (:mod:`keda_ray_scaler.cli` imports this module alone to build
the parser, so ``serve --help`` and a bad flag load no data source); ``server_settings``,
``target_settings``, ``data_caps`` and ``namespace_grants`` turn them into the server's settings,
raising :class:`~keda_ray_scaler.errors.ConfigError` naming the flag. Each default is the settings
type's (:class:`ServerSettings`, :class:`TargetSettings`, :class:`RetrySettings`,
:class:`DataCaps`), read here, never written twice. TLS and who may call are
:mod:`keda_ray_scaler.cli.serve_access_flags`; the scaler itself, and its data source,
:mod:`keda_ray_scaler.cli.serve`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from keda_ray_scaler.cli import add_command, add_logging_flags
from keda_ray_scaler.cli.serve_access_flags import add_access_flags, client_identity, tls_files
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import NamespaceGrants
from keda_ray_scaler.rpc.server_settings import ServerSettings
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.sources.promql import OriginSettings
from keda_ray_scaler.sources.series_caps import DataCaps
from keda_ray_scaler.sources.source_settings import RetrySettings

#: The ``where`` of serve's ConfigErrors: its flags' and its start-up's.
WHERE: Final = "serve"
#: Bytes in a MiB, as ``--max-message-bytes``'s help counts them.
_MIB: Final = 1024 * 1024
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
    server = ServerSettings()
    g.add_argument("--host", default=server.host, help="address to bind (default: all)")
    _number(g, "--port", int, server.port, "gRPC port (default: {})")
    _number(g, "--metrics-port", int, server.metrics_port, "/metrics port; -1 disables ({})")
    g.add_argument(
        "--health-port",
        type=int,
        default=server.health_port,
        help="extra plaintext port serving only grpc.health.v1, for kubelet probes",
    )


def _source_flags(p: argparse.ArgumentParser) -> None:
    """Where the Ray clusters' data comes from."""
    g = p.add_argument_group("data source")
    g.add_argument("--source", choices=("prometheus", "scrape"), default="prometheus")
    g.add_argument("--prometheus-url", help="Prometheus base URL (source prometheus)")
    origin = OriginSettings()
    g.add_argument(
        "--prometheus-job",
        default=origin.job,
        help="the scrape job of the agents: only its series are read, so another job's (a "
        "Pushgateway's, kubernetes-pods) never enter; empty: any job (source prometheus)",
    )
    g.add_argument(
        "--accept-agents-without-digest",
        action="store_true",
        default=origin.accept_undigested,
        help="plan on Ray clusters whose series carry no snapshot digest (agents older than "
        "it) instead of answering UNAVAILABLE (source prometheus)",
    )
    g.add_argument(
        "--seal-master-key-file",
        type=Path,
        help="master key (hex) from which each Ray cluster's seal key is derived (`seal-key`): "
        "a cluster's series count only when sealed with its own key, so no other writer can "
        "seal a forgery (source prometheus); unset: unkeyed seals",
    )
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
    retry = RetrySettings()
    _number(g, "--query-deadline", float, retry.deadline_s, "seconds per fetch ({:g})")
    _number(g, "--query-attempts", int, retry.attempts, "tries per fetch ({})")


def _behaviour_flags(p: argparse.ArgumentParser) -> None:
    """Refresh, freshness and who reads what."""
    g = p.add_argument_group("behaviour")
    target = TargetSettings()
    _number(
        g,
        "--refresh-interval",
        float,
        target.refresh_interval_s,
        "seconds between refreshes ({:g})",
    )
    _number(g, "--max-age", float, target.max_age_s, "max agent snapshot age, s ({:g})")
    skew = "seconds an agent snapshot time may be ahead of this clock; beyond: UNAVAILABLE ({:g})"
    _number(g, "--max-clock-skew", float, target.max_clock_skew_s, skew)
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
        _number(g, flag, int, getattr(caps, field), what + " ({})")
    limits = TargetSettings()
    clusters = "Ray clusters refreshed at most, all namespaces ({})"
    _number(g, "--max-clusters", int, limits.max_clusters, clusters)
    quota = (
        "Ray clusters of one namespace refreshed at most: one tenant cannot fill "
        "--max-clusters for the others ({})"
    )
    _number(g, "--max-clusters-per-namespace", int, limits.max_clusters_per_namespace, quota)
    rechecks = (
        "fetches of Ray clusters the source did not know, all together; each such cluster is "
        "asked about again after one refresh interval, doubling at each miss to "
        f"{limits.not_found_recheck_s:g} s ({{:g}})"
    )
    _number(g, "--unknown-rechecks-per-second", float, limits.unknown_rechecks_per_s, rechecks)
    watches = (
        "grpc.health.v1 Watch streams at once on --port (none on --health-port, "
        "which serves Check only) ({})"
    )
    _number(g, "--max-health-watches", int, ServerSettings().max_health_watches, watches)


def _connection_flags(p: argparse.ArgumentParser) -> None:
    """gRPC connection limits."""
    g = p.add_argument_group("connections")
    server = ServerSettings()
    _number(g, "--max-connection-age", float, server.max_connection_age_s, "seconds ({:g})")
    _number(g, "--max-concurrent-rpcs", int, server.max_concurrent_rpcs, "({})")
    _number(g, "--max-concurrent-streams", int, server.max_concurrent_streams, "per connection")
    streams = (
        "StreamIsActive and StreamMetricSpec streams open at once {}; beyond: "
        "RESOURCE_EXHAUSTED (KEDA opens both per external-push ScaledObject) ({})"
    )
    per_connection = streams.format("on one connection", server.max_streams_per_connection)
    _number(
        g, "--max-streams-per-connection", int, server.max_streams_per_connection, per_connection
    )
    per_peer = streams.format("from one client address", server.max_streams_per_peer)
    _number(g, "--max-streams-per-peer", int, server.max_streams_per_peer, per_peer)
    size = f"({server.max_message_bytes / _MIB:g} MiB)"
    _number(g, "--max-message-bytes", int, server.max_message_bytes, size)
    _number(g, "--grace", float, server.stop_grace_s, "graceful stop, seconds ({:g})")


def _number(
    g: argparse._ArgumentGroup,
    flag: str,
    kind: type[int] | type[float],
    default: float | None,
    help_: str,
) -> None:
    """A number ``flag`` of ``kind`` whose default is a settings type's, read from it (never
    written here); ``help_`` shows it where it says ``{}``."""
    g.add_argument(flag, type=kind, default=default, help=help_.format(default))


#: The flag groups of ``serve``, in ``--help`` order.
_FLAG_GROUPS: Final = (
    _listening_flags,
    add_access_flags,
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
    tls = tls_files(args)
    for flag in ("max_connection_age", "grace"):
        check(getattr(args, flag) >= 0, "--" + flag.replace("_", "-"), "must be >= 0")
    at_least_one = ("max_concurrent_rpcs", "max_concurrent_streams", "max_message_bytes")
    for flag in (*at_least_one, "max_streams_per_connection", "max_streams_per_peer"):
        check(getattr(args, flag) >= 1, "--" + flag.replace("_", "-"), "must be >= 1")
    return ServerSettings(
        host=args.host,
        port=args.port,
        metrics_host=args.host,
        metrics_port=None if args.metrics_port < 0 else args.metrics_port,
        health_port=args.health_port,
        tls=tls,
        client_identity=client_identity(args),
        reflection=args.reflection,
        max_message_bytes=args.max_message_bytes,
        max_concurrent_rpcs=args.max_concurrent_rpcs,
        max_concurrent_streams=args.max_concurrent_streams,
        max_connection_age_s=args.max_connection_age,
        stop_grace_s=args.grace,
        max_health_watches=args.max_health_watches,
        max_streams_per_connection=args.max_streams_per_connection,
        max_streams_per_peer=args.max_streams_per_peer,
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
