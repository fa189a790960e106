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

Protocol: the frozen dataclasses of :mod:`keda_ray_scaler.rpc.messages`, pickled over one
duplex :func:`multiprocessing.Pipe`. The parent sends :class:`~.messages.Want` for each cluster
in use, :class:`~.messages.RefreshNow`, :class:`~.messages.AskMetrics` and
:class:`~.messages.Stop`; the child (:mod:`keda_ray_scaler.rpc.refresher_child`) answers with
batches of news (:class:`~.messages.Targets`, :class:`~.messages.Failed`,
:class:`~.messages.Forgot`) at most every 50 ms, :class:`~.messages.Refreshed`, and its own
registry in text format (:class:`~.messages.MetricsText`), re-exposed unchanged by
:class:`~keda_ray_scaler.rpc.relay.RelayCollector`.

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
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Final

import structlog

from keda_ray_scaler.clock import Now, Sleep
from keda_ray_scaler.errors import DemandUnavailable, ScalerError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc.backoff import RestartBackoff
from keda_ray_scaler.rpc.entry import GroupTarget, TargetEntry, pick, wait_first
from keda_ray_scaler.rpc.messages import (
    AskMetrics,
    Batch,
    Failed,
    Forgot,
    MetricsText,
    Refreshed,
    RefreshNow,
    Stop,
    Targets,
    ToChild,
    ToParent,
    Want,
)
from keda_ray_scaler.rpc.refresher_child import ChildArgs, child_main
from keda_ray_scaler.rpc.refresher_child import SourceFactory as SourceFactory  # re-exported
from keda_ray_scaler.rpc.relay import RelayCollector
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.targets import Planner

_log = structlog.get_logger(__name__)
_STOP_WAIT_S: Final = 5.0  # graceful stop of the child, then SIGKILL
_BACKOFF_S: Final = (1.0, 30.0)  # restart delay of a child that exited: first, maximum
_STABLE_S: Final = 60.0  # a child that ran this long restarts after the first delay again


@dataclass(slots=True, kw_only=True)
class _Mirror(TargetEntry):
    """The parent's copy of one cluster's last refresh outcome; event loop only."""

    last_want_s: float  # when the child was last told the cluster is in use


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
        clock: Now,
        settings: TargetSettings | None = None,
        planner: Planner | None = None,
        relay: RelayCollector | None = None,
        monotonic: Now = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._factory = source_factory
        self._clock = clock
        self._monotonic = monotonic  # how long a child ran (its restart back-off)
        self._sleep = sleep
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
            await wait_first(entry.changed.wait(), cluster, self.settings.first_wait_s)
        targets = entry.targets_now(
            cluster,
            now=self._clock(),
            max_age_s=self.settings.age_limit(max_age_s),
            max_skew_s=self.settings.max_clock_skew_s,
        )
        return pick(targets, cluster, group)

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
            self._send(Want(cluster))
            if self._down is not None:  # answer at once instead of waiting for a restart
                entry.error = self._down
                entry.notify()
        elif now - entry.last_want_s >= self.settings.forget_after_s / 4:
            entry.last_want_s = now
            self._send(Want(cluster))
        entry.last_used_s = now
        return entry

    # --- the child's messages -------------------------------------------------------------

    def _on_message(self, message: ToParent) -> None:
        match message:
            case Batch(news):
                for one in news:
                    self._on_message(one)
            case MetricsText(token, exposition):
                if self._relay is not None:
                    self._relay.deliver(token, exposition)
            case Refreshed(token):
                _resolve(self._refreshed.pop(token, None))
            case Forgot(cluster):
                self._entries.pop(cluster, None)
            case Targets(cluster, _, targets, snapshot_time_s, success):
                if (entry := self._entries.get(cluster)) is not None:
                    entry.targets, entry.snapshot_time_s = targets, snapshot_time_s
                    entry.success, entry.error = success, None
                    entry.notify()
            case Failed(cluster):
                if (entry := self._entries.get(cluster)) is not None:
                    entry.error = message.error
                    entry.notify()

    def _child_gone(self, outcome: str) -> None:
        error = self._down = DemandUnavailable(f"refresher process {outcome}; restarting")
        for entry in self._entries.values():
            entry.error = error
            entry.notify()
        for future in self._refreshed.values():
            if not future.done():
                future.set_exception(error)
        self._refreshed.clear()

    # --- the child's life -----------------------------------------------------------------

    async def run(self) -> None:
        """Run the refresher child, restarting it with backoff when it exits, until cancelled."""
        if self._relay is not None:
            self._relay.attach(self._ask_metrics, threading.get_ident())
        first_s, most_s = _BACKOFF_S
        backoff = RestartBackoff(first_s, most_s, _STABLE_S, self._monotonic, self._sleep)
        while not self._stopping:
            backoff.started()
            try:
                outcome = f"exited (code {await self._run_child()})"
            except Exception as exc:  # e.g. no process can be started: retry, never give up
                _log.exception("refresher process failed to start")
                outcome = f"failed to start ({type(exc).__name__}: {exc})"
            if self._stopping:
                return
            self.restarts += 1
            delay = backoff.exited()
            _log.error("refresher process stopped, restarting", outcome=outcome, delay_s=delay)
            self._child_gone(outcome)
            await backoff.sleep(delay)

    def _ask_metrics(self, token: int) -> bool:
        """Ask the child for its registry (from a scrape's thread); False when none runs."""
        return self._send(AskMetrics(token))

    async def _run_child(self) -> int | None:
        loop = asyncio.get_running_loop()
        ctx = multiprocessing.get_context("spawn")
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(
            target=child_main,
            args=(theirs, ChildArgs(self._factory, self.settings, self._started_s, self._planner)),
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
            self._send(Want(cluster))
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

    def _send(self, message: ToChild) -> bool:
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
        self._send(RefreshNow(token))
        await future

    async def aclose(self) -> None:
        """Stop the child: ask, wait a few seconds, then kill it; its PID is gone after this."""
        self._stopping = True
        proc = self._process
        if proc is None:
            return
        if proc.is_alive():
            self._send(Stop())
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


def _resolve(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)
