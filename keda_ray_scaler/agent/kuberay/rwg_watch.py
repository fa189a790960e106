"""KubeRay mode: a RayWorkerGroup's new ``spec.replicas`` applied at once, not at the next round.

KEDA's HPA writes a RayWorkerGroup's ``spec.replicas`` through ``/scale``; the KubeRay applier
carries it into the RayCluster each round (:func:`~keda_ray_scaler.agent.modes.run_applier`,
every ``--interval``, 5 s by default). Waiting for the round put up to one interval on every
scale-up, twice on a scale-up from zero (KEDA's 0 -> 1, then the HPA's 1 -> N). This watch
(:class:`~keda_ray_scaler.agent.kube.object_watch.ObjectWatch` over the namespace's RayWorkerGroups)
sets :attr:`ReplicasWake.event` when the replicas of a group naming the RayCluster change, and
the applier's loop runs a round at once. Status writes (the applier's own) do not wake it.
A failed watch only loses the speed-up: the periodic round goes on.

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
    """The replicas of the RayWorkerGroups naming one RayCluster; :attr:`event` set on a change
    (a :class:`~keda_ray_scaler.agent.kube.object_watch.WatchSink`)."""

    def __init__(self, raycluster: str) -> None:
        self._raycluster = raycluster
        self._replicas: dict[str, object] = {}
        self.event = asyncio.Event()

    def _ours(self, obj: Mapping[str, Any]) -> bool:
        return bool((obj.get("spec") or {}).get("rayCluster") == self._raycluster)

    def _name(self, obj: Mapping[str, Any]) -> str:
        return str((obj.get("metadata") or {}).get("name") or "")

    def listed(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A whole list: a change against what was known wakes (a first list does not)."""
        now = {self._name(i): _replicas(i) for i in items if self._ours(i)}
        if self._replicas and now != self._replicas:
            self.event.set()
        self._replicas = now

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One event: a group's replicas changed, or a group came or went."""
        if not self._ours(obj):
            return
        name = self._name(obj)
        if kind == "DELETED":
            self._replicas.pop(name, None)
            return
        replicas = _replicas(obj)
        if self._replicas.get(name, object()) != replicas:
            self._replicas[name] = replicas
            log.debug("worker group replicas changed", worker_group=name, replicas=replicas)
            self.event.set()

    def unreadable(self, why: str, error: str) -> None:
        """Only the speed-up is lost: the applier's periodic round goes on."""
        log.warning("RayWorkerGroup watch failed", reason=why, error=error)


def replicas_watch(
    api: k8s.CustomObjectsApi, settings: WatchSettings
) -> tuple[ObjectWatch, ReplicasWake]:
    """The watch of ``settings.namespace``'s RayWorkerGroups and the wake it sets."""
    wake = ReplicasWake(settings.name)
    return ObjectWatch(api, WORKER_GROUP_API, settings, wake), wake
