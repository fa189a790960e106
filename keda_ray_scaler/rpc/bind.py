"""Binding the scaler's listening ports: a port that cannot be bound is named by its setting.

Why a module of its own: gRPC reports a failed bind late and on stderr; checking the address
with a plain socket first, so that the one error names the flag to change, is a concern apart
from the server's lifecycle in :mod:`keda_ray_scaler.rpc.server`.
"""

from __future__ import annotations

import socket

import grpc

from keda_ray_scaler.errors import BindError


def bind_port(
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
