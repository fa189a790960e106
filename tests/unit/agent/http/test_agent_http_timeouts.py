"""The agent's HTTP port over real sockets: a client that stops half-way, or trickles, is cut
off and frees its thread; whole requests beside it are served."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Gauge

from keda_ray_scaler.agent.http.agent_health import Health, HealthCheck
from keda_ray_scaler.agent.http.metrics_server import (
    READ_TIMEOUT_S,
    REQUEST_DEADLINE_S,
    start_metrics_server,
)

#: Small bounds for the tests (the defaults are 10 s and 30 s).
READ_S, DEADLINE_S = 0.3, 1.0
#: A half request: the request line and one header, never the blank line that ends it.
HALF_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: agent\r\n"


@pytest.fixture
def port() -> Iterator[int]:
    """The agent's HTTP server on 127.0.0.1 with small bounds; stopped after the test."""
    registry = CollectorRegistry()
    Gauge("ray_scaler_snapshot_success", "1 when the last poll succeeded", registry=registry).set(1)
    server = start_metrics_server(
        "127.0.0.1",
        0,
        registry,
        lambda: HealthCheck(Health.FRESH, "fresh"),
        read_timeout_s=READ_S,
        request_deadline_s=DEADLINE_S,
    )
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()


def closed_after(conn: socket.socket, *, trickle: bytes = b"", every_s: float = 0.0) -> float:
    """Seconds until the server ends the connection (EOF or reset), sending ``trickle`` one
    byte every ``every_s`` meanwhile; fails after 10 s."""
    started = time.monotonic()
    conn.settimeout(every_s or 10.0)
    sent = 0
    while time.monotonic() - started < 10.0:
        try:
            if conn.recv(1024) == b"":
                return time.monotonic() - started
        except TimeoutError:
            if sent < len(trickle):
                conn.sendall(trickle[sent : sent + 1])
                sent += 1
        except ConnectionResetError:
            return time.monotonic() - started
    raise AssertionError("the server kept the connection open for 10 s")


def metrics_answered(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return b"ray_scaler_snapshot_success 1.0" in answer.read()


def test_a_client_that_sends_half_a_request_and_goes_quiet_is_cut_off(port: int) -> None:
    """Half a request, then silence: the server closes the connection after the read timeout
    (not never); a whole request meanwhile is answered."""
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(HALF_REQUEST)
        assert metrics_answered(port)
        waited = closed_after(conn)
    assert READ_S * 0.8 <= waited < DEADLINE_S
    assert metrics_answered(port)


def test_a_client_trickling_bytes_under_the_read_timeout_is_cut_at_the_deadline(
    port: int,
) -> None:
    """One byte every 0.1 s (each read within the timeout) never finishes its headers: the
    whole request is cut at the deadline."""
    with socket.create_connection(("127.0.0.1", port)) as conn:
        waited = closed_after(conn, trickle=HALF_REQUEST * 20, every_s=0.1)
    assert DEADLINE_S * 0.8 <= waited < DEADLINE_S + 2.0
    assert metrics_answered(port)


def test_the_defaults_outlast_the_kubelet_and_prometheus() -> None:
    """10 s a read (Prometheus' default scrape timeout), 30 s a request."""
    assert (READ_TIMEOUT_S, REQUEST_DEADLINE_S) == (10.0, 30.0)


def test_tricklers_started_apart_are_each_cut_at_their_own_deadline(port: int) -> None:
    """Answered requests, their deadlines passed (the one thread that keeps them all then waits
    for a new one), then two tricklers 0.4 s apart: each is cut a deadline after its own start
    (not the first's, not never); the answered requests cut nothing."""
    for _ in range(5):
        assert metrics_answered(port)
    time.sleep(DEADLINE_S * 1.5)  # the answered requests' deadlines all pass
    waits: dict[str, float] = {}

    def trickle(name: str) -> None:
        with socket.create_connection(("127.0.0.1", port)) as conn:
            waits[name] = closed_after(conn, trickle=HALF_REQUEST * 20, every_s=0.1)

    first = threading.Thread(target=trickle, args=("first",))
    first.start()
    time.sleep(0.4)  # the second starts later: its deadline is later
    trickle("second")
    first.join()
    for waited in waits.values():
        assert DEADLINE_S * 0.8 <= waited < DEADLINE_S + 2.0
    assert metrics_answered(port)
