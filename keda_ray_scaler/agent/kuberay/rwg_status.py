"""A RayWorkerGroup's status in KubeRay mode: replicas, selector and conditions, written on change.

``status.replicas`` (the group's active pods), ``status.selector`` and the conditions are
written through the status subresource when they changed (:func:`status_body`), so ``kubectl
get rayworkergroups`` and the HPA read the truth; ``BoundsMatch`` says whether the ScaledObjects
naming the RayWorkerGroup have the group's ``minReplicas``/``maxReplicas``
(:func:`~keda_ray_scaler.agent.kuberay.scaledobject.bounds_problem`), or that one was refused at
the read (reason ``ScaledObjectRefused``). The applier
(:mod:`~keda_ray_scaler.agent.kuberay.applier`) decides the conditions; :class:`StatusWriter`
logs and writes them. The RayWorkerGroup it is given may come from a watch that has not yet
brought our last write back: the writer compares with what it last wrote, unless the object
read is a later generation or another object of that name (:meth:`StatusWriter.write`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from keda_ray_scaler.agent.kube.kube_settings import worker_selector
from keda_ray_scaler.agent.kuberay.group_round import GroupRead, GroupVerdict, Ready
from keda_ray_scaler.agent.kuberay.kuberay_api import KubeRayApi
from keda_ray_scaler.agent.kuberay.raycluster_scale import GroupState
from keda_ray_scaler.agent.kuberay.scaledobject import ScaledObject, bounds_problem, targeting
from keda_ray_scaler.clock import Clock

log = structlog.get_logger(__name__)


@dataclass
class GroupStatus:
    """The status one round finds for a RayWorkerGroup: its ``status`` fields."""

    replicas: int
    selector: str
    conditions: list[dict[str, str]] = field(default_factory=list)

    def condition(self, type_: str, ok: bool, reason: str, message: str) -> None:
        """Add one condition (``lastTransitionTime`` is stamped by :func:`status_body`)."""
        self.conditions.append(
            {
                "type": type_,
                "status": "True" if ok else "False",
                "reason": reason,
                "message": message,
            }
        )


def selector_of(cluster: str, group: str) -> str:
    """The label selector of one group's worker pods, as KubeRay labels them."""
    return worker_selector(cluster, group)


class StatusWriter:
    """The ``BoundsMatch`` condition and the status write of one cluster's RayWorkerGroups; a
    problem is logged when it starts or changes, not every round."""

    def __init__(self, api: KubeRayApi, clock: Clock, *, cluster: str) -> None:
        self._api = api
        self._clock = clock
        self._cluster = cluster
        self._logged: dict[str, str] = {}  # group -> last condition message logged
        self._written: dict[str, _Written] = {}  # RayWorkerGroup name -> our last write
        self._log = log.bind(cluster=cluster)

    def conditions(
        self,
        read: GroupRead,
        verdict: GroupVerdict,
        ready: Ready,
        scaled: Sequence[ScaledObject],
        backoff: Callable[[str], str] | None,
    ) -> GroupStatus:
        """The group's status: its pods, selector, and the Ready, BoundsMatch and BackedOff
        conditions (BackedOff only with ``backoff``, why a group is backed off: "" when not)."""
        status = GroupStatus(len(read.pods), selector_of(self._cluster, read.group))
        status.condition("Ready", ready.ok, ready.reason, verdict.reason)
        if read.state is not None and not read.claimed_by:  # a refused claim's bounds lead nothing
            self.bounds(status, read.name, read.state, scaled)
        if backoff is not None:
            message = backoff(read.group)
            reason = "JoinFailures" if message else "NoJoinFailures"
            status.condition("BackedOff", bool(message), reason, message or "pods join Ray")
        return status

    def bounds(
        self,
        status: GroupStatus,
        name: str,
        state: GroupState,
        scaled: Sequence[ScaledObject],
    ) -> None:
        """``BoundsMatch`` for the RayWorkerGroup ``name``: the ScaledObjects targeting it
        (False, reason ``ScaledObjectRefused``, while the last read refused one: none is read)."""
        if refused := self._api.refused_scaled_objects(name):
            self._logged.pop(state.name, None)  # logged at the read
            message = "; ".join(refused) + " (refused: nothing leads the group)"
            status.condition("BoundsMatch", False, "ScaledObjectRefused", message)
            return
        aimed = targeting(scaled, name)
        problems = [
            p for so in aimed if (p := bounds_problem(so, state.min_replicas, state.max_replicas))
        ]
        if problems:
            message = "; ".join(problems) + " (min and max belong to the RayCluster's group)"
            if self._logged.get(state.name) != message:
                self._log.warning(
                    "ScaledObject bounds differ", worker_group=state.name, problem=message
                )
            self._logged[state.name] = message
            status.condition("BoundsMatch", False, "ScaledObjectBounds", message)
        elif aimed:
            self._logged.pop(state.name, None)
            status.condition("BoundsMatch", True, "Match", "ScaledObject min/max match")

    async def write(self, rwg: Mapping[str, Any], status: GroupStatus) -> None:
        """Patch the RayWorkerGroup's status when it changed from the newer of the object's
        status and our last write to it."""
        meta = rwg.get("metadata") or {}
        name = str(meta.get("name") or "")
        now = datetime.datetime.fromtimestamp(self._clock.now(), datetime.UTC)
        old = self._newer(rwg)
        new = status_body(old, status, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        if new is None:
            return
        for c in new["conditions"]:
            if c["status"] == "False" and c["message"] != self._logged.get(f"ready/{name}"):
                self._log.warning(
                    "RayWorkerGroup not ready", rayworkergroup=name, message=c["message"]
                )
                self._logged[f"ready/{name}"] = c["message"]
        written = await self._api.patch_status(name, new)
        generation = (written.get("metadata") or {}).get("generation")
        self._written[name] = _Written(str(meta.get("uid") or ""), generation, new)

    def _newer(self, rwg: Mapping[str, Any]) -> Mapping[str, Any]:
        """The status to compare with: our last write to this object, unless the object read
        is a later generation (a spec written since: its status is at least as new) or
        another object of that name."""
        meta = rwg.get("metadata") or {}
        ours = self._written.get(str(meta.get("name") or ""))
        read: Mapping[str, Any] = rwg.get("status") or {}
        if ours is None or ours.uid != str(meta.get("uid") or ""):
            return read
        generation = meta.get("generation")
        if isinstance(generation, int) and isinstance(ours.generation, int):
            return read if generation > ours.generation else ours.status
        return ours.status

    def keep(self, rwgs: Iterable[Mapping[str, Any]]) -> None:
        """Forget our writes to RayWorkerGroups not in ``rwgs`` (gone)."""
        kept = {str((r.get("metadata") or {}).get("name") or "") for r in rwgs}
        self._written = {n: w for n, w in self._written.items() if n in kept}


@dataclass(frozen=True, slots=True)
class _Written:
    """Our last status write to one RayWorkerGroup: its uid, its generation as written."""

    uid: str
    generation: object
    status: Mapping[str, Any]


def status_body(old: Mapping[str, Any], status: GroupStatus, stamp: str) -> dict[str, Any] | None:
    """The new status (a condition keeps its lastTransitionTime while its status holds); None
    when nothing changed, so an unchanged group costs no write."""
    previous = {c.get("type"): c for c in old.get("conditions") or ()}
    conditions = []
    for c in status.conditions:
        before = previous.get(c["type"]) or {}
        since = (
            before.get("lastTransitionTime", stamp)
            if before.get("status") == c["status"]
            else stamp
        )
        conditions.append({**c, "lastTransitionTime": since})
    new = {"replicas": status.replicas, "selector": status.selector, "conditions": conditions}
    return None if {k: old.get(k) for k in new} == new else new
