"""A RayWorkerGroup's status in KubeRay mode: replicas, selector and conditions, written on change.

``status.replicas`` (the group's active pods), ``status.selector`` and the conditions are
written through the status subresource when they changed (:func:`status_body`), so ``kubectl
get rayworkergroups`` and the HPA read the truth; ``BoundsMatch`` says whether the ScaledObjects
naming the RayWorkerGroup have the group's ``minReplicas``/``maxReplicas``
(:func:`~keda_ray_scaler.agent.kuberay.scaledobject.bounds_problem`), or that one was refused at
the read (reason ``ScaledObjectRefused``). The applier
(:mod:`~keda_ray_scaler.agent.kuberay.applier`) decides the conditions; :class:`StatusWriter`
logs and writes them.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from keda_ray_scaler.agent.kube.kube_settings import worker_selector
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
        self._logged: dict[str, str] = {}  # group -> last condition message logged
        self._log = log.bind(cluster=cluster)

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
        """Patch the RayWorkerGroup's status when it changed."""
        name = str((rwg.get("metadata") or {}).get("name") or "")
        now = datetime.datetime.fromtimestamp(self._clock.now(), datetime.UTC)
        new = status_body(rwg.get("status") or {}, status, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        if new is None:
            return
        for c in new["conditions"]:
            if c["status"] == "False" and c["message"] != self._logged.get(f"ready/{name}"):
                self._log.warning(
                    "RayWorkerGroup not ready", rayworkergroup=name, message=c["message"]
                )
                self._logged[f"ready/{name}"] = c["message"]
        await self._api.patch_status(name, new)


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
