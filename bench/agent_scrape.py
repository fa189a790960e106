"""One ``/metrics`` scrape as Prometheus asks it, and the CPU it costs
(``bench.agent_poll_bench``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: What Prometheus asks for (its default scrape protocols, OpenMetrics first).
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
    "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;q=0.4,"
    "text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
)


def scrape(app: Any, gzipped: bool = False) -> bytes:
    """One ``GET /metrics`` of the WSGI ``app`` as Prometheus asks it, gzipped or not."""
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/metrics",
        "QUERY_STRING": "",
        "HTTP_ACCEPT": PROMETHEUS_ACCEPT,
        "HTTP_ACCEPT_ENCODING": "gzip" if gzipped else "",
    }
    return b"".join(app(environ, lambda _status, _headers: None))


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """CPU and wall milliseconds of ``fn()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000
