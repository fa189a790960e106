"""Pods by name, as the victim controller reads them: what the Kubernetes pod cache
(:class:`~keda_ray_scaler.agent.kube.pod_cache.PodCache`) and the demo's in-memory pods share."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from keda_ray_scaler.agent.pod import PodInfo


class PodStore:
    """Pods by name and the reads the victim controller makes of them: the part the pod cache
    and the demo's in-memory pods API share. Mutated on the event loop only; every change
    sets ``_changed`` so that :meth:`wait_until` re-checks."""

    def __init__(self) -> None:
        self._pods: dict[str, PodInfo] = {}
        self._changed = asyncio.Event()

    def pods(self) -> tuple[PodInfo, ...]:
        """Every pod (terminating ones included), sorted by name."""
        return tuple(self._pods[name] for name in sorted(self._pods))

    def get_cached(self, name: str) -> PodInfo | None:
        """One pod, if present."""
        return self._pods.get(name)

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait (real time, at most ``timeout_s``) until ``predicate()`` holds on the store."""
        try:
            async with asyncio.timeout(timeout_s):
                while not predicate():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            return predicate()
        return True
