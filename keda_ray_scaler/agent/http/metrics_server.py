"""The agent's HTTP port: ``/healthz`` for the kubelet's probes, everything else ``/metrics``.

One threaded WSGI server (``prometheus_client``'s own server class and metrics app, as
``start_http_server`` builds them) with one route in front: ``GET /healthz`` answers ``200`` or
``503`` with the one-line reason of :func:`keda_ray_scaler.agent.http.agent_health.check`. Any
other path
is the metrics app, as before (``prometheus_client`` serves metrics on every path).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from keda_ray_scaler.agent.http.agent_health import HealthCheck

HEALTH_PATH: Final = "/healthz"

#: WSGI's ``start_response``.
StartResponse = Callable[[str, list[tuple[str, str]]], Any]
#: A WSGI application.
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class HealthRoute:
    """A WSGI app: ``/healthz`` from ``probe``, any other path from ``metrics``."""

    def __init__(self, metrics: WsgiApp, probe: Callable[[], HealthCheck]) -> None:
        self._metrics = metrics
        self._probe = probe

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Route one request."""
        if environ.get("PATH_INFO") != HEALTH_PATH:
            return self._metrics(environ, start_response)
        verdict = self._probe()
        status = "200 OK" if verdict.ok else "503 Service Unavailable"
        body = f"{verdict.health.value}: {verdict.reason}\n".encode()
        headers = [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
        ]
        start_response(status, headers)
        return [body]


class _QuietHandler(WSGIRequestHandler):
    """No access log line per request (the kubelet probes every few seconds)."""

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server4(ThreadingWSGIServer):
    """An IPv4 address (``0.0.0.0``, ``127.0.0.1``)."""

    address_family = socket.AF_INET


class _Server6(ThreadingWSGIServer):
    """An IPv6 address (``::``), as ``start_http_server`` picks by the host."""

    address_family = socket.AF_INET6


def start_metrics_server(
    host: str, port: int, registry: CollectorRegistry, probe: Callable[[], HealthCheck]
) -> WSGIServer:
    """Serve ``/metrics`` and ``/healthz`` on ``host:port`` from a daemon thread.

    Returns the server (``server_port`` is the bound port, for ``port`` 0); ``shutdown()`` and
    ``server_close()`` stop it. Raises ``OSError`` when the address cannot be bound.
    """
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    server_class = _Server6 if family == socket.AF_INET6 else _Server4
    app = HealthRoute(make_wsgi_app(registry), probe)
    server = make_server(host, port, app, server_class, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics-server", daemon=True).start()
    return server
