"""The mutating webhook's HTTPS port: ``POST /mutate-raycluster`` answers AdmissionReviews.

A threaded stdlib HTTP server behind TLS (the certificate cert-manager or the chart makes; re-read
when its files change, checked at most every :data:`RELOAD_CHECK_S`), in front of
:func:`~keda_ray_scaler.controller.admission.review`. Every request is bounded in time (each
socket read and write by :data:`READ_TIMEOUT_S`; the API server's own webhook timeout is 10 s at
most) and in size (:data:`~keda_ray_scaler.controller.admission.MAX_BODY_BYTES`). A body that is
no AdmissionReview of a RayCluster is answered ``400`` with the reason, counted in
``ray_scaler_webhook_reviews_total{outcome="bad_request"}``; every answer is counted by outcome.

Hand-written (the stdlib server, about 60 lines) where kopf would bring its own operator runtime
and aiohttp for one route.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

import structlog
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler.controller.admission import MAX_BODY_BYTES, BadReview, review
from keda_ray_scaler.controller.template import ControllerTemplate

MUTATE_PATH: Final = "/mutate-raycluster"
READ_TIMEOUT_S: Final = 10.0
RELOAD_CHECK_S: Final = 10.0


class CertFiles:
    """A server TLS context from ``cert`` and ``key``, rebuilt when either file changes."""

    def __init__(self, cert: Path, key: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self._cert, self._key, self._clock = cert, key, clock
        self._lock = threading.Lock()
        self._stamp = self._mtimes()
        self._context = self._load()
        self._checked = clock()

    def context(self) -> ssl.SSLContext:
        """The current context (re-read if the files changed since the last check)."""
        with self._lock:
            if self._clock() - self._checked >= RELOAD_CHECK_S:
                self._checked = self._clock()
                stamp = self._mtimes()
                if stamp != self._stamp:
                    self._context, self._stamp = self._load(), stamp
            return self._context

    def _mtimes(self) -> tuple[float, float]:
        return self._cert.stat().st_mtime, self._key.stat().st_mtime

    def _load(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self._cert, self._key)
        return context


class WebhookServer(ThreadingHTTPServer):
    """The HTTPS server; :meth:`serve_forever` in a thread, :meth:`shutdown` to stop."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        certs: CertFiles,
        fragment: Mapping[str, Any],
        template: ControllerTemplate,
        registry: CollectorRegistry,
    ) -> None:
        self.certs, self.fragment, self.template = certs, fragment, template
        self.reviews = Counter(
            "ray_scaler_webhook_reviews",
            "AdmissionReviews answered, by outcome",
            ["outcome"],
            registry=registry,
        )
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One log line, no traceback: a connection closed before or during the TLS handshake
        (the kubelet's TCP readiness probe does that every period) or a peer gone mid-answer."""
        error = sys.exc_info()[1]
        log = structlog.get_logger(__name__)
        if isinstance(error, OSError):
            log.debug("webhook_connection_closed", peer=str(client_address), error=repr(error))
        else:
            log.error("webhook_request_failed", peer=str(client_address), error=repr(error))

    def get_request(self) -> tuple[Any, Any]:
        """Accept one connection and wrap it in TLS (the handshake runs in its thread)."""
        sock, peer = super().get_request()
        sock.settimeout(READ_TIMEOUT_S)
        return self.certs.context().wrap_socket(
            sock, server_side=True, do_handshake_on_connect=False
        ), peer


class _Handler(BaseHTTPRequestHandler):
    server: WebhookServer
    timeout = READ_TIMEOUT_S

    def setup(self) -> None:
        super().setup()
        self.connection.do_handshake()

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != MUTATE_PATH:
            self._send(404, {"error": f"only POST {MUTATE_PATH}"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            if length > MAX_BODY_BYTES:
                raise BadReview(f"body of {length} bytes is over {MAX_BODY_BYTES}")
            answer = review(self.rfile.read(length), self.server.fragment, self.server.template)
        except BadReview as exc:
            self.server.reviews.labels("bad_request").inc()
            structlog.get_logger(__name__).warning("webhook_bad_request", error=str(exc))
            self._send(400, {"error": str(exc)})
            return
        self.server.reviews.labels(answer.outcome).inc()
        self._send(200, answer.body)

    def _send(self, status: int, body: Mapping[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: answers are counted, bad ones logged above."""
