"""An in-memory pods API for the demo: what the agent's pod cache would see from Kubernetes.

:class:`DemoPods` offers the part of :class:`keda_ray_scaler.agent.kube.pod_cache.PodCache` the
victim
controller uses (``synced``, ``pods``, ``get_cached``, ``wait_until``, ``update``, ``delete``) on
a dict the simulated Deployment controller fills. Writes are immediately visible (the demo has
no informer lag; the victim protocol still waits its settling delay).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from keda_ray_scaler.agent.kube.pod_store import PodStore
from keda_ray_scaler.agent.pod import PodInfo


class DemoPods(PodStore):
    """Worker pods by name; every change bumps the pod's resourceVersion and wakes waiters."""

    def __init__(self) -> None:
        super().__init__()
        self._version = 0

    # --- the controller's side -------------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        """Create a pod (the Deployment controller's create)."""
        self._pods[pod.name] = self._bumped(pod)
        self._changed.set()

    def remove(self, name: str) -> None:
        """Remove a pod (the ReplicaSet's delete, the kubelet's termination)."""
        self._pods.pop(name, None)
        self._changed.set()

    # --- the pod cache's side ----------------------------------------------------------------
    @property
    def synced(self) -> bool:
        """Always: the demo's store is the truth."""
        return True

    async def get(self, name: str) -> PodInfo | None:
        """A "fresh read": the same store."""
        return self._pods.get(name)

    async def update(
        self,
        name: str,
        decide: Callable[[PodInfo], Mapping[str, str | None]],
        *,
        fresh: bool = False,
    ) -> PodInfo | None:
        """Apply ``decide(pod)``'s annotation changes (None deletes); None when the pod is gone.
        ``fresh`` changes nothing: the store is always fresh."""
        pod = self._pods.get(name)
        if pod is None:
            return None
        changes = {k: v for k, v in decide(pod).items() if pod.annotations.get(k) != v}
        if not changes:
            return pod
        annotations = dict(pod.annotations)
        for key, value in changes.items():
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value
        written = self._bumped(dataclasses.replace(pod, annotations=annotations))
        self._pods[name] = written
        self._changed.set()
        return written

    async def delete(self, name: str, uid: str) -> bool:
        """The agent's delete: remove the pod if it is still the pod ``uid``."""
        pod = self._pods.get(name)
        if pod is None or pod.uid != uid:
            return False
        self.remove(name)
        return True

    def _bumped(self, pod: PodInfo) -> PodInfo:
        self._version += 1
        return dataclasses.replace(pod, resource_version=str(self._version))
