"""The refresher child process: a :class:`~keda_ray_scaler.rpc.targets.TargetCache` whose news
go over a pipe to the RPC process (see :mod:`keda_ray_scaler.rpc.refresh.refresher` for why).

It answers the parent's :data:`~keda_ray_scaler.rpc.refresh.messages.ToChild` messages and sends
every
finished refresh as :data:`~keda_ray_scaler.rpc.refresh.messages.News`, batched so that the RPC
process
wakes once per batch instead of once per cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Final

from prometheus_client import CollectorRegistry, generate_latest

from keda_ray_scaler.errors import ScalerError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc.cluster_refresh import Planner
from keda_ray_scaler.rpc.refresh.messages import (
    AskMetrics,
    Batch,
    Failed,
    Forgot,
    MetricsText,
    News,
    Refreshed,
    RefreshNow,
    Stop,
    Targets,
    ToChild,
    ToParent,
    Want,
    error_to_wire,
)
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.targets import TargetCache
from keda_ray_scaler.sources.base import Source
from keda_ray_scaler.telemetry import scaler_metrics

#: builds the source in the child, registering its metrics in the registry it is given; must
#: be picklable (a module-level function or a functools.partial of one)
SourceFactory = Callable[[CollectorRegistry], Source]

_NICE: Final = 10  # below the gRPC process: under CPU contention its threads go first
_BATCH_S: Final = 0.05  # the child sends its news at most this often


@dataclass(frozen=True, slots=True)
class ChildArgs:
    """What the parent gives the child at start (pickled by ``spawn``)."""

    factory: SourceFactory
    settings: TargetSettings
    started_s: float  # when the parent started: scale-down is held until a snapshot after it
    planner: Planner | None


def child_main(conn: Connection, args: ChildArgs) -> None:
    """Entry point of the refresher process (``spawn``): refresh until told to stop."""
    # Ctrl-C reaches the whole process group: the parent stops us (pipe EOF or Stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(_NICE)
    asyncio.run(_child(conn, args))


class _Publisher:
    """Sends the cache's news to the parent: queued per cluster, one batch every _BATCH_S."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._pending: dict[ClusterRef, None] = {}  # clusters with news, in order
        self.cache: TargetCache | None = None  # set once the cache that calls us exists

    def send(self, message: ToParent) -> None:
        """Send now; a gone parent is not an error here (the reader sees EOF and we exit)."""
        with contextlib.suppress(OSError):
            self._conn.send(message)

    def publish(self, cluster: ClusterRef) -> None:
        """Queue ``cluster``'s news (the cache's ``on_change``): fewer wake-ups of the gRPC
        process, one per batch instead of one per cluster."""
        if not self._pending:
            asyncio.get_running_loop().call_later(_BATCH_S, self.flush)
        self._pending[cluster] = None  # news are read when sent: the latest outcome goes

    def flush(self) -> None:
        """Send the queued news now (also before a RefreshNow's answer)."""
        if not self._pending:  # flushed early (a RefreshNow answer) before its timer fired
            return
        batch = tuple(self._news(cluster) for cluster in self._pending)
        self._pending.clear()
        self.send(Batch(batch))

    def _news(self, cluster: ClusterRef) -> News:
        assert self.cache is not None
        latest = self.cache.latest(cluster)
        if latest is None:
            return Forgot(cluster)
        version, view, error = latest
        if error is not None or view is None:
            return Failed(cluster, version, error_to_wire(error), str(error or "no data"))
        snap = view.snapshot
        return Targets(cluster, version, dict(view.targets), snap.snapshot_time_s, snap.success)


async def _handle(
    message: ToChild, cache: TargetCache, out: _Publisher, registry: CollectorRegistry
) -> bool:
    """Act on one message from the parent; False when it says to stop."""
    match message:
        case Stop():
            return False
        case Want(cluster):
            try:
                cache.touch(cluster)
            except ScalerError as exc:
                out.send(Failed(cluster, 0, "unavailable", str(exc)))
        case AskMetrics(token):
            out.send(MetricsText(token, generate_latest(registry).decode()))
        case RefreshNow(token):
            await cache.refresh()
            out.flush()  # the round's outcomes before its answer
            out.send(Refreshed(token))
    return True


async def _child(conn: Connection, args: ChildArgs) -> None:
    registry = CollectorRegistry()
    metrics = scaler_metrics(CollectorRegistry(), refresh_registry=registry)
    source = args.factory(registry)
    out = _Publisher(conn)
    cache = out.cache = TargetCache(
        source,
        clock=time.time,
        planner=args.planner,
        settings=args.settings,
        metrics=metrics,
        started_s=args.started_s,
        on_change=out.publish,
    )
    tasks = [asyncio.create_task(cache.run())]
    try:
        while True:
            try:
                message = await asyncio.to_thread(conn.recv)
            except (EOFError, OSError):
                return  # the parent is gone
            if not await _handle(message, cache, out, registry):
                return
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await cache.aclose()
        close = getattr(source, "close", None)
        if close is not None:
            close()
        conn.close()
