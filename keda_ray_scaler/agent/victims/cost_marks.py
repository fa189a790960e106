"""Deployment mode's victim marks: the pod-deletion cost written, seen and checked.

The ReplicaSet controller deletes the pods of lowest ``controller.kubernetes.io/pod-deletion-cost``
first (among other rules, :mod:`~keda_ray_scaler.agent.victims.ranking`). :class:`CostMarks` writes
the
victim cost on the chosen pods and the busy cost on busy ones
(:mod:`~keda_ray_scaler.agent.victims.marks`),
confirms through the watch that the ReplicaSet would take exactly the victims (as Karpenter
re-validates right before acting), and restores a pod's cost when a step fails. The victim
controller (:mod:`~keda_ray_scaler.agent.victims.controller`) decides when.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from keda_ray_scaler.agent.interfaces import PodSource
from keda_ray_scaler.agent.pod import DELETION_COST, PodInfo
from keda_ray_scaler.agent.victims.marks import VictimSettings, clear_cost, has_mark, set_cost
from keda_ray_scaler.agent.victims.ranking import check_takes_first
from keda_ray_scaler.agent.victims.verdicts import Outcome, Verdict
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.errors import KubernetesError


class CostMarks:
    """Marks, confirms and restores deletion costs on one cluster's pods."""

    def __init__(self, pods: PodSource, clock: Clock, settings: VictimSettings) -> None:
        self._pods = pods
        self._clock = clock
        self.settings = settings

    async def restore(self, pod: PodInfo, outcome: Outcome, reason: str) -> Verdict:
        """Remove the pod's cost and marker (a fresh read first); the verdict says why."""
        try:
            # Fresh read: a stale cache must not conclude "no mark to remove".
            await self._pods.update(pod.name, clear_cost(self.settings), fresh=True)
        except KubernetesError as exc:
            return Verdict(pod.group, pod.name, Outcome.KUBE_ERROR, f"restore failed: {exc}")
        return Verdict(pod.group, pod.name, outcome, reason)

    async def mark(
        self, group: str, chosen: Sequence[PodInfo], busy: Sequence[PodInfo]
    ) -> tuple[list[PodInfo], list[Verdict]]:
        """The victim cost on ``chosen``, then the busy cost on ``busy`` (only when a victim was
        marked); a failure rolls the victims back. The pods marked, and the verdicts."""
        settings = self.settings
        marked: list[PodInfo] = []
        verdicts: list[Verdict] = []
        current = ""
        try:
            for pod in chosen:
                current = pod.name
                written = await self._pods.update(
                    pod.name, set_cost(settings.victim_cost, settings)
                )
                if written is None:
                    verdicts.append(Verdict(group, pod.name, Outcome.POD_GONE, "pod gone"))
                elif not has_mark(written, settings.victim_cost, settings):
                    cost = written.annotations.get(DELETION_COST)
                    verdicts.append(
                        Verdict(group, pod.name, Outcome.NOT_OWNED, f"cost {cost} set by another")
                    )
                else:
                    marked.append(written)
            if marked:
                for pod in busy:
                    current = pod.name
                    await self._pods.update(pod.name, set_cost(settings.busy_cost, settings))
        except KubernetesError as exc:
            verdicts.append(Verdict(group, current, Outcome.KUBE_ERROR, f"mark failed: {exc}"))
            for pod in marked:
                verdicts.append(await self.restore(pod, Outcome.KUBE_ERROR, "rolled back"))
            return [], verdicts
        return marked, verdicts

    async def confirm(
        self, group: str, marked: Sequence[PodInfo], published: frozenset[str]
    ) -> str:
        """Empty when the ReplicaSet would take exactly ``marked`` (with the group's
        ``published`` victims still present: the same scale-down deletes them); else why not."""
        settings = self.settings
        names = frozenset(p.name for p in marked)
        marks_seen = functools.partial(self.marks_seen, names)
        if not await self._pods.wait_until(marks_seen, settings.confirm_timeout_s):
            return "victim marks not seen through the watch"
        await self._clock.sleep(settings.settle_s)
        if not self._pods.synced:
            return "pod cache not synced"
        if not marks_seen():
            return "victim marks changed while settling"
        pods = [p for p in self._pods.pods() if p.group == group]
        owners = sorted({p.owner for p in pods if p.active})
        if len(owners) > 1:
            return f"pods of more than one owner {owners} (rollout in progress)"
        present = {p.name for p in pods if p.active}
        check = check_takes_first(pods, names | (published & present), now_s=self._clock.now())
        return "" if check.ok else check.reason

    def marks_seen(self, names: frozenset[str]) -> bool:
        """Every pod of ``names`` in the cache, with the victim cost."""
        for name in names:
            pod = self._pods.get_cached(name)
            if pod is None or not has_mark(pod, self.settings.victim_cost, self.settings):
                return False
        return True
