"""How a scale decision reaches the workload: the one difference between the agent's two modes.

Both modes share the planner, the export and the victim protocol (``victims/``: choose,
drain, publish, verify). They differ only here:

- **Deployment mode** (:class:`DeploymentApplier`): KEDA's HPA sets the Deployment's replicas
  and the ReplicaSet controller picks the pods to delete by ``pod-deletion-cost``; so the victim
  protocol marks the cost and confirms the ranking before it drains, and there is nothing else
  to apply.
- **KubeRay mode** (``kuberay/applier.py``'s ``KubeRayApplier``): KEDA's HPA sets a
``RayWorkerGroup``'s
  ``spec.replicas``; the applier writes the RayCluster group's ``replicas`` and names the
  drained victims in ``workersToDelete``, which KubeRay deletes by name: no cost, no ranking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import structlog

from keda_ray_scaler.clock import Clock

log = structlog.get_logger(__name__)


@runtime_checkable
class Applier(Protocol):
    """Applies the scale decisions of one Ray cluster's worker groups.

    - ``deletes_by_name``: the workload deletes the pods it is told, by name; the victim
      protocol then drains without marking deletion costs or checking a ReplicaSet ranking.
    - ``refusal(group)``: a non-empty reason when the group must not be scaled down at all (the
      victim protocol drains nothing there), e.g. Ray's in-tree autoscaler owns the cluster.
    - ``apply()``: one round (it reads the published victims itself, so a round that must
      decide again decides on the current ones); returns its verdicts; never raises for API
      errors (logs and counts them).
    """

    @property
    def deletes_by_name(self) -> bool: ...

    def refusal(self, group: str) -> str: ...

    async def apply(self) -> Sequence[object]: ...


class DeploymentApplier:
    """Deployment mode: the HPA and the ReplicaSet controller apply everything."""

    @property
    def deletes_by_name(self) -> bool:
        """Pods go by deletion cost, not by name."""
        return False

    def refusal(self, group: str) -> str:
        """Never refused."""
        return ""

    async def apply(self) -> Sequence[object]:
        """Nothing to do."""
        return ()


async def run_applier(
    applier: Applier, clock: Clock, interval_s: float, wake: asyncio.Event | None = None
) -> None:
    """Apply every ``interval_s`` until cancelled, and at once when ``wake`` is set (a
    RayWorkerGroup's replicas changed, :mod:`~keda_ray_scaler.agent.kuberay.rwg_watch`); a round
    that
    crashes is logged, not fatal."""
    while True:
        if wake is not None:
            wake.clear()  # a change during the round wakes the next one
        try:
            await applier.apply()
        except Exception:  # a bug must not stop scaling silently while /metrics lives on
            log.exception("apply round crashed")
        await sleep_or_wake(clock, interval_s, wake)


async def sleep_or_wake(clock: Clock, s: float, wake: asyncio.Event | None) -> None:
    """``clock.sleep(s)``, ended early when ``wake`` is set."""
    if wake is None:
        await clock.sleep(s)
        return
    sleeping = asyncio.ensure_future(clock.sleep(s))
    waking = asyncio.ensure_future(wake.wait())
    try:
        await asyncio.wait((sleeping, waking), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sleeping, waking):
            task.cancel()
        await asyncio.gather(sleeping, waking, return_exceptions=True)
