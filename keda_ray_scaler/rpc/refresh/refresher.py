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

Protocol: the frozen dataclasses of :mod:`keda_ray_scaler.rpc.refresh.messages`, pickled over one
duplex :func:`multiprocessing.Pipe`. The parent sends :class:`~.messages.Want` for each cluster
in use, :class:`~.messages.RefreshNow`, :class:`~.messages.AskMetrics` and
:class:`~.messages.Stop`; the child (:mod:`keda_ray_scaler.rpc.refresh.refresher_child`) answers
with
batches of news (:class:`~.messages.Targets`, :class:`~.messages.Failed`,
:class:`~.messages.Forgot`) at most every 50 ms, :class:`~.messages.Refreshed`, and its own
registry in text format (:class:`~.messages.MetricsText`), re-exposed unchanged by
:class:`~keda_ray_scaler.rpc.refresh.relay.RelayCollector`.

Safety: when the child exits, every cluster turns UNAVAILABLE ("refresher process exited") at
once, never zero, and the child is started again with bounded exponential backoff
(:mod:`keda_ray_scaler.rpc.refresh.refresher_process`); the parent sends it every cluster in use.
Scale-down is held until a snapshot taken after the *parent* started, as in one process. The
child exits when the parent's end of the pipe closes, so an RPC process killed with SIGKILL
leaves no refresher behind.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from dataclasses import dataclass

from keda_ray_scaler.clock import Now, Sleep
from keda_ray_scaler.errors import DemandUnavailable, ScalerError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc.cluster_refresh import Planner
from keda_ray_scaler.rpc.entry import GroupTarget, TargetEntry, pick, wait_first
from keda_ray_scaler.rpc.refresh.messages import (
    AskMetrics,
    Batch,
    Failed,
    Forgot,
    MetricsText,
    Refreshed,
    RefreshNow,
    Targets,
    ToParent,
    Want,
)
from keda_ray_scaler.rpc.refresh.refresher_child import ChildArgs, SourceFactory
from keda_ray_scaler.rpc.refresh.refresher_process import RefresherProcess, resolve
from keda_ray_scaler.rpc.refresh.relay import RelayCollector
from keda_ray_scaler.rpc.target_settings import TargetSettings


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
        self._clock = clock
        self.settings = settings or TargetSettings()
        self._relay = relay
        self._entries: dict[ClusterRef, _Mirror] = {}
        self._child = RefresherProcess(
            ChildArgs(source_factory, self.settings, clock(), planner),
            on_started=self._child_started,
            on_message=self._on_message,
            on_exited=self._child_gone,
            monotonic=monotonic,
            sleep=sleep,
        )
        self._tokens = itertools.count(1)
        self._refreshed: dict[int, asyncio.Future[None]] = {}
        self._down: ScalerError | None = None  # why no child runs, between restarts

    @property
    def pid(self) -> int | None:
        """The refresher child's PID while it runs."""
        return self._child.pid

    @property
    def restarts(self) -> int:
        """How often the refresher child was started again after it stopped."""
        return self._child.restarts

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
            self._child.send(Want(cluster))
            if self._down is not None:  # answer at once instead of waiting for a restart
                entry.error = self._down
                entry.notify()
        elif now - entry.last_want_s >= self.settings.forget_after_s / 4:
            entry.last_want_s = now
            self._child.send(Want(cluster))
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
                resolve(self._refreshed.pop(token, None))
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

    def _child_started(self) -> None:
        """A child runs: it is told every cluster in use, and answers wait for it again."""
        for cluster in self._entries:
            self._child.send(Want(cluster))
        self._down = None

    # --- the child's life -----------------------------------------------------------------

    async def run(self) -> None:
        """Run the refresher child, restarting it with backoff when it exits, until cancelled."""
        if self._relay is not None:
            self._relay.attach(self._ask_metrics, threading.get_ident())
        await self._child.run()

    def _ask_metrics(self, token: int) -> bool:
        """Ask the child for its registry (from a scrape's thread); False when none runs."""
        return self._child.send(AskMetrics(token))

    async def refresh(self) -> None:
        """One refresh round in the child now; returns when its outcomes have arrived."""
        await self._child.running()
        token = next(self._tokens)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._refreshed[token] = future
        self._child.send(RefreshNow(token))
        await future

    async def aclose(self) -> None:
        """Stop the child: ask, wait a few seconds, then kill it; its PID is gone after this."""
        await self._child.aclose()
