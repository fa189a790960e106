"""The ``StreamIsActive`` push loop: a worker group's activity on open, then only its edges.

``true`` at the first refresh where an inactive group becomes active (rising edge, immediately),
``false`` only after the group has stayed inactive for the debounce (falling edge). Unavailable
data sends nothing: unknown is not inactive.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import structlog

from keda_ray_scaler.clock import Now
from keda_ray_scaler.errors import ScalerError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc.entry import GroupTarget
from keda_ray_scaler.rpc.targets import TargetReader
from keda_ray_scaler.rpc.trigger import TriggerConfig

_log = structlog.get_logger(__name__)
_T = TypeVar("_T")


class IsActiveStreams:
    """What every open ``StreamIsActive`` of a servicer shares: the targets, the clock, the
    debounce and the stop."""

    def __init__(
        self, cache: TargetReader, *, clock: Now, debounce_s: float, stopping: asyncio.Event
    ) -> None:
        self._cache = cache
        self._clock = clock
        self._debounce_s = debounce_s
        self._stopping = stopping

    async def answers(
        self, config: TriggerConfig, cluster: ClusterRef, t: GroupTarget, seen: int
    ) -> AsyncIterator[pb.IsActiveResponse]:
        """``t``'s state, then edges after version ``seen``: rising at once, falling after the
        debounce; until stopping."""
        sent = t.active
        yield pb.IsActiveResponse(result=sent)
        inactive_since: float | None = None if sent else self._clock()
        log = _log.bind(
            namespace=cluster.namespace, cluster=cluster.name, worker_group=config.group
        )
        while not self._stopping.is_set():
            changed = await self._wait(self._cache.wait_changed(cluster, seen))
            if changed is None:
                return
            seen = changed
            try:
                t = await self._cache.get(cluster, config.group, config.max_age_s)
            except ScalerError as exc:
                log.debug("stream state unknown", error=str(exc))
                continue
            now = self._clock()
            if t.active:
                inactive_since = None
                if not sent:
                    sent = True
                    log.info("worker group became active", target=t.target)
                    yield pb.IsActiveResponse(result=True)
                continue
            if inactive_since is None:
                inactive_since = now
            if sent and now - inactive_since >= self._debounce_s:
                sent = False
                log.info("worker group became inactive")
                yield pb.IsActiveResponse(result=False)

    async def _wait(self, waiting: Awaitable[_T]) -> _T | None:
        """Wait for ``waiting`` or for stop; its result, or None when stopping came first."""
        task = asyncio.ensure_future(waiting)
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not task.done():
                task.cancel()
        return task.result() if task.done() and not task.cancelled() else None
