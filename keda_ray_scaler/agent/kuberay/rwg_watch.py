"""KubeRay mode: a RayWorkerGroup's new ``spec.replicas`` applied at once, not at the next round.

KEDA's HPA writes a RayWorkerGroup's ``spec.replicas`` through ``/scale``; the KubeRay applier
carries it into the RayCluster each round (:func:`~keda_ray_scaler.agent.modes.run_applier`,
every ``--interval``, 5 s by default). Waiting for the round put up to one interval on every
scale-up, twice on a scale-up from zero (KEDA's 0 -> 1, then the HPA's 1 -> N). This watch
(:class:`~keda_ray_scaler.agent.kube.object_watch.ObjectWatch` over the namespace's RayWorkerGroups)
sets :attr:`ReplicasWake.event` when the replicas of a group naming the RayCluster change, and
the applier's loop runs a round at once. Status writes (the applier's own) do not wake it.
The applier also reads the groups from here (:meth:`ReplicasWake.current`) instead of a list
each round. A failed watch loses only the speed-up: the round lists them until a relist.

RBAC: ``rayworkergroups`` ``list`` and ``watch`` (already granted for the applier).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from kubernetes import client as k8s

from keda_ray_scaler.agent.kube.object_watch import ObjectWatch, WatchSettings
from keda_ray_scaler.agent.kuberay.raycluster import WORKER_GROUP_API

log = structlog.get_logger(__name__)


def _replicas(obj: Mapping[str, Any]) -> object:
    return (obj.get("spec") or {}).get("replicas")


class ReplicasWake:
    """The RayWorkerGroups naming one RayCluster, by name, as served; :attr:`event` set when
    their replicas change (a :class:`~keda_ray_scaler.agent.kube.object_watch.WatchSink`)."""

    def __init__(self, raycluster: str) -> None:
        self._raycluster = raycluster
        self._objects: dict[str, Mapping[str, Any]] = {}
        self._held = False  # listed, and no failure since
        self.event = asyncio.Event()

    def current(self) -> list[dict[str, Any]] | None:
        """The RayWorkerGroups (read only) while the watch holds them; None before the first
        list and after a failure until a list succeeds."""
        return [dict(o) for o in self._objects.values()] if self._held else None

    def _ours(self, obj: Mapping[str, Any]) -> bool:
        return bool((obj.get("spec") or {}).get("rayCluster") == self._raycluster)

    def _name(self, obj: Mapping[str, Any]) -> str:
        return str((obj.get("metadata") or {}).get("name") or "")

    def listed(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A whole list replaces the objects: a change of replicas against what was known wakes
        (a first list does not)."""
        now = {self._name(i): i for i in items if self._ours(i)}
        before = {n: _replicas(o) for n, o in self._objects.items()}
        if before and {n: _replicas(o) for n, o in now.items()} != before:
            self.event.set()
        self._objects = now
        self._held = True

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One event: a group's new version (its replicas changed: a wake), or its deletion (or
        it names another RayCluster now)."""
        name = self._name(obj)
        if kind == "DELETED" or not self._ours(obj):
            self._objects.pop(name, None)
            return
        old = self._objects.get(name)
        self._objects[name] = obj
        replicas = _replicas(obj)
        if old is None or _replicas(old) != replicas:
            log.debug("worker group replicas changed", worker_group=name, replicas=replicas)
            self.event.set()

    def unreadable(self, why: str, error: str) -> None:
        """The applier reads the RayWorkerGroups by GET until a list succeeds."""
        self._held = False
        log.warning("RayWorkerGroup watch failed", reason=why, error=error)


def replicas_watch(
    api: k8s.CustomObjectsApi, settings: WatchSettings
) -> tuple[ObjectWatch, ReplicasWake]:
    """The watch of ``settings.namespace``'s RayWorkerGroups and the wake it sets."""
    wake = ReplicasWake(settings.name)
    return ObjectWatch(api, WORKER_GROUP_API, settings, wake), wake
