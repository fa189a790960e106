"""Refresh in a child process: the RPC process keeps a mirror of the targets and nothing else.

Why: answering KEDA is a few microseconds of our code on top of grpc.aio, which alone takes
most of a core at 2,000 calls/s on this project's reference machine. Fetching a cluster
(Prometheus JSON or an agent's text exposition, about 100 ms of CPU for 1,000 pods), decoding
it and planning it are CPU-bound Python; on the RPC process they share its GIL and put their
whole duration into the latency of every call that arrives meanwhile (measured: open-loop p99
at 2,000 GetMetrics/s of 10-40 ms with in-process refresh, see ``bench/scaler_bench.py``).

So ``keda-ray-scaler serve`` runs a :class:`~keda_ray_scaler.rpc.targets.TargetCache` (the same
one, with its single-flight, pacing, safety rules and forgetting) in a child process started
with ``spawn``, and the RPC process holds a :class:`ProcessTargetCache`: the same reading
interface, fed over a pipe with each cluster's finished refresh (its worker groups'
:class:`~keda_ray_scaler.rpc.targets.GroupTarget`, a few hundred bytes). Requests never wait
on the child except for a cluster's very first answer.

Protocol (pickled tuples over one duplex :func:`multiprocessing.Pipe`):

Clusters travel as :class:`~keda_ray_scaler.identity.ClusterRef` (namespace and name).

- parent to child: ``("want", cluster)`` registers or keeps a cluster (sent when it is first
  asked for, then every quarter of ``forget_after_s`` while it is used, so the child forgets
  only clusters nobody asks about); ``("refresh", token)`` runs one round now and answers
  ``("refreshed", token)``; ``("metrics", token)`` asks for the child's registry;
  ``("stop",)``.
- child to parent: ``("batch", [news, ...])`` at most every 50 ms, each news one of
  ``("ok", cluster, version, targets, snapshot_time_s, success)``,
  ``("error", cluster, version, kind, message)`` (kind ``not_found``, ``unavailable`` or a
  :class:`~keda_ray_scaler.errors.Refusal` value, so the parent refuses with the same reason)
  and ``("forgot", cluster)``; and
  ``("metrics", token, exposition)``: the child's own registry (plan time, refreshes, source
  errors, data age, targets, the source's HTTP metrics) in text format, rendered when a scrape
  of the parent's ``/metrics`` asks and re-exposed unchanged by :class:`RelayCollector`.

Safety: when the child exits, every cluster turns UNAVAILABLE ("refresher process exited") at
once, never zero, and the child is started again with bounded exponential backoff; the parent
sends it every cluster in use. Scale-down is held until a snapshot taken after the *parent*
started, as in one process. The child exits when the parent's end of the pipe closes, so an
RPC process killed with SIGKILL leaves no refresher behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Final

import structlog
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from keda_ray_scaler.errors import DemandUnavailable, NotFound, Refusal, ScalerError, UntrustedData
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc.targets import (
    Clock,
    GroupTarget,
    Planner,
    TargetCache,
    TargetSettings,
    check_fresh,
)
from keda_ray_scaler.sources.base import Source
from keda_ray_scaler.telemetry import scaler_metrics

#: builds the source in the child, registering its metrics in the registry it is given; must
#: be picklable (a module-level function or a functools.partial of one)
SourceFactory = Callable[[CollectorRegistry], Source]

_log = structlog.get_logger(__name__)
_NICE: Final = 10  # below the gRPC process: under CPU contention its threads go first
_BATCH_S: Final = 0.05  # the child sends its news at most this often
_METRICS_WAIT_S: Final = 2.0  # a scrape waits this long for the child's registry
_STOP_WAIT_S: Final = 5.0  # graceful stop of the child, then SIGKILL
_BACKOFF_S: Final = (1.0, 30.0)  # restart delay of a child that exited: first, maximum
_STABLE_S: Final = 60.0  # a child that ran this long restarts after the first delay again


class RelayCollector:
    """Re-exposes the child's registry in the parent's, asking the child at every collection.

    The child renders its registry only when asked (a scrape), so an unscraped scaler spends
    nothing on it. A collection waits up to two seconds for the answer, else serves the
    previous one; while no child runs it serves nothing (the series are absent, not stale).
    The answer arrives through the event loop, so a collection on the loop's own thread does
    not wait: it serves the previous answer.
    """

    def __init__(self) -> None:
        self._ask: Callable[[int], bool] | None = None
        self._loop_thread: int | None = None
        self._tokens = itertools.count(1)
        self._answer: tuple[int, str] = (0, "")
        self._arrived = threading.Condition()

    def attach(self, ask: Callable[[int], bool], loop_thread: int) -> None:
        """``ask(token)`` requests the child's exposition (False: no child to ask), answered
        by :meth:`deliver` on the event loop running in thread ``loop_thread``."""
        self._ask = ask
        self._loop_thread = loop_thread

    def deliver(self, token: int, text: str) -> None:
        """The child's exposition for ``token`` (called on the event loop)."""
        with self._arrived:
            self._answer = (token, text)
            self._arrived.notify_all()

    def collect(self) -> Iterator[Metric]:
        token = next(self._tokens)
        if self._ask is None:
            return
        if threading.get_ident() != self._loop_thread:
            if not self._ask(token):
                return  # no child runs
            with self._arrived:
                self._arrived.wait_for(lambda: self._answer[0] >= token, _METRICS_WAIT_S)
        yield from text_string_to_metric_families(self._answer[1])


@dataclass(slots=True)
class _Mirror:
    """The parent's copy of one cluster's last refresh outcome; event loop only."""

    last_used_s: float
    last_want_s: float
    version: int = 0
    targets: Mapping[str, GroupTarget] | None = None
    snapshot_time_s: float = 0.0
    success: bool = False
    error: ScalerError | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class ProcessTargetCache:
    """The reading side of :class:`TargetCache`, fed by a refresher child process.

    Same interface as :class:`TargetCache` for the servicer: :meth:`get`, :meth:`version`,
    :meth:`wait_changed`, :meth:`clusters`, :attr:`settings`, plus :meth:`run` (supervises the
    child until cancelled), :meth:`refresh` (one round now) and :meth:`aclose`.
    """

    def __init__(
        self,
        source_factory: SourceFactory,
        *,
        clock: Clock,
        settings: TargetSettings | None = None,
        planner: Planner | None = None,
        relay: RelayCollector | None = None,
    ) -> None:
        self._factory = source_factory
        self._clock = clock
        self.settings = settings or TargetSettings()
        self._planner = planner
        self._relay = relay
        self._started_s = clock()
        self._entries: dict[ClusterRef, _Mirror] = {}
        self._send_lock = threading.Lock()  # scrapes ask for metrics from the HTTP thread
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._tokens = itertools.count(1)
        self._refreshed: dict[int, asyncio.Future[None]] = {}
        self._ready = asyncio.Event()  # a child is running
        self._stopping = False
        self._down: ScalerError | None = None  # why no child runs, between restarts
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        """The refresher child's PID while it runs."""
        proc = self._process
        return proc.pid if proc is not None and proc.is_alive() else None

    # --- reading (the servicer's side) ----------------------------------------------------

    async def get(
        self, cluster: ClusterRef, group: str, max_age_s: float | None = None
    ) -> GroupTarget:
        """The current target of ``group``; raises DemandUnavailable or NotFound."""
        entry = self._use(cluster)
        if entry.version == 0:
            try:
                await asyncio.wait_for(entry.changed.wait(), self.settings.first_wait_s)
            except TimeoutError:
                raise DemandUnavailable(f"no data yet for Ray cluster {cluster}") from None
        if entry.error is not None:
            raise entry.error
        if entry.targets is None:  # pragma: no cover - an outcome sets one of the two
            raise DemandUnavailable(f"no data yet for Ray cluster {cluster}")
        check_fresh(
            cluster,
            success=entry.success,
            snapshot_time_s=entry.snapshot_time_s,
            now=self._clock(),
            max_age_s=self.settings.age_limit(max_age_s),
            max_skew_s=self.settings.max_clock_skew_s,
        )
        target = entry.targets.get(group)
        if target is None:
            raise NotFound(f"worker group {group!r} not found in Ray cluster {cluster}")
        return target

    def version(self, cluster: ClusterRef) -> int:
        """How many outcomes of ``cluster`` arrived (0 when unknown)."""
        entry = self._entries.get(cluster)
        return entry.version if entry is not None else 0

    async def wait_changed(self, cluster: ClusterRef, after: int) -> int:
        """Wait until ``cluster`` has an outcome newer than version ``after``; the new version."""
        while True:
            entry = self._use(cluster)
            if entry.version > after:
                return entry.version
            await entry.changed.wait()

    def clusters(self) -> list[ClusterRef]:
        """Clusters currently mirrored, sorted."""
        return sorted(self._entries)

    def _use(self, cluster: ClusterRef) -> _Mirror:
        now = self._clock()
        entry = self._entries.get(cluster)
        if entry is None:
            self.settings.check_room(cluster, self._entries.keys())
            entry = self._entries[cluster] = _Mirror(last_used_s=now, last_want_s=now)
            self._send("want", cluster)
            if self._down is not None:  # answer at once instead of waiting for a restart
                entry.error = self._down
                _notify(entry)
        elif now - entry.last_want_s >= self.settings.forget_after_s / 4:
            entry.last_want_s = now
            self._send("want", cluster)
        entry.last_used_s = now
        return entry

    # --- the child's messages -------------------------------------------------------------

    def _on_message(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "batch":
            for news in message[1]:
                self._on_message(news)
            return
        if kind == "metrics":
            if self._relay is not None:
                self._relay.deliver(message[1], message[2])
            return
        if kind == "refreshed":
            future = self._refreshed.pop(message[1], None)
            if future is not None and not future.done():
                future.set_result(None)
            return
        cluster = message[1]
        if kind == "forgot":
            self._entries.pop(cluster, None)
            return
        entry = self._entries.get(cluster)
        if entry is None:
            return
        if kind == "ok":
            _, _, _, entry.targets, entry.snapshot_time_s, entry.success = message
            entry.error = None
        else:  # "error": kind of error, message
            _, _, _, error_kind, text = message
            entry.error = error_from_wire(error_kind, text)
        _notify(entry)

    def _child_gone(self, outcome: str) -> None:
        error = self._down = DemandUnavailable(f"refresher process {outcome}; restarting")
        for entry in self._entries.values():
            entry.error = error
            _notify(entry)
        for future in self._refreshed.values():
            if not future.done():
                future.set_exception(error)
        self._refreshed.clear()

    # --- the child's life -----------------------------------------------------------------

    async def run(self) -> None:
        """Run the refresher child, restarting it with backoff when it exits, until cancelled."""
        if self._relay is not None:
            self._relay.attach(lambda token: self._send("metrics", token), threading.get_ident())
        failures = 0  # in a row: the restart delay doubles with each
        while not self._stopping:
            started = time.monotonic()
            try:
                outcome = f"exited (code {await self._run_child()})"
            except Exception as exc:  # e.g. no process can be started: retry, never give up
                _log.exception("refresher process failed to start")
                outcome = f"failed to start ({type(exc).__name__}: {exc})"
            if self._stopping:
                return
            self.restarts += 1
            if time.monotonic() - started > _STABLE_S:
                failures = 0
            first, most = _BACKOFF_S
            delay = min(first * 2**failures, most)
            failures += 1
            _log.error("refresher process stopped, restarting", outcome=outcome, delay_s=delay)
            self._child_gone(outcome)
            await asyncio.sleep(delay)

    async def _run_child(self) -> int | None:
        loop = asyncio.get_running_loop()
        ctx = multiprocessing.get_context("spawn")
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(
            target=child_main,
            args=(theirs, self._factory, self.settings, self._started_s, self._planner),
            name="keda-ray-scaler-refresher",
            daemon=True,
        )
        proc.start()
        theirs.close()
        gone: asyncio.Future[None] = loop.create_future()
        fd = ours.fileno()
        # the event loop reads the pipe itself: no reader thread contending for the GIL with
        # grpc's poller thread (measured: threads woken per message added 20-40 ms to p99)
        loop.add_reader(fd, self._readable, ours, gone)
        with self._send_lock:
            self._process, self._conn = proc, ours
        for cluster in self._entries:
            self._send("want", cluster)
        self._ready.set()
        self._down = None
        _log.info("refresher process started", pid=proc.pid)
        try:
            await asyncio.shield(gone)
        finally:
            self._ready.clear()
            loop.remove_reader(fd)
        await asyncio.to_thread(proc.join, _STOP_WAIT_S)
        with self._send_lock:
            self._conn = None
            ours.close()
        return proc.exitcode

    def _readable(self, conn: Connection, gone: asyncio.Future[None]) -> None:
        """The pipe is readable: handle every message waiting, or the child's end (EOF)."""
        try:
            while conn.poll():
                self._on_message(conn.recv())
        except (EOFError, OSError):
            asyncio.get_running_loop().remove_reader(conn.fileno())
            _resolve(gone)

    def _send(self, *message: Any) -> bool:
        """Send to the child if one runs (from any thread); False when none does."""
        with self._send_lock:
            if self._conn is None:
                return False  # the next child gets every cluster in use when it starts
            try:
                self._conn.send(message)
            except OSError:
                return False
            return True

    async def refresh(self) -> None:
        """One refresh round in the child now; returns when its outcomes have arrived."""
        await self._ready.wait()
        token = next(self._tokens)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._refreshed[token] = future
        self._send("refresh", token)
        await future

    async def aclose(self) -> None:
        """Stop the child: ask, wait a few seconds, then kill it; its PID is gone after this."""
        self._stopping = True
        proc = self._process
        if proc is None:
            return
        if proc.is_alive():
            self._send("stop")
            await asyncio.to_thread(proc.join, _STOP_WAIT_S)
        if proc.is_alive():
            _log.warning("refresher process did not stop, killing it", pid=proc.pid)
            proc.kill()
            await asyncio.to_thread(proc.join, _STOP_WAIT_S)
        with self._send_lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):  # may still be registered on the loop
                    asyncio.get_running_loop().remove_reader(self._conn.fileno())
                self._conn.close()
                self._conn = None
        self._process = None


def error_to_wire(error: ScalerError | None) -> str:
    """The ``kind`` of an ``error`` news: ``not_found``, a refusal reason, or ``unavailable``."""
    if isinstance(error, NotFound):
        return "not_found"
    if isinstance(error, UntrustedData):
        return error.reason.value
    return "unavailable"


def error_from_wire(kind: str, text: str) -> ScalerError:
    """The parent's error for an ``error`` news (the inverse of :func:`error_to_wire`)."""
    if kind == "not_found":
        return NotFound(text)
    reasons = {r.value: r for r in Refusal}
    if kind in reasons:
        return UntrustedData(reasons[kind], text)
    return DemandUnavailable(text)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _notify(entry: _Mirror) -> None:
    entry.version += 1
    done, entry.changed = entry.changed, asyncio.Event()
    done.set()


# --- the child process -----------------------------------------------------------------------


def child_main(
    conn: Connection,
    factory: SourceFactory,
    settings: TargetSettings,
    started_s: float,
    planner: Planner | None,
) -> None:
    """Entry point of the refresher process (``spawn``): refresh until told to stop."""
    # Ctrl-C reaches the whole process group: the parent stops us (pipe EOF or "stop")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(_NICE)
    asyncio.run(_child(conn, factory, settings, started_s, planner))


async def _child(
    conn: Connection,
    factory: SourceFactory,
    settings: TargetSettings,
    started_s: float,
    planner: Planner | None,
) -> None:
    registry = CollectorRegistry()
    metrics = scaler_metrics(CollectorRegistry(), refresh_registry=registry)
    source = factory(registry)

    def send(message: tuple[Any, ...]) -> None:
        with contextlib.suppress(OSError):  # the parent is gone: the reader sees EOF, we exit
            conn.send(message)

    pending: dict[ClusterRef, None] = {}  # clusters with news, in order

    def publish(cluster: ClusterRef) -> None:
        """Queue ``cluster``'s news; a batch goes out at most every _BATCH_S (fewer wake-ups
        of the gRPC process: one per batch instead of one per cluster)."""
        if not pending:
            asyncio.get_running_loop().call_later(_BATCH_S, flush)
        pending[cluster] = None  # news are read when sent: the latest outcome goes

    def flush() -> None:
        if not pending:  # flushed early (a "refresh" answer) before its timer fired
            return
        batch = [news(cluster) for cluster in pending]
        pending.clear()
        send(("batch", batch))

    def news(cluster: ClusterRef) -> tuple[Any, ...]:
        latest = cache.latest(cluster)
        if latest is None:
            return ("forgot", cluster)
        version, view, error = latest
        if error is not None or view is None:
            return ("error", cluster, version, error_to_wire(error), str(error or "no data"))
        snap = view.snapshot
        return ("ok", cluster, version, dict(view.targets), snap.snapshot_time_s, snap.success)

    cache = TargetCache(
        source,
        clock=time.time,
        planner=planner,
        settings=settings,
        metrics=metrics,
        started_s=started_s,
        on_change=publish,
    )

    tasks = [asyncio.create_task(cache.run())]
    try:
        while True:
            try:
                message = await asyncio.to_thread(conn.recv)
            except (EOFError, OSError):
                return  # the parent is gone
            if message[0] == "stop":
                return
            if message[0] == "want":
                try:
                    cache.touch(message[1])
                except ScalerError as exc:
                    send(("error", message[1], 0, "unavailable", str(exc)))
            elif message[0] == "metrics":
                send(("metrics", message[1], generate_latest(registry).decode()))
            elif message[0] == "refresh":
                await cache.refresh()
                flush()  # the round's outcomes before its answer
                send(("refreshed", message[1]))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await cache.aclose()
        close = getattr(source, "close", None)
        if close is not None:
            close()
        conn.close()
