"""The interface every data source implements: where cluster snapshots come from.

A source turns the agent's metrics (through Prometheus, or scraped directly) into a
:class:`keda_ray_scaler.schema.ClusterSnapshot`. The scaler (``rpc/targets.py``) calls it from
one background refresh per cluster per interval, never once per KEDA request.

Contract:
- ``fetch(cluster)`` takes a :class:`~keda_ray_scaler.identity.ClusterRef` (namespace and
  name: a cluster of another namespace with the same name is another cluster) and returns its
  latest snapshot, with ``snapshot_time_s`` being the
  agent's own snapshot time (unix seconds), not the time of the query; staleness is judged from it.
- It raises :class:`~keda_ray_scaler.errors.DemandUnavailable` when the backend fails, times out,
  returns nothing, or returns values that cannot be trusted (NaN, negative, absurd): never an
  empty or zero snapshot in place of an unknown one.
- It raises :class:`~keda_ray_scaler.errors.NotFound` when the backend answers but knows no such
  cluster (no ``worker_group_info`` series for it) in that namespace.
- It raises :class:`~keda_ray_scaler.errors.UntrustedData` (``two_origins``) when more than one
  origin (scrape target) exports the cluster: never "newest wins".
- It never blocks the event loop: synchronous clients run in ``asyncio.to_thread`` with a deadline.

A source that can answer every cluster with one query set also implements :class:`BatchSource`;
the scaler then issues one ``fetch_all()`` per interval instead of one ``fetch`` per cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from keda_ray_scaler.errors import NotFound, ScalerError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.schema import ClusterSnapshot


@runtime_checkable
class Source(Protocol):
    """Snapshots of one Ray cluster at a time."""

    async def fetch(self, cluster: ClusterRef) -> ClusterSnapshot:
        """The latest snapshot of ``cluster``; raises DemandUnavailable or NotFound."""
        ...


@runtime_checkable
class BatchSource(Source, Protocol):
    """A source that can fetch every cluster it knows with one query set."""

    async def fetch_all(self) -> dict[ClusterRef, ClusterSnapshot]:
        """Snapshots of every cluster, keyed by namespace and name; raises DemandUnavailable.

        A cluster absent from the result is unknown to the backend (NotFound for it).
        """
        ...


class MemorySource:
    """An in-memory source for tests, benchmarks and the demo: snapshots set by the caller.

    ``failure`` makes every fetch raise it; ``gate``, when set, makes fetches wait for it
    (to hold a fetch in flight). ``fetches`` counts calls.
    """

    def __init__(self, snapshots: Mapping[ClusterRef, ClusterSnapshot] | None = None) -> None:
        self.snapshots: dict[ClusterRef, ClusterSnapshot] = dict(snapshots or {})
        self.failure: ScalerError | None = None
        self.gate: asyncio.Event | None = None
        self.fetches = 0

    async def fetch(self, cluster: ClusterRef) -> ClusterSnapshot:
        """The stored snapshot of ``cluster``; NotFound when there is none."""
        self.fetches += 1
        await self._pass()
        snap = self.snapshots.get(cluster)
        if snap is None:
            raise NotFound(f"Ray cluster {cluster} not found")
        return snap

    async def _pass(self) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure


class MemoryBatchSource(MemorySource):
    """A :class:`MemorySource` that also answers every cluster at once."""

    def __init__(self, snapshots: Mapping[ClusterRef, ClusterSnapshot] | None = None) -> None:
        super().__init__(snapshots)
        self.batch_fetches = 0

    async def fetch_all(self) -> dict[ClusterRef, ClusterSnapshot]:
        """Every stored snapshot."""
        self.batch_fetches += 1
        await self._pass()
        return dict(self.snapshots)
