"""KubeRay mode: what one applier round reads, from the watches when they hold it, else by GET.

The RayCluster (:mod:`~keda_ray_scaler.agent.kuberay.raycluster_watch`), the RayWorkerGroups
naming it (:mod:`~keda_ray_scaler.agent.kuberay.rwg_watch`) and the namespace's ScaledObjects
(:mod:`~keda_ray_scaler.agent.kuberay.scaledobject_watch`) are watched; :meth:`RoundReads.read`
takes each from its watch while that watch has listed and not failed since, and reads it by GET
otherwise (a watch not yet listed, a failing one, a Role without ``watch``: the watch warns
once, not every round). A synced round makes no GET.

A watched read may lag the API server by an event. That is safe: every RayCluster patch carries
the read's ``resourceVersion`` and the group's name at its index as preconditions, and a refused
one re-reads the RayCluster by GET and decides again, so a stale read costs a refused patch or a
round's delay, never a wrong write. The object our own patch returns is handed to the RayCluster
watch (:meth:`RoundReads.wrote`), so the next round does not start from the version before it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from keda_ray_scaler.agent.kuberay.kuberay_api import KubeRayApi
from keda_ray_scaler.agent.kuberay.scaledobject import ScaledObject

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Watched(Protocol[T_co]):
    """What a watch holds: the latest, or None while it has not listed or has failed."""

    def current(self) -> T_co | None:
        """The latest read (read only), or None: read it by GET."""


class WatchedRayCluster(Watched[dict[str, Any]], Protocol):
    """The RayCluster's watch, which also takes the object our own patch returned."""

    def wrote(self, obj: Mapping[str, Any]) -> None:
        """Our patch's result: the latest version until the watch brings a later one."""


@dataclass(frozen=True, slots=True)
class Watches:
    """The applier's watches (None: read by GET every round)."""

    raycluster: WatchedRayCluster | None = None
    worker_groups: Watched[list[dict[str, Any]]] | None = None
    scaled_objects: Watched[list[ScaledObject]] | None = None


@dataclass(frozen=True, slots=True)
class RoundRead:
    """One round's reads."""

    raycluster: dict[str, Any]
    worker_groups: list[dict[str, Any]]
    scaled_objects: list[ScaledObject]


class RoundReads:
    """Each round's three reads, from ``watches`` or by ``api``'s GET (module doc)."""

    def __init__(self, api: KubeRayApi, watches: Watches, logger: Any) -> None:
        self._api = api
        self._watches = watches
        self._log = logger
        self._noted: set[str] = set()  # what was read by GET, logged once at info

    async def read(self) -> RoundRead:
        """The RayCluster, its RayWorkerGroups and the ScaledObjects; KubernetesError when a
        GET fails."""
        w = self._watches
        return RoundRead(
            await self._one("RayCluster", w.raycluster, self._api.raycluster),
            await self._one("RayWorkerGroups", w.worker_groups, self._api.worker_groups),
            await self._one("ScaledObjects", w.scaled_objects, self._api.scaled_objects),
        )

    def wrote(self, raycluster: Mapping[str, Any]) -> None:
        """Our own patch's result, to the RayCluster's watch."""
        if self._watches.raycluster is not None:
            self._watches.raycluster.wrote(raycluster)

    async def _one(self, what: str, watch: Watched[T] | None, get: Callable[[], Awaitable[T]]) -> T:
        """From the watch when it holds it, else by GET (logged at info the first time; a
        failing watch warns itself)."""
        held = None if watch is None else watch.current()
        if held is not None:
            return held
        if watch is not None:
            level = "debug" if what in self._noted else "info"
            getattr(self._log, level)("read by GET: its watch holds nothing yet", read=what)
            self._noted.add(what)
        return await get()
