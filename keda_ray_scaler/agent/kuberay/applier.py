"""KubeRay mode: reconcile ``RayWorkerGroup`` scale targets into a ``RayCluster``'s groups.

Each round (:meth:`KubeRayApplier.apply`, every poll interval):

1. read the RayCluster, the RayWorkerGroups naming it and the namespace's ScaledObjects (parsed
   at the read, :mod:`~keda_ray_scaler.agent.kuberay.scaledobject`) from their watches, each by
   GET while its watch holds nothing (:mod:`~keda_ray_scaler.agent.kuberay.round_reads`);
2. filter: a RayCluster with ``enableInTreeAutoscaling: true`` is refused (a ``Ready=False``
   condition with reason ``InTreeAutoscaling``, an error log line naming the fix, no patch, and
   :meth:`refusal` makes the victim protocol drain nothing); a RayWorkerGroup naming a group an
   older one holds (:mod:`~keda_ray_scaler.agent.kuberay.group_claims`), a group the RayCluster
   lacks, an unsynced pod cache and an unset ``spec.replicas`` are held too
   (:func:`~keda_ray_scaler.agent.kuberay.group_round.screen`);
3. decide, pure: the agent's own plan leads the HPA's ``spec.replicas`` where the ScaledObjects
   allow it (:func:`~keda_ray_scaler.agent.kuberay.group_round.lead_for`), and
   :func:`raycluster_scale.decide` turns the result into the group's ``replicas`` and
   ``workersToDelete``;
4. act: a change is ONE JSON patch carrying the RayCluster's ``resourceVersion`` and the
   group's name at its index as preconditions; a 409/422 re-reads the RayCluster by GET and
   decides again on the fresh read, the current pods and the current victims (at most
   ``conflict_attempts`` times): a watched read that lags costs a refused patch, never a wrong
   write. Then the RayWorkerGroup's status (its active pods, selector, ``Ready``, ``BoundsMatch``
   and ``BackedOff``) is written when it changed (:mod:`~keda_ray_scaler.agent.kuberay.rwg_status`).

Each group's round ends in a typed :class:`~keda_ray_scaler.agent.kuberay.group_round.GroupVerdict`,
counted by its action's value.

RBAC: ``rayclusters`` get/list/watch/patch; ``rayworkergroups`` get/list/watch and their
``status`` patch; ``scaledobjects`` get/list/watch (the bounds check, and the leads' bounds
and pause: without them nothing leads; without ``watch``, a list every round).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler.agent.kube.pod_store import PodStore
from keda_ray_scaler.agent.kuberay.group_claims import GroupClaims
from keda_ray_scaler.agent.kuberay.group_round import (
    RECONCILED,
    ApplierSettings,
    GroupRead,
    GroupVerdict,
    Held,
    Undecided,
    lead_for,
    screen,
    verdict_of,
)
from keda_ray_scaler.agent.kuberay.kuberay_api import KubeRayApi
from keda_ray_scaler.agent.kuberay.raycluster import IN_TREE_FIX, in_tree_autoscaling
from keda_ray_scaler.agent.kuberay.raycluster_scale import (
    Action,
    Lead,
    ScaleDecision,
    decide,
    group_state,
    scale_patch,
)
from keda_ray_scaler.agent.kuberay.round_reads import RoundReads, Watches
from keda_ray_scaler.agent.kuberay.rwg_status import StatusWriter
from keda_ray_scaler.agent.kuberay.scale_up_lead import PlannedTargets
from keda_ray_scaler.agent.kuberay.scaledobject import ScaledObject, targeting
from keda_ray_scaler.agent.metric_names import (
    KUBERAY_CONFLICTS,
    KUBERAY_DECISIONS,
    KUBERAY_DOWN_LEADS,
    KUBERAY_LEADS,
)
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.errors import KubernetesError, PreconditionFailed

log = structlog.get_logger(__name__)


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
        settings: ApplierSettings,
        *,
        backoff: Callable[[str], str] | None = None,
        planned: PlannedTargets | None = None,
        watches: Watches | None = None,
    ) -> None:
        """``backoff``: why a group is backed off after pods that did not join Ray ("" when
        not), shown as the RayWorkerGroup's ``BackedOff`` condition (none without it).
        ``planned``: the agent's own targets, which lead the HPA as ``settings`` allow
        (nothing leads without them). ``watches``: where the round's reads come from (none:
        every read by GET)."""
        self._api = api
        self._pods = pods
        self._synced = synced
        self._victims = victims
        self._clock = clock
        self._settings = settings
        self._backoff = backoff
        self._planned = planned
        self._refused = ""
        self._status = StatusWriter(api, clock, cluster=settings.cluster)
        self._claims = GroupClaims(cluster=settings.cluster)
        self._log = log.bind(cluster=settings.cluster)
        self._reads = RoundReads(api, watches or Watches(), self._log)
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
            read = await self._reads.read()
        except KubernetesError as exc:
            self._log.warning("kuberay round failed", error=str(exc))
            return ()
        rc, groups, scaled = read.raycluster, read.worker_groups, read.scaled_objects
        self._note_refusal(rc)
        self._claims.read(groups)
        self._status.keep(groups)
        verdicts: list[GroupVerdict] = []
        for rwg in groups:
            try:
                verdict, rc = await self._reconcile(rwg, rc, scaled)
            except KubernetesError as exc:
                name = (rwg.get("spec") or {}).get("groupName", "")
                verdict = GroupVerdict(str(name), Undecided.KUBE_ERROR, str(exc))
            verdicts.append(verdict)
            cluster = self._settings.cluster
            self._decisions.labels(cluster, verdict.group, verdict.action.value).inc()
        return tuple(verdicts)

    def _note_refusal(self, rc: Mapping[str, Any]) -> None:
        """Refuse a RayCluster that runs Ray's in-tree autoscaler; logged when that starts and
        when it ends, not every round."""
        refused = f"in-tree autoscaling is on: {IN_TREE_FIX}" if in_tree_autoscaling(rc) else ""
        if refused and not self._refused:
            self._log.error("RayCluster refused", reason="InTreeAutoscaling", fix=IN_TREE_FIX)
        elif self._refused and not refused:
            self._log.warning("RayCluster no longer refused: in-tree autoscaling is off")
        self._refused = refused

    # --- one group: filter, decide, act --------------------------------------------------------
    async def _reconcile(
        self, rwg: Mapping[str, Any], rc: dict[str, Any], scaled: Sequence[ScaledObject]
    ) -> tuple[GroupVerdict, dict[str, Any]]:
        """One group: read, filter, decide and patch, then its status (written when synced)."""
        read = self._read(rwg, rc)
        screened = screen(read, self._refused, self._settings.cluster)
        if isinstance(screened, Held):
            verdict, ready = screened.verdict, screened.ready
        else:
            lead = self._lead(read, screened, scaled)
            verdict, rc = await self._scale(read.group, lead, rc)
            self._count_lead(lead, verdict)
            ready = RECONCILED
        status = self._status.conditions(read, verdict, ready, scaled, self._backoff)
        if self._synced():
            try:
                await self._status.write(rwg, status)
            except KubernetesError:
                if not isinstance(screened, Held):  # held: stands (a status the Role may not write)
                    raise
        return verdict, rc

    def _read(self, rwg: Mapping[str, Any], rc: Mapping[str, Any]) -> GroupRead:
        """Gather: the RayWorkerGroup, its group in the RayCluster, its pods, the cache's sync,
        its claim (``spec.replicas`` is an integer by the CRD's schema)."""
        spec = rwg.get("spec") or {}
        group = str(spec.get("groupName") or "")
        replicas = spec.get("replicas")
        name = str((rwg.get("metadata") or {}).get("name") or "")
        return GroupRead(
            group=group,
            name=name,
            replicas=None if replicas is None else int(replicas),
            pods=tuple(self._group_pods(group)),
            state=group_state(rc, group),
            synced=self._synced(),
            claimed_by=self._claims.holder_of(name),
        )

    def _lead(self, read: GroupRead, desired: int, scaled: Sequence[ScaledObject]) -> Lead:
        """The replicas to carry into the RayCluster: the HPA's, led by a fresh plan."""
        if self._planned is None:
            return Lead(desired)
        now = self._clock.now()
        planned = self._planned.get(read.group, now)
        zero_for_s = self._planned.zero_for(read.group, now)
        targets = targeting(scaled, read.name)
        return lead_for(desired, planned, zero_for_s, targets, self._settings)

    def _count_lead(self, lead: Lead, verdict: GroupVerdict) -> None:
        """A lead that moved the group counts, by its direction."""
        if lead.leads and verdict.action is Action.SCALE_UP:
            self._leads.labels(self._settings.cluster, verdict.group).inc()
        if lead.leads and verdict.action is Action.SCALE_DOWN:
            self._down_leads.labels(self._settings.cluster, verdict.group).inc()

    async def _scale(
        self, group: str, lead: Lead, rc: dict[str, Any]
    ) -> tuple[GroupVerdict, dict[str, Any]]:
        """Decide and patch; on a precondition failure re-read and decide again."""
        attempts = self._settings.conflict_attempts
        for attempt in range(1, attempts + 1):
            state = group_state(rc, group)
            if state is None:
                return GroupVerdict(group, Undecided.NO_GROUP, "group removed"), rc
            victims = [p for p, g in self._victims().items() if g == group]
            decision = decide(state, lead.replicas, sorted(self._group_pods(group)), victims)
            if not decision.changes:
                return self._waited(group, decision), rc
            version = str((rc.get("metadata") or {}).get("resourceVersion") or "")
            try:
                rc = await self._api.patch_raycluster(scale_patch(version, state, decision))
            except PreconditionFailed as exc:
                if attempt == attempts:
                    raise
                self._conflicts.labels(self._settings.cluster).inc()
                self._log.info(
                    "RayCluster changed since read, deciding again", attempt=attempt, error=str(exc)
                )
                rc = await self._api.raycluster()  # fresh: never the watch's
                continue
            self._reads.wrote(rc)
            self._log.info(
                "RayCluster group patched",
                worker_group=group,
                action=decision.action.value,
                replicas=decision.replicas,
                workers_to_delete=list(decision.workers_to_delete),
                reason=decision.reason,
                lead=lead.reason,
            )
            return verdict_of(group, decision), rc
        raise AssertionError("unreachable")  # pragma: no cover

    def _waited(self, group: str, decision: ScaleDecision) -> GroupVerdict:
        """The verdict of a decision that changes nothing (a wait is logged at debug)."""
        if decision.action in (Action.WAIT_OPERATOR, Action.WAIT_VICTIMS):
            self._log.debug("kuberay waits", worker_group=group, reason=decision.reason)
        return verdict_of(group, decision)

    def _group_pods(self, group: str) -> list[str]:
        return [p.name for p in self._pods.pods() if p.group == group and p.active]
