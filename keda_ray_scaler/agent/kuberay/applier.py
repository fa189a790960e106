"""KubeRay mode: reconcile ``RayWorkerGroup`` scale targets into a ``RayCluster``'s groups.

Each round (:meth:`KubeRayApplier.apply`, every poll interval):

1. read the RayCluster fresh (never from a cache) and the RayWorkerGroups naming it;
2. a RayCluster with ``enableInTreeAutoscaling: true`` is refused: a ``Ready=False`` condition
   with reason ``InTreeAutoscaling``, an error log line naming the fix, no patch, and
   :meth:`refusal` makes the victim protocol drain nothing;
3. for each group, :func:`raycluster_scale.decide` turns ``spec.replicas`` (written by KEDA's HPA
   through ``/scale``) into the group's ``replicas`` and ``workersToDelete``; a change is ONE
   JSON patch carrying the RayCluster's ``resourceVersion`` and the group's name at its index as
   preconditions; a 409/422 re-reads the RayCluster and decides again on the fresh read, the
   current pods and the current victims (at most ``conflict_attempts`` times);
4. ``status.replicas`` (the group's active pods), ``status.selector`` and the conditions are
   written through the status subresource when they changed, so ``kubectl get rayworkergroups``
   and the HPA read the truth; ``BoundsMatch`` says whether the ScaledObjects naming the
   RayWorkerGroup have the group's ``minReplicas``/``maxReplicas``
   (:mod:`~keda_ray_scaler.agent.kuberay.rwg_status`).

RBAC: ``rayclusters`` get/list/watch/patch; ``rayworkergroups`` get/list/watch and their
``status`` patch; ``scaledobjects`` get/list (the bounds check, and the scale-up lead's bounds
and pause: without them nothing leads).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler.agent.interfaces import Clock
from keda_ray_scaler.agent.kube.pod_store import PodStore
from keda_ray_scaler.agent.kuberay.kuberay_api import KubeRayApi, PreconditionFailed
from keda_ray_scaler.agent.kuberay.raycluster import IN_TREE_FIX, in_tree_autoscaling
from keda_ray_scaler.agent.kuberay.raycluster_scale import (
    Action,
    ScaleDecision,
    decide,
    group_state,
    scale_patch,
)
from keda_ray_scaler.agent.kuberay.rwg_status import GroupStatus, StatusWriter, selector_of
from keda_ray_scaler.agent.kuberay.scale_down_lead import lead_down
from keda_ray_scaler.agent.kuberay.scale_up_lead import (
    Lead,
    PlannedTargets,
    lead_replicas,
    targeting,
)
from keda_ray_scaler.errors import KubernetesError

log = structlog.get_logger(__name__)

#: counter {cluster, group, action}: KubeRay scale decisions applied or waited on
KUBERAY_DECISIONS = "ray_scaler_kuberay_decisions_total"
#: counter {cluster}: RayCluster patches refused by a precondition (then re-decided)
KUBERAY_CONFLICTS = "ray_scaler_kuberay_conflicts_total"
#: counter {cluster, group}: scale-ups carried ahead of the HPA by the agent's own plan
KUBERAY_LEADS = "ray_scaler_kuberay_scale_up_leads_total"
#: counter {cluster, group}: drained victims deleted ahead of the HPA by the agent's own plan
KUBERAY_DOWN_LEADS = "ray_scaler_kuberay_scale_down_leads_total"


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """One group's round: the decision taken (or why none), a metric label and a log field."""

    group: str
    action: str  # an Action value, or "refused" / "no_group" / "not_synced" / "unset"
    reason: str
    replicas: int = 0
    named: tuple[str, ...] = ()


class KubeRayApplier:
    """KubeRay mode's :class:`~keda_ray_scaler.agent.modes.Applier`; see the module doc."""

    def __init__(
        self,
        api: KubeRayApi,
        pods: PodStore,
        synced: Callable[[], bool],
        victims: Callable[[], Mapping[str, str]],
        clock: Clock,
        registry: CollectorRegistry,
        *,
        cluster: str,
        conflict_attempts: int = 5,
        backoff: Callable[[str], str] | None = None,
        planned: PlannedTargets | None = None,
        lead_up: bool = True,
        lead_down: bool = True,
    ) -> None:
        """``conflict_attempts``: decisions per group and round when patches keep meeting a
        changed RayCluster (each on a fresh read); the next round starts over. ``backoff``:
        why a group is backed off after pods that did not join Ray ("" when not), shown as the
        RayWorkerGroup's ``BackedOff`` condition. ``planned``: the agent's own targets, which
        lead a scale-up (``lead_up``, :mod:`~keda_ray_scaler.agent.kuberay.scale_up_lead`) and a
        drained victim's deletion (``lead_down``,
        :mod:`~keda_ray_scaler.agent.kuberay.scale_down_lead`)
        ahead of the HPA; each on by default."""
        self._backoff = backoff
        self._planned = planned
        self._lead_up = lead_up
        self._lead_down = lead_down
        self._clock = clock
        self._api = api
        self._cluster = cluster
        self._attempts = conflict_attempts
        self._pods = pods
        self._synced = synced
        self._victims = victims
        self._refused = ""
        self._status = StatusWriter(api, clock, cluster=cluster)
        self._log = log.bind(cluster=cluster)
        self._register_metrics(registry)

    def _register_metrics(self, registry: CollectorRegistry) -> None:
        """The applier's counters: decisions, conflicts, and leads both ways."""
        self._decisions = Counter(
            KUBERAY_DECISIONS,
            "KubeRay scale decisions by action.",
            ["cluster", "group", "action"],
            registry=registry,
        )
        self._conflicts = Counter(
            KUBERAY_CONFLICTS,
            "RayCluster patches refused by a precondition, then re-decided.",
            ["cluster"],
            registry=registry,
        )
        self._leads = Counter(
            KUBERAY_LEADS,
            "Scale-ups carried ahead of the HPA by the agent's own plan.",
            ["cluster", "group"],
            registry=registry,
        )
        self._down_leads = Counter(
            KUBERAY_DOWN_LEADS,
            "Drained victims deleted ahead of the HPA by the agent's own plan.",
            ["cluster", "group"],
            registry=registry,
        )

    # --- the Applier protocol ------------------------------------------------------------------
    @property
    def deletes_by_name(self) -> bool:
        """KubeRay deletes the pods named in ``workersToDelete``."""
        return True

    def refusal(self, group: str) -> str:
        """Non-empty while the RayCluster runs Ray's in-tree autoscaler (as last read)."""
        return self._refused

    async def apply(self) -> tuple[GroupVerdict, ...]:
        """One round over the RayCluster's RayWorkerGroups; never raises KubernetesError."""
        try:
            rc = await self._api.raycluster()
            groups = await self._api.worker_groups()
            scaled = await self._api.scaled_objects()
        except KubernetesError as exc:
            self._log.warning("kuberay round failed", error=str(exc))
            return ()
        refused = f"in-tree autoscaling is on: {IN_TREE_FIX}" if in_tree_autoscaling(rc) else ""
        if refused and not self._refused:  # logged when it starts, not every round
            self._log.error("RayCluster refused", reason="InTreeAutoscaling", fix=IN_TREE_FIX)
        elif self._refused and not refused:
            self._log.warning("RayCluster no longer refused: in-tree autoscaling is off")
        self._refused = refused
        verdicts: list[GroupVerdict] = []
        for rwg in groups:
            try:
                verdict, rc = await self._reconcile(rwg, rc, scaled)
            except KubernetesError as exc:
                name = (rwg.get("spec") or {}).get("groupName", "")
                verdict = GroupVerdict(str(name), "kube_error", str(exc))
            verdicts.append(verdict)
            self._decisions.labels(self._cluster, verdict.group, verdict.action).inc()
        return tuple(verdicts)

    # --- one group ---------------------------------------------------------------------------
    async def _reconcile(
        self, rwg: Mapping[str, Any], rc: dict[str, Any], scaled: Sequence[Mapping[str, Any]]
    ) -> tuple[GroupVerdict, dict[str, Any]]:
        cluster = self._cluster
        spec = rwg.get("spec") or {}
        group = str(spec.get("groupName") or "")
        name = str((rwg.get("metadata") or {}).get("name") or "")
        pods = self._group_pods(group)
        status = GroupStatus(len(pods), selector_of(cluster, group))
        state = group_state(rc, group)
        verdict: GroupVerdict
        if self._refused:
            verdict = GroupVerdict(group, "refused", self._refused)
            status.condition("Ready", False, "InTreeAutoscaling", self._refused)
        elif state is None:
            verdict = GroupVerdict(group, "no_group", f"RayCluster {cluster} has no group {group}")
            status.condition("Ready", False, "GroupNotFound", verdict.reason)
        elif not self._synced():
            verdict = GroupVerdict(group, "not_synced", "pod cache not synced")
            status.condition("Ready", False, "PodsNotSynced", verdict.reason)
        elif spec.get("replicas") is None:
            verdict = GroupVerdict(group, "unset", "spec.replicas unset", state.replicas)
            status.condition("Ready", True, "Reconciled", verdict.reason)
        else:
            verdict, rc = await self._scale_with_lead(
                group, name, int(spec["replicas"]), rc, scaled
            )
            status.condition("Ready", True, "Reconciled", verdict.reason)
        if state is not None:
            self._status.bounds(status, name, state, scaled)
        if self._backoff is not None:
            message = self._backoff(group)
            reason = "JoinFailures" if message else "NoJoinFailures"
            status.condition("BackedOff", bool(message), reason, message or "pods join Ray")
        if self._synced():
            await self._status.write(rwg, status)
        return verdict, rc

    async def _scale_with_lead(
        self,
        group: str,
        name: str,
        desired: int,
        rc: dict[str, Any],
        scaled: Sequence[Mapping[str, Any]],
    ) -> tuple[GroupVerdict, dict[str, Any]]:
        """The HPA's ``desired``, moved to the agent's own target where the ScaledObjects
        allow it (:func:`~keda_ray_scaler.agent.kuberay.scale_up_lead.lead_replicas`, and
        :func:`~keda_ray_scaler.agent.kuberay.scale_down_lead.lead_down`), then scaled."""
        if self._planned is None:
            return await self._scale(group, desired, rc)
        now = self._clock.now()
        planned = self._planned.get(group, now)
        targets = targeting(scaled, name)
        lead = Lead(desired)
        if self._lead_up:
            lead = lead_replicas(desired, planned, targets)
        if self._lead_down and planned is not None and planned < desired:
            lead = lead_down(desired, planned, targets, self._planned.zero_for(group, now))
        verdict, rc = await self._scale(group, lead.replicas, rc, lead.reason)
        if lead.leads and verdict.action == Action.SCALE_UP.value:
            self._leads.labels(self._cluster, group).inc()
        if lead.leads and verdict.action == Action.SCALE_DOWN.value:
            self._down_leads.labels(self._cluster, group).inc()
        return verdict, rc

    async def _scale(
        self, group: str, desired: int, rc: dict[str, Any], lead: str = ""
    ) -> tuple[GroupVerdict, dict[str, Any]]:
        """Decide and patch; on a precondition failure re-read and decide again."""
        attempts = self._attempts
        for attempt in range(1, attempts + 1):
            state = group_state(rc, group)
            if state is None:
                return GroupVerdict(group, "no_group", "group removed"), rc
            victims = [p for p, g in self._victims().items() if g == group]
            decision = decide(state, desired, sorted(self._group_pods(group)), victims)
            if not decision.changes:
                return self._verdict(group, decision), rc
            version = str((rc.get("metadata") or {}).get("resourceVersion") or "")
            try:
                rc = await self._api.patch_raycluster(scale_patch(version, state, decision))
            except PreconditionFailed as exc:
                if attempt == attempts:
                    raise
                self._conflicts.labels(self._cluster).inc()
                self._log.info(
                    "RayCluster changed since read, deciding again", attempt=attempt, error=str(exc)
                )
                rc = await self._api.raycluster()
                continue
            self._log.info(
                "RayCluster group patched",
                worker_group=group,
                action=decision.action.value,
                replicas=decision.replicas,
                workers_to_delete=list(decision.workers_to_delete),
                reason=decision.reason,
                lead=lead,
            )
            return self._verdict(group, decision), rc
        raise AssertionError("unreachable")  # pragma: no cover

    def _verdict(self, group: str, decision: ScaleDecision) -> GroupVerdict:
        if decision.action in (Action.WAIT_OPERATOR, Action.WAIT_VICTIMS):
            self._log.debug("kuberay waits", worker_group=group, reason=decision.reason)
        return GroupVerdict(
            group,
            decision.action.value,
            decision.reason,
            decision.replicas,
            decision.workers_to_delete,
        )

    def _group_pods(self, group: str) -> list[str]:
        return [p.name for p in self._pods.pods() if p.group == group and p.active]
