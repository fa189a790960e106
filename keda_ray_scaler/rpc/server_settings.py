"""Listening, limits and connection management of the scaler's gRPC server: its settings.

Why a module of its own: these are the operator's knobs (each a ``serve`` flag, whose default
is read from here: :mod:`keda_ray_scaler.cli.serve_flags`) and the gRPC channel arguments they
become; :mod:`keda_ray_scaler.rpc.server` only reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from keda_ray_scaler.rpc.tls import TlsFiles

_MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Listening, limits and connection management.

    KEDA's operator shares one connection per scaler address for all ScaledObjects, and
    ``external-push`` triggers each hold a stream on it: hence many concurrent streams per
    connection. KEDA round-robins over a headless Service's endpoints only when it reconnects,
    so ``max_connection_age_s`` makes clients reconnect and spread over scaler replicas.
    """

    host: str = "0.0.0.0"
    port: int = 9090  # the chart's, the manifests' and KEDA's ``scalerAddress`` in the docs
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = 9100  # None: no /metrics endpoint
    #: plaintext port serving only grpc.health.v1 ``Check`` (the kubelet's gRPC probe cannot
    #: do TLS, and calls only ``Check``): ``Watch`` there is UNIMPLEMENTED
    health_port: int | None = None
    #: concurrent RPCs on the probe port: ``Check`` is unary and answered from memory
    health_max_concurrent_rpcs: int = 64
    tls: TlsFiles | None = None
    #: under mTLS, the one client served: the common name or a subject alternative name of its
    #: verified certificate (the chart issues KEDA's with CN ``keda``); any other certificate
    #: from the CA is PERMISSION_DENIED. ``""`` serves every certificate the CA signed.
    client_identity: str = "keda"
    #: gRPC server reflection (lists the services and their schema): off, KEDA does not use it
    reflection: bool = False
    max_message_bytes: int = 1 * _MIB  # KEDA's messages are a few hundred bytes
    max_concurrent_rpcs: int | None = 10_000  # beyond: RESOURCE_EXHAUSTED
    #: health ``Watch`` streams at once on the main port (beyond: RESOURCE_EXHAUSTED); far
    #: below ``max_concurrent_rpcs``, so they can never crowd out ``Check`` or KEDA's calls
    max_health_watches: int = 16
    max_concurrent_streams: int = 4096  # HTTP/2 streams per connection
    #: ExternalScaler streams (``StreamIsActive``, ``StreamMetricSpec``) open at once on one
    #: connection; beyond: RESOURCE_EXHAUSTED. KEDA's operator opens both per ScaledObject with
    #: an ``external-push`` trigger, all on one connection per scaler replica: 500 of them
    max_streams_per_connection: int = 1_000
    #: the same from one client address, all its connections together: twice the connection's
    #: (KEDA pools one connection per scaler address *and* TLS material, so triggers naming two
    #: authentications make two); below ``max_concurrent_rpcs``, so one address never holds
    #: every slot
    max_streams_per_peer: int = 2_000
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
