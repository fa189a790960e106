"""The agent's HTTP port: ``/healthz`` for the kubelet's probes, everything else ``/metrics``.

One threaded WSGI server (``prometheus_client``'s own server class and metrics app, as
``start_http_server`` builds them) with two routes in front: ``GET /healthz`` (liveness) and
``GET /readyz`` (readiness) answer ``200`` or ``503`` with the one-line reason of
:func:`keda_ray_scaler.agent.http.agent_health.check` (they differ only for a head whose Ray is
refused: alive, not ready). Any other path is the metrics app, as before (``prometheus_client``
serves metrics on every path); given the snapshot's collector, the snapshot's lines are served
as written at publish (:class:`SnapshotMetrics`), not rendered at each scrape.

Every request is bounded in time: each read and write on its socket by ``read_timeout_s``, the
whole request by ``request_deadline_s`` (then its socket is shut down, by one thread that keeps
every request's deadline: a timer thread per request cost a fifth of a request's CPU, 0.2 of
0.9 ms with the client's, measured with ``http.client``). Unbounded, a client that
sends half a request and goes quiet, or trickles one byte at a time, holds a server thread for
ever; the kubelet and Prometheus ask a whole request at once and are answered in milliseconds.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder, gzip_accepted

from keda_ray_scaler.agent.http.agent_health import HealthCheck
from keda_ray_scaler.agent.http.exporter import SnapshotCollector
from keda_ray_scaler.agent.http.exposition import Encoder, Format
from keda_ray_scaler.agent.http.gzip_body import gzip_body

HEALTH_PATH: Final = "/healthz"
READY_PATH: Final = "/readyz"
_FAVICON: Final = "/favicon.ico"  # prometheus_client's app answers it empty
#: Seconds one read or write of a request's socket may wait (the kubelet's probe times out
#: after 1 s by default, Prometheus after its scrape timeout: 10 s)
READ_TIMEOUT_S: Final = 10.0
#: Seconds a whole request may take, however its bytes trickle in
REQUEST_DEADLINE_S: Final = 30.0

#: WSGI's ``start_response``.
StartResponse = Callable[[str, list[tuple[str, str]]], Any]
#: A WSGI application.
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class HealthRoute:
    """A WSGI app: ``/healthz`` and ``/readyz`` from ``probe``, any other path from
    ``metrics``."""

    def __init__(self, metrics: WsgiApp, probe: Callable[[], HealthCheck]) -> None:
        self._metrics = metrics
        self._probe = probe

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Route one request."""
        path = environ.get("PATH_INFO")
        if path not in (HEALTH_PATH, READY_PATH):
            return self._metrics(environ, start_response)
        verdict = self._probe()
        good = verdict.ok if path == HEALTH_PATH else verdict.ready
        status = "200 OK" if good else "503 Service Unavailable"
        body = f"{verdict.health.value}: {verdict.reason}\n".encode()
        headers = [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
        ]
        start_response(status, headers)
        return [body]


class SnapshotMetrics:
    """A WSGI app: ``/metrics`` with the snapshot as its collector wrote it
    (:meth:`~keda_ray_scaler.agent.http.exporter.SnapshotCollector.text`) and the rest of the
    registry as ``prometheus_client`` renders it: the same headers, formats and text as
    ``prometheus_client``'s own app, which serves what the written lines do not (another
    escaping, ``name[]`` selections, methods other than GET). Gzipped, each snapshot family is
    compressed once, a part of the body's one deflate stream (:mod:`.gzip_body`)."""

    def __init__(self, registry: CollectorRegistry, snapshot: SnapshotCollector) -> None:
        self._registry = registry
        self._snapshot = snapshot
        self._plain: WsgiApp = make_wsgi_app(registry)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Serve one scrape."""
        selected = "name[]" in parse_qs(environ.get("QUERY_STRING", ""))
        if (
            environ.get("REQUEST_METHOD") != "GET"
            or selected
            or environ.get("PATH_INFO") == _FAVICON
        ):
            return self._plain(environ, start_response)
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        form = Format(content_type, encoder)
        if not form.plain_lines:
            return self._plain(environ, start_response)
        headers = [("Content-Type", content_type)]
        if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING", "")):
            parts = self._snapshot.parts(form)  # read before the rest: one snapshot whole
            body = gzip_body(parts, self._rest(encoder))
            headers.append(("Content-Encoding", "gzip"))
        else:
            text = self._snapshot.text(form)
            body = text + self._rest(encoder)
        start_response("200 OK", headers)
        return [body]

    def _rest(self, encoder: Encoder) -> bytes:
        """The registry but the snapshot, as ``encoder`` renders it (it ends the body)."""
        with self._snapshot.apart():
            return encoder(self._registry)


def metrics_app(registry: CollectorRegistry, snapshot: SnapshotCollector | None = None) -> WsgiApp:
    """The ``/metrics`` app of ``registry``: :class:`SnapshotMetrics` when the snapshot's
    collector is given, else ``prometheus_client``'s."""
    return make_wsgi_app(registry) if snapshot is None else SnapshotMetrics(registry, snapshot)


@dataclass(slots=True)
class _Due:
    """One request's deadline (``time.monotonic``) and socket; ``ended`` once it is answered."""

    at: float
    sock: socket.socket
    ended: bool = False


class _Deadlines:
    """Sockets to shut down at their deadline, from one thread for all requests. Deadlines come
    in time order (each request's start plus the same bound), so the first one waiting is the
    next due."""

    def __init__(self) -> None:
        self._due: deque[_Due] = deque()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, at: float, sock: socket.socket) -> _Due:
        """Shut ``sock`` down at ``at`` unless the returned entry has ``ended`` by then."""
        due = _Due(at, sock)
        with self._wake:
            self._due.append(due)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="http-deadlines", daemon=True
                )
                self._thread.start()
            elif len(self._due) == 1:
                self._wake.notify()
        return due

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due:
                    self._wake.wait()
                first = self._due[0]
                left = first.at - time.monotonic()
                if left > 0:
                    self._wake.wait(left)
                    continue
                self._due.popleft()
            if not first.ended:
                with contextlib.suppress(OSError):
                    first.sock.shutdown(socket.SHUT_RDWR)


class _BoundedServer(ThreadingWSGIServer):
    """prometheus_client's threaded server, holding the bounds its requests read."""

    read_timeout_s: float = READ_TIMEOUT_S
    request_deadline_s: float = REQUEST_DEADLINE_S
    deadlines: _Deadlines


class _BoundedHandler(WSGIRequestHandler):
    """One request, bounded in time; no access log line (the kubelet probes every few
    seconds)."""

    server: _BoundedServer

    def setup(self) -> None:
        """The socket and its files, every read and write on them bounded."""
        super().setup()
        self.connection.settimeout(self.server.read_timeout_s)

    def handle(self) -> None:
        """The request, its socket shut down at the deadline; a timed-out or cut request ends
        quietly (nothing to answer: the client went quiet)."""
        due = self.server.deadlines.add(
            time.monotonic() + self.server.request_deadline_s, self.connection
        )
        try:
            super().handle()
        except OSError:  # TimeoutError on a read, or the socket cut at the deadline
            self.close_connection = True
        finally:
            due.ended = True

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server4(_BoundedServer):
    """An IPv4 address (``0.0.0.0``, ``127.0.0.1``)."""

    address_family = socket.AF_INET


class _Server6(_BoundedServer):
    """An IPv6 address (``::``), as ``start_http_server`` picks by the host."""

    address_family = socket.AF_INET6


def start_metrics_server(
    host: str,
    port: int,
    registry: CollectorRegistry,
    probe: Callable[[], HealthCheck],
    *,
    snapshot: SnapshotCollector | None = None,
    read_timeout_s: float = READ_TIMEOUT_S,
    request_deadline_s: float = REQUEST_DEADLINE_S,
) -> WSGIServer:
    """Serve ``/metrics`` and ``/healthz`` on ``host:port`` from a daemon thread, each request
    bounded by ``read_timeout_s`` a read and ``request_deadline_s`` in all; the snapshot as its
    collector wrote it when ``snapshot`` is given (:class:`SnapshotMetrics`).

    Returns the server (``server_port`` is the bound port, for ``port`` 0); ``shutdown()`` and
    ``server_close()`` stop it. Raises ``OSError`` when the address cannot be bound.
    """
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    server_class = _Server6 if family == socket.AF_INET6 else _Server4
    app = HealthRoute(metrics_app(registry, snapshot), probe)
    server = make_server(host, port, app, server_class, handler_class=_BoundedHandler)
    assert isinstance(server, _BoundedServer)
    server.read_timeout_s = read_timeout_s
    server.request_deadline_s = request_deadline_s
    server.deadlines = _Deadlines()
    threading.Thread(target=server.serve_forever, name="metrics-server", daemon=True).start()
    return server
