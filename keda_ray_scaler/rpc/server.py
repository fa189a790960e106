"""The grpc.aio server: scaler service, health, TLS/mTLS, the caller gate, limits, own /metrics.

:class:`ScalerServer` wires a :class:`~keda_ray_scaler.sources.base.Source` to a
:class:`TargetCache`, the servicer and a gRPC server, and runs the background refresh. Tests and
other helpers build one with :func:`build_server` on ``127.0.0.1`` port 0. Its settings are
:class:`~keda_ray_scaler.rpc.server_settings.ServerSettings`; each port is bound by
:func:`~keda_ray_scaler.rpc.bind.bind_port`, certificates are re-read by
:mod:`keda_ray_scaler.rpc.tls`.

Health (``grpc.health.v1``) reports SERVING for ``""`` and ``externalscaler.ExternalScaler``
as soon as the server listens, whatever the state of Prometheus: an unreachable Prometheus is
an UNAVAILABLE answer to KEDA (which holds the replicas), not a reason to restart the scaler.
``Check`` always has room: ``Watch`` streams are bounded (:mod:`keda_ray_scaler.rpc.grpc_health`):
at most ``max_health_watches`` on the main port, none on the plaintext probe port.

Every call on the main port passes :class:`~keda_ray_scaler.rpc.caller_gate.CallerGate` first:
under mTLS only the certificate naming ``client_identity`` is served, and ExternalScaler streams
are bounded per connection and per client address. Server reflection is off unless
``reflection`` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
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
from keda_ray_scaler.rpc.bind import bind_port
from keda_ray_scaler.rpc.caller_gate import CallerGate
from keda_ray_scaler.rpc.cluster_refresh import Planner
from keda_ray_scaler.rpc.grpc_health import BoundedHealth
from keda_ray_scaler.rpc.refresh.refresher import ProcessTargetCache
from keda_ray_scaler.rpc.refresh.refresher_child import SourceFactory
from keda_ray_scaler.rpc.refresh.relay import RelayCollector
from keda_ray_scaler.rpc.server_settings import ServerSettings
from keda_ray_scaler.rpc.servicer import ExternalScalerServicer
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.targets import TargetCache
from keda_ray_scaler.rpc.tls import CertificateReloader, TlsFiles
from keda_ray_scaler.sources.base import Source
from keda_ray_scaler.telemetry import ScalerMetrics, scaler_metrics

SERVICE_NAME: Final = pb.DESCRIPTOR.services_by_name["ExternalScaler"].full_name
_log = structlog.get_logger(__name__)


class ScalerServer:
    """One scaler process: gRPC server, background refresh and /metrics.

    Give either ``source`` (refresh on this event loop: tests, the demo) or
    ``source_factory`` (refresh in a child process, see
    :mod:`keda_ray_scaler.rpc.refresh.refresher`:
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
        self.gate = CallerGate.for_settings(self.settings, SERVICE_NAME, self.metrics)
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
            interceptors=(self.gate,),
            options=s.grpc_options(),
            maximum_concurrent_rpcs=s.max_concurrent_rpcs,
        )
        pb_grpc.add_ExternalScalerServicer_to_server(self.servicer, server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health_main, server)
        if s.reflection:
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
            client_identity=self.gate.identity,
            reflection=s.reflection,
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
        self.port = bind_port(self._server, "port", f"{s.host}:{s.port}", credentials)
        if s.health_port is not None:
            # a second, plaintext server with only health Check (for kubelet probes)
            health_server = grpc.aio.server(
                options=[("grpc.so_reuseport", 0)],
                maximum_concurrent_rpcs=s.health_max_concurrent_rpcs,
            )
            health_pb2_grpc.add_HealthServicer_to_server(self._health_probe, health_server)
            self._health_server = health_server
            self.health_port = bind_port(health_server, "health_port", f"{s.host}:{s.health_port}")
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
