"""The grpc.aio server: scaler service, health, reflection, TLS/mTLS, limits, own /metrics.

:class:`ScalerServer` wires a :class:`~keda_ray_scaler.sources.base.Source` to a
:class:`TargetCache`, the servicer and a gRPC server, and runs the background refresh. Tests and
other helpers build one with :func:`build_server` on ``127.0.0.1`` port 0.

Health (``grpc.health.v1``) reports SERVING for ``""`` and ``externalscaler.ExternalScaler``
as soon as the server listens, whatever the state of Prometheus: an unreachable Prometheus is
an UNAVAILABLE answer to KEDA (so its fallback applies), not a reason to restart the scaler.
``Check`` always has room: ``Watch`` streams are bounded (:mod:`keda_ray_scaler.rpc.health`):
at most ``max_health_watches`` on the main port, none on the plaintext probe port.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry, start_http_server

from keda_ray_scaler.clock import Now
from keda_ray_scaler.errors import BindError
from keda_ray_scaler.identity import NamespaceGrants
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.health import BoundedHealth
from keda_ray_scaler.rpc.refresher import ProcessTargetCache, SourceFactory
from keda_ray_scaler.rpc.relay import RelayCollector
from keda_ray_scaler.rpc.servicer import ExternalScalerServicer
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.targets import Planner, TargetCache
from keda_ray_scaler.rpc.tls import CertificateReloader
from keda_ray_scaler.rpc.tls import (
    TlsFiles as TlsFiles,  # re-exported: the CLI and tests name it here
)
from keda_ray_scaler.sources.base import Source
from keda_ray_scaler.telemetry import ScalerMetrics, scaler_metrics

SERVICE_NAME: Final = pb.DESCRIPTOR.services_by_name["ExternalScaler"].full_name
_MIB: Final = 1024 * 1024
_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Listening, limits and connection management.

    KEDA's operator shares one connection per scaler address for all ScaledObjects, and
    ``external-push`` triggers each hold a stream on it: hence many concurrent streams per
    connection. KEDA round-robins over a headless Service's endpoints only when it reconnects,
    so ``max_connection_age_s`` makes clients reconnect and spread over scaler replicas.
    """

    host: str = "0.0.0.0"
    port: int = 6000
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = 8080  # None: no /metrics endpoint
    #: plaintext port serving only grpc.health.v1 ``Check`` (the kubelet's gRPC probe cannot
    #: do TLS, and calls only ``Check``): ``Watch`` there is UNIMPLEMENTED
    health_port: int | None = None
    #: concurrent RPCs on the probe port: ``Check`` is unary and answered from memory
    health_max_concurrent_rpcs: int = 64
    tls: TlsFiles | None = None
    max_message_bytes: int = 1 * _MIB  # KEDA's messages are a few hundred bytes
    max_concurrent_rpcs: int | None = 10_000  # beyond: RESOURCE_EXHAUSTED
    #: health ``Watch`` streams at once on the main port (beyond: RESOURCE_EXHAUSTED); far
    #: below ``max_concurrent_rpcs``, so they can never crowd out ``Check`` or KEDA's calls
    max_health_watches: int = 16
    max_concurrent_streams: int = 4096  # HTTP/2 streams per connection
    keepalive_time_s: float = 60.0  # server pings an idle connection this often
    keepalive_timeout_s: float = 20.0  # and drops it when the ping is not answered in this
    min_client_ping_interval_s: float = 10.0  # clients may ping this often without strikes
    max_connection_age_s: float = 300.0  # then GOAWAY: clients reconnect (rebalancing)
    max_connection_age_grace_s: float = 30.0  # time for calls in flight after GOAWAY
    stop_grace_s: float = 10.0  # graceful stop: calls in flight may finish this long

    def grpc_options(self) -> list[tuple[str, int]]:
        """The channel arguments of the server."""
        ms = 1000
        return [
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.max_send_message_length", self.max_message_bytes),
            ("grpc.max_concurrent_streams", self.max_concurrent_streams),
            ("grpc.keepalive_time_ms", int(self.keepalive_time_s * ms)),
            ("grpc.keepalive_timeout_ms", int(self.keepalive_timeout_s * ms)),
            ("grpc.keepalive_permit_without_calls", 1),
            (
                "grpc.http2.min_recv_ping_interval_without_data_ms",
                int(self.min_client_ping_interval_s * ms),
            ),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.max_connection_age_ms", int(self.max_connection_age_s * ms)),
            ("grpc.max_connection_age_grace_ms", int(self.max_connection_age_grace_s * ms)),
            ("grpc.so_reuseport", 0),
        ]


class ScalerServer:
    """One scaler process: gRPC server, background refresh and /metrics.

    Give either ``source`` (refresh on this event loop: tests, the demo) or
    ``source_factory`` (refresh in a child process, see :mod:`keda_ray_scaler.rpc.refresher`:
    what ``keda-ray-scaler serve`` does).
    """

    def __init__(
        self,
        source: Source | None = None,
        *,
        source_factory: SourceFactory | None = None,
        clock: Now,
        settings: ServerSettings | None = None,
        target_settings: TargetSettings | None = None,
        registry: CollectorRegistry | None = None,
        planner: Planner | None = None,
        stream_debounce_s: float | None = None,
        grants: NamespaceGrants | None = None,
    ) -> None:
        self.settings = settings or ServerSettings()
        self.registry = registry if registry is not None else CollectorRegistry()
        if (source is None) == (source_factory is None):
            raise ValueError("give exactly one of source and source_factory")
        self.metrics, self.cache = self._cache(
            source, source_factory, clock, target_settings, planner
        )
        self.servicer = ExternalScalerServicer(
            self.cache,
            metrics=self.metrics,
            clock=clock,
            stream_debounce_s=stream_debounce_s,
            grants=grants,
        )
        self.health = health.aio.HealthServicer()
        refused = self.metrics.limits
        self._health_main = BoundedHealth(
            self.health, max_watches=self.settings.max_health_watches, refused=refused
        )
        self._health_probe = BoundedHealth(self.health, max_watches=0, refused=refused)
        self.port = 0
        self.metrics_port: int | None = None
        self.health_port: int | None = None
        self._health_server: grpc.aio.Server | None = None
        self.reloader: CertificateReloader | None = None
        self._server: grpc.aio.Server | None = None
        self._refresh: asyncio.Task[None] | None = None
        self._http: Any = None

    def _cache(
        self,
        source: Source | None,
        source_factory: SourceFactory | None,
        clock: Now,
        target_settings: TargetSettings | None,
        planner: Planner | None,
    ) -> tuple[ScalerMetrics, TargetCache | ProcessTargetCache]:
        """The metrics and the target cache: refreshed in this process from ``source``, or in
        a child process that builds its own from ``source_factory``."""
        if source is not None:
            metrics = scaler_metrics(self.registry)
            cache = TargetCache(
                source, clock=clock, planner=planner, settings=target_settings, metrics=metrics
            )
            return metrics, cache
        assert source_factory is not None
        # the refresh side's metrics live in the child and are relayed as they are
        metrics = scaler_metrics(self.registry, refresh_registry=CollectorRegistry())
        relay = RelayCollector()
        self.registry.register(relay)
        process_cache = ProcessTargetCache(
            source_factory, clock=clock, settings=target_settings, planner=planner, relay=relay
        )
        return metrics, process_cache

    async def start(self) -> None:
        """Bind and serve; sets :attr:`port` (and :attr:`metrics_port`) to the bound ports.

        Every port is bound before anything starts: a port that cannot be bound raises
        :class:`~keda_ray_scaler.errors.BindError` naming its setting, with nothing left running.
        """
        s = self.settings
        server = grpc.aio.server(
            options=s.grpc_options(), maximum_concurrent_rpcs=s.max_concurrent_rpcs
        )
        pb_grpc.add_ExternalScalerServicer_to_server(self.servicer, server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health_main, server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
        )
        self._server = server
        try:
            self._bind_all()
        except BindError:
            await self._unbind()
            raise
        await server.start()
        if self._health_server is not None:
            await self._health_server.start()
        for name in ("", SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._refresh = asyncio.create_task(self.cache.run(), name="scaler-refresh")
        _log.info(
            "scaler serving",
            port=self.port,
            tls=s.tls is not None,
            mtls=s.tls is not None and s.tls.client_ca_file is not None,
            metrics_port=self.metrics_port,
            health_port=self.health_port,
        )

    def _bind_all(self) -> None:
        """Bind gRPC, the plaintext health port and /metrics; BindError names the failed one."""
        s = self.settings
        assert self._server is not None
        if s.tls is None:
            credentials = None
        else:
            self.reloader = CertificateReloader(s.tls)
            credentials = self.reloader.credentials()
        self.port = _bind(self._server, "port", f"{s.host}:{s.port}", credentials)
        if s.health_port is not None:
            # a second, plaintext server with only health Check (for kubelet probes)
            health_server = grpc.aio.server(
                options=[("grpc.so_reuseport", 0)],
                maximum_concurrent_rpcs=s.health_max_concurrent_rpcs,
            )
            health_pb2_grpc.add_HealthServicer_to_server(self._health_probe, health_server)
            self._health_server = health_server
            self.health_port = _bind(health_server, "health_port", f"{s.host}:{s.health_port}")
        if s.metrics_port is not None:
            try:
                http, _thread = start_http_server(
                    s.metrics_port, addr=s.metrics_host, registry=self.registry
                )
            except OSError as exc:
                address = f"{s.metrics_host}:{s.metrics_port}"
                raise BindError("metrics_port", address, exc.strerror or str(exc)) from exc
            self._http = http
            self.metrics_port = int(http.server_port)

    async def _unbind(self) -> None:
        """Release what :meth:`_bind_all` bound (servers never started)."""
        for server in (self._server, self._health_server):
            if server is not None:
                await server.stop(None)
        self._server = self._health_server = None
        self._close_http()

    def _close_http(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    async def stop(self, grace_s: float | None = None) -> None:
        """Graceful stop: NOT_SERVING, end streams, let calls in flight finish, then close."""
        grace = self.settings.stop_grace_s if grace_s is None else grace_s
        await self.health.enter_graceful_shutdown()
        self.servicer.stop_streams()
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        if self._health_server is not None:
            await self._health_server.stop(0)
            self._health_server = None
        if self._refresh is not None:
            self._refresh.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresh
            self._refresh = None
        await self.cache.aclose()
        self._close_http()

    async def wait(self) -> None:
        """Until the server terminates."""
        if self._server is not None:
            await self._server.wait_for_termination()

    async def __aenter__(self) -> ScalerServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop(grace_s=0)


def _bind(
    server: grpc.aio.Server,
    setting: str,
    address: str,
    credentials: grpc.ServerCredentials | None = None,
) -> int:
    """Add a listening port; the bound port number, or BindError naming ``setting``.

    A fixed port is tried with a plain socket first: gRPC's core logs a bind failure on stderr
    itself, and the caller's one line should be the only one.
    """
    _probe(setting, address)
    try:
        if credentials is None:
            port = int(server.add_insecure_port(address))
        else:
            port = int(server.add_secure_port(address, credentials))
    except RuntimeError as exc:  # grpcio raises for a port it cannot bind (older ones return 0)
        raise BindError(setting, address, "address in use or not available") from exc
    if port == 0:
        raise BindError(setting, address, "address in use or not available")
    return port


def _probe(setting: str, address: str) -> None:
    """BindError when ``address`` (``host:port``, port not 0) cannot be bound right now."""
    host, _, port = address.rpartition(":")
    if int(port) == 0:
        return
    try:
        family, kind, proto, _name, sockaddr = socket.getaddrinfo(
            host.strip("[]"), int(port), type=socket.SOCK_STREAM
        )[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
            sock.bind(sockaddr)
    except OSError as exc:
        raise BindError(setting, address, exc.strerror or str(exc)) from exc


def build_server(
    source: Source | None = None,
    *,
    source_factory: SourceFactory | None = None,
    clock: Now,
    port: int = 0,
    host: str = "127.0.0.1",
    metrics_port: int | None = None,
    health_port: int | None = None,
    tls: TlsFiles | None = None,
    target_settings: TargetSettings | None = None,
    planner: Planner | None = None,
    stream_debounce_s: float | None = None,
    grants: NamespaceGrants | None = None,
    extra: Sequence[tuple[str, Any]] = (),
) -> ScalerServer:
    """A server for tests and embedding: loopback, port 0, no /metrics unless asked.

    ``extra`` overrides :class:`ServerSettings` fields by name. Use as
    ``async with build_server(source, clock=time.time) as srv: ... srv.port``.
    """
    fields: dict[str, Any] = {
        "host": host,
        "port": port,
        "metrics_host": host,
        "metrics_port": metrics_port,
        "health_port": health_port,
        "tls": tls,
    }
    fields.update(dict(extra))
    return ScalerServer(
        source,
        source_factory=source_factory,
        clock=clock,
        settings=ServerSettings(**fields),
        target_settings=target_settings,
        planner=planner,
        stream_debounce_s=stream_debounce_s,
        grants=grants,
    )
