"""``keda-ray-scaler serve``: the KEDA external scaler (gRPC), reading the agents' metrics.

Flags only (no environment variables). Bad flags exit 2 with one line; SIGTERM and SIGINT stop
gracefully (health NOT_SERVING, streams ended, calls in flight finished within ``--grace``).
The flags and the server settings they make are :mod:`keda_ray_scaler.cli.serve_flags`; this
module builds the data source from them and runs the scaler.
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

from keda_ray_scaler.cli import configure_logging_from
from keda_ray_scaler.cli.seal_key import key_file
from keda_ray_scaler.cli.serve_flags import (
    WHERE,
    check,
    data_caps,
    namespace_grants,
    server_settings,
    target_settings,
)
from keda_ray_scaler.errors import BindError, ConfigError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc.refresh.refresher_child import SourceFactory
from keda_ray_scaler.rpc.server import ScalerServer
from keda_ray_scaler.rpc.server_settings import ServerSettings
from keda_ray_scaler.sources.base import Source
from keda_ray_scaler.sources.metrics import source_metrics
from keda_ray_scaler.sources.prometheus import PrometheusSettings, PrometheusSource
from keda_ray_scaler.sources.promql import OriginSettings
from keda_ray_scaler.sources.scrape import ScrapeSettings, ScrapeSource
from keda_ray_scaler.sources.source_settings import HttpSettings, RetrySettings

_log = structlog.get_logger(__name__)

#: Where credentials go instead of a URL.
_CREDENTIAL_FLAGS: Final = (
    "--basic-auth-user with --basic-auth-password-file, or --bearer-token-file"
)


def run(args: argparse.Namespace) -> int:
    """Build everything from flags, then serve until SIGTERM/SIGINT."""
    configure_logging_from(args, WHERE)
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
        raise ConfigError(WHERE, flag, f"cannot listen on {exc.address}: {exc.problem}") from exc
    finally:
        _close(source)
    return 0


def _refresher_source(args: argparse.Namespace, registry: CollectorRegistry) -> Source:
    """The refresher process's source (called in that process): same logging, same flags."""
    configure_logging_from(args, WHERE)
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
    if not settings.client_identity:
        return [
            (
                "--client-identity",
                "mTLS serving every certificate the CA signed: whoever the CA issued one to "
                "reads every Ray cluster's targets; give --client-identity (KEDA's name)",
            )
        ]
    return []


def check_no_credentials(flag: str, url: str) -> None:
    """ConfigError naming ``flag`` when ``url`` carries userinfo; the URL is not echoed.

    Credentials in a URL end up in every log line and error text that quotes it.
    """
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return  # the http(s) check names what is wrong with it
    check(
        "@" not in netloc,
        flag,
        f"credentials in the URL are refused (they would be logged and sent to KEDA); "
        f"use {_CREDENTIAL_FLAGS}",
    )


def parse_agent_urls(values: list[str]) -> dict[ClusterRef, str]:
    """``NAMESPACE/CLUSTER=URL`` flags as a dict; ConfigError naming ``--agent-url``."""
    out: dict[ClusterRef, str] = {}
    for value in values:
        name, eq, url = value.partition("=")
        check_no_credentials("--agent-url", url if eq else value)
        check(bool(eq and name and url), "--agent-url", f"{value!r} is not NAMESPACE/CLUSTER=URL")
        cluster = ClusterRef.parse(name, WHERE, "--agent-url")
        check(cluster not in out, "--agent-url", f"cluster {cluster} given twice")
        check(url.startswith(("http://", "https://")), "--agent-url", f"{url!r} is not http(s)")
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
            check(value.is_file(), flag, f"{value} is not a readable file")
    try:
        http = HttpSettings(**http_fields)
        retry = RetrySettings(attempts=args.query_attempts, deadline_s=args.query_deadline)
    except ValueError as exc:
        raise ConfigError(WHERE, "", str(exc)) from exc
    caps = data_caps(args)
    metrics = source_metrics(registry)
    if args.source == "prometheus":
        check(bool(args.prometheus_url), "--prometheus-url", "required with --source prometheus")
        check_no_credentials("--prometheus-url", args.prometheus_url)
        check(not args.agent_url, "--agent-url", "only with --source scrape")
        try:
            master = args.seal_master_key_file
            origin = OriginSettings(
                args.prometheus_job,
                args.accept_agents_without_digest,
                key_file(master, "--seal-master-key-file", WHERE) if master else None,
            )
            settings = PrometheusSettings(
                url=args.prometheus_url, http=http, retry=retry, caps=caps, origin=origin
            )
        except ValueError as exc:
            raise ConfigError(WHERE, "--prometheus-url", str(exc)) from exc
        return PrometheusSource(settings, metrics=metrics)
    check(bool(args.agent_url), "--agent-url", "at least one required with --source scrape")
    check(not args.prometheus_url, "--prometheus-url", "only with --source prometheus")
    check(not args.seal_master_key_file, "--seal-master-key-file", "only with --source prometheus")
    targets = parse_agent_urls(args.agent_url)
    scrape = ScrapeSettings(targets=targets, http=http, retry=retry, caps=caps)
    return ScrapeSource(scrape, metrics=metrics)
