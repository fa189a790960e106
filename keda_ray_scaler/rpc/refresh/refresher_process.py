"""The refresher child seen from the RPC process: started, read, written, restarted, stopped.

The child (:func:`~keda_ray_scaler.rpc.refresh.refresher_child.child_main`) is started with
``spawn``;
the event loop reads its end of the pipe itself, any thread may write to it. When the child
exits it is started again with bounded exponential backoff (:class:`RestartBackoff`). What the
child says, and when it starts or stops, goes to its owner,
:class:`~keda_ray_scaler.rpc.refresh.refresher.ProcessTargetCache`.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Final

import structlog

from keda_ray_scaler.clock import Now, Sleep
from keda_ray_scaler.rpc.refresh.messages import Stop, ToChild, ToParent
from keda_ray_scaler.rpc.refresh.refresher_child import ChildArgs, child_main
from keda_ray_scaler.rpc.refresh.restart_backoff import RestartBackoff

_log = structlog.get_logger(__name__)
_STOP_WAIT_S: Final = 5.0  # graceful stop of the child, then SIGKILL
_BACKOFF_S: Final = (1.0, 30.0)  # restart delay of a child that exited: first, maximum
_STABLE_S: Final = 60.0  # a child that ran this long restarts after the first delay again


class RefresherProcess:
    """One refresher child at a time, restarted until :meth:`aclose`.

    ``on_started()`` runs once a child can be sent messages, ``on_message(message)`` for each
    message it sends (on the event loop), ``on_exited(outcome)`` when it stopped unasked, before
    the restart delay.
    """

    def __init__(
        self,
        args: ChildArgs,
        *,
        on_started: Callable[[], None],
        on_message: Callable[[ToParent], None],
        on_exited: Callable[[str], None],
        monotonic: Now = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._args = args
        self._on_started = on_started
        self._on_message = on_message
        self._on_exited = on_exited
        self._monotonic = monotonic  # how long a child ran (its restart back-off)
        self._sleep = sleep
        self._send_lock = threading.Lock()  # scrapes ask for metrics from the HTTP thread
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._ready = asyncio.Event()  # a child is running
        self._stopping = False
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        """The refresher child's PID while it runs."""
        proc = self._process
        return proc.pid if proc is not None and proc.is_alive() else None

    async def running(self) -> None:
        """Return once a child runs."""
        await self._ready.wait()

    async def run(self) -> None:
        """Run the refresher child, restarting it with backoff when it exits, until cancelled."""
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
            self._on_exited(outcome)
            await backoff.sleep(delay)

    async def _run_child(self) -> int | None:
        loop = asyncio.get_running_loop()
        ctx = multiprocessing.get_context("spawn")
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(
            target=child_main,
            args=(theirs, self._args),
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
        self._on_started()
        self._ready.set()
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
            resolve(gone)

    def send(self, message: ToChild) -> bool:
        """Send to the child if one runs (from any thread); False when none does."""
        with self._send_lock:
            if self._conn is None:
                return False  # the next child gets every cluster in use when it starts
            try:
                self._conn.send(message)
            except OSError:
                return False
            return True

    async def aclose(self) -> None:
        """Stop the child: ask, wait a few seconds, then kill it; its PID is gone after this."""
        self._stopping = True
        proc = self._process
        if proc is None:
            return
        if proc.is_alive():
            self.send(Stop())
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


def resolve(future: asyncio.Future[None] | None) -> None:
    """Set ``future``'s result, unless there is none or it is done already."""
    if future is not None and not future.done():
        future.set_result(None)
