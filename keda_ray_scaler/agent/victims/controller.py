"""Safe scale-down: choose, mark, confirm, drain, publish, verify; one worker group at a time.

In code: :func:`~keda_ray_scaler.agent.victims.choose.choose` (pure), then
:meth:`~keda_ray_scaler.agent.victims.cost_marks.CostMarks.confirm` (re-validate right before
acting,
as Karpenter does) and the patches and drains around them, on a ``PodSource``.

The pod-deletion-cost annotation is only a hint the ReplicaSet controller reads from its cache
(kubernetes/kubernetes#126138), and a Ray node may get work right after it was seen idle. So a
pod is published as a victim (``NodeStatus.VICTIM``, the scaler lowers the target by exactly the
number of victims) only after every step below succeeded for it:

1. **choose**: the planner's ``GroupPlan.removable``, re-checked against a fresh
   :class:`RayView` read (running, idle at least ``idleTimeoutSeconds``, nothing used); pods
   in ``GroupPlan.over_cap`` (above maxReplicas or maxWorkers) are taken at once, the idle
   timeout aside, and one not yet a Ray node is published without a drain; never a pod that
   two live Ray nodes name;
2. **mark**: ``controller.kubernetes.io/pod-deletion-cost`` = ``victim_cost`` on victims and
   ``busy_cost`` on busy pods, each with the marker annotation ``owner_annotation`` = the value
   written; a cost the agent does not own (no marker, or marker != cost) is never written;
3. **confirm**: the new values seen through the watch, ``settle_s`` waited (injected clock),
   then :func:`ranking.check_takes_first` on the group's pods: victims must rank strictly first
   by rules that do not depend on the controller's clock; one ReplicaSet only;
4. **drain**: :class:`Drainer` for idle termination; a rejection restores the pod (removes both
   annotations) and the pod is not published;
5. **publish**: :meth:`VictimController.victims`; a published victim the scale-down will
   never take (its group's target keeps its slot for a new pod, :func:`choose.to_release`) is
   deleted by the agent, uid as precondition, and the ReplicaSet replaces it;
6. **verify**: a pod of a group with published victims that disappears without being a victim
   is a wrong victim: counted, logged, and the group's scale-down is frozen until
   :meth:`VictimController.unfreeze` (or an agent restart). A pod that was no live Ray node at
   the last read (:meth:`VictimController.saw_in_ray`, every poll) held no Ray state: its going
   is no wrong victim (the ReplicaSet takes unscheduled and not-ready pods first).
7. **fence**: the Ray node of a pod being deleted, victim or not, is drained for preemption
   so it takes no new work (:mod:`~keda_ray_scaler.agent.victims.fence`).

Every step starts with :meth:`VictimController.reconcile`: a pod with the agent's victim mark
that is no published victim gets its cost restored unless its Ray node is draining or gone
(then it is adopted): an agent killed mid-protocol leaves no undrained pod marked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import structlog
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler.agent.interfaces import Drainer, PodSource, RayView, SpecView, spec_view
from keda_ray_scaler.agent.metric_names import VICTIM_VERDICTS
from keda_ray_scaler.agent.modes import Applier
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.victims.choose import GroupView, choose, removal_reasons, to_release
from keda_ray_scaler.agent.victims.cost_marks import CostMarks
from keda_ray_scaler.agent.victims.fence import Fence
from keda_ray_scaler.agent.victims.ledger import VictimLedger
from keda_ray_scaler.agent.victims.marks import VictimSettings, has_mark
from keda_ray_scaler.agent.victims.reconcile import reconcile_marks
from keda_ray_scaler.agent.victims.release import release_victims
from keda_ray_scaler.agent.victims.verdicts import Outcome, Verdict
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.decisions import GroupPlan, Plan, Why
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.model import ClusterSpec, WorkerNode

log = structlog.get_logger(__name__)


class VictimController:
    """Runs the protocol; its :meth:`victims` are what the exporter publishes."""

    def __init__(
        self,
        cluster: ClusterSpec | SpecView,
        pods: PodSource,
        ray: RayView,
        drainer: Drainer,
        clock: Clock,
        registry: CollectorRegistry,
        settings: VictimSettings | None = None,
        *,
        applier: Applier | None = None,
        launch_limit: Callable[[str], int | None] | None = None,
        fence: Fence | None = None,
        ledger: VictimLedger | None = None,
    ) -> None:
        """``launch_limit(group)``: the new pods the group may get now (its back-off after pods
        that did not join; None: no limit); bounds the victims released (:func:`to_release`).
        ``ledger``: where the published victims are kept, when others read them too (the
        builder makes it first, for the KubeRay applier); a new one when None."""
        self._launch_limit = launch_limit or (lambda group: None)  # no back-off: all released
        self._fence = fence
        self._specs = spec_view(cluster)  # the groups' idle timeouts, read at each step
        self._name = self._specs.spec.name
        self._pods = pods
        self._ray = ray
        self._drainer = drainer
        self._clock = clock
        self._due: list[float] = []  # the last step's candidates' due times (:meth:`due_at`)
        self._settings = settings or VictimSettings()
        self._marks = CostMarks(pods, clock, self._settings)
        self._applier = applier  # None: Deployment mode (mark, confirm, then drain)
        self._log = log.bind(cluster=self._name)
        self._verdicts = Counter(
            VICTIM_VERDICTS,
            "Victim protocol decisions by outcome.",
            ["cluster", "group", "outcome"],
            registry=registry,
        )
        groups = [g.name for g in self._specs.spec.worker_groups]
        self._ledger = ledger or VictimLedger(self._name, groups, registry)  # published; verify

    # --- what others read ----------------------------------------------------------------
    def victims(self) -> Mapping[str, str]:
        """Published victims: pod -> worker group (drained and confirmed)."""
        return self._ledger.victims()

    def frozen(self) -> frozenset[str]:
        """Groups whose scale-down is frozen."""
        return self._ledger.frozen()

    def saw_in_ray(self, pods: frozenset[str]) -> None:
        """These pods are live Ray nodes now (the loop's poll): they hold Ray state."""
        self._ledger.saw_in_ray(pods)

    def unfreeze(self, group: str) -> None:
        """The operator's action after looking at a wrong victim."""
        self._ledger.unfreeze(group)

    # --- the protocol ----------------------------------------------------------------------
    def due_at(self) -> float | None:
        """When the last step's first candidate refused for its idle time alone (by Ray's own,
        read afresh) reaches the timeout (``clock`` time); None when none was."""
        return min(self._due, default=None)

    async def step(self, plan: Plan) -> tuple[Verdict, ...]:
        """One round for every group of ``plan``: verify, reconcile, then the protocol."""
        self._due = []
        groups = sorted(plan.groups)
        if not self._pods.synced:
            return self._record(
                [Verdict(g, "", Outcome.NOT_SYNCED, "pod cache not synced") for g in groups]
            )
        verdicts = self._ledger.verify(self._pods.pods())
        if not self._needs_ray(plan):
            return self._record(verdicts)
        try:
            nodes = await self._ray.nodes()
        except RayError as exc:
            verdicts += [Verdict(g, "", Outcome.RAY_UNAVAILABLE, str(exc)) for g in groups]
            return self._record(verdicts)
        self.saw_in_ray(frozenset(n.pod for n in nodes))
        if self._fence is not None:
            verdicts += await self._fence.step(self._pods.pods(), nodes)
        verdicts += await self._reconcile(nodes)
        for name in groups:
            verdicts += await self._release(plan.groups[name])
            verdicts += await self._run_group(plan.groups[name], nodes)
        return self._record(verdicts)

    def _needs_ray(self, plan: Plan) -> bool:
        """A Ray read is needed only with candidates, published victims or marked pods."""
        published = self._ledger.pods()
        if published or (self._fence is not None and self._fence.wanted(self._pods.pods())):
            return True
        if any(p not in published for gp in plan.groups.values() for p in gp.removable):
            return True
        s = self._settings
        return any(p.active and has_mark(p, s.victim_cost, s) for p in self._pods.pods())

    async def reconcile(self) -> tuple[Verdict, ...]:
        """Restore stale victim marks (call once the cache is synced, e.g. at start)."""
        if not self._pods.synced:
            return self._record([Verdict("", "", Outcome.NOT_SYNCED, "pod cache not synced")])
        try:
            nodes = await self._ray.nodes()
        except RayError as exc:
            return self._record([Verdict("", "", Outcome.RAY_UNAVAILABLE, str(exc))])
        return self._record(await self._reconcile(nodes))

    async def _reconcile(self, nodes: Sequence[WorkerNode]) -> list[Verdict]:
        return await reconcile_marks(self._pods.pods(), nodes, self._ledger, self._marks)

    async def _release(self, gp: GroupPlan) -> list[Verdict]:
        """Delete the group's published victims no scale-down will take (:func:`to_release`,
        pods going by deletion cost only); the ReplicaSet replaces them."""
        if gp.name in self._ledger.frozen():
            return []
        pods = self._active_pods(gp.name)
        waiting = tuple(self._published_not_gone(gp.name, pods))
        names = to_release(gp, waiting, self._launch_limit(gp.name))
        return await release_victims(self._pods, gp, names, pods)

    async def _run_group(self, gp: GroupPlan, nodes: Sequence[WorkerNode]) -> list[Verdict]:
        name = gp.name
        pods = self._active_pods(name)
        spec = self._specs.spec.group(name)
        by_pod = {n.pod: n for n in nodes}
        view = GroupView(
            plan=gp,
            pods=pods,
            nodes=by_pod,
            victims=self._ledger.pods(),
            waiting=tuple(self._published_not_gone(name, pods)),
            frozen=name in self._ledger.frozen(),
            refusal=self._applier.refusal(name) if self._applier is not None else "",
            idle_timeout_s=spec.idle_timeout_s if spec else 0.0,
            contested=self._ray.contested(),  # as the step's nodes() read it
        )
        choice = choose(view, self._settings)
        if choice.due_in_s is not None:
            self._due.append(self._clock.now() + choice.due_in_s)
        verdicts = list(choice.verdicts)
        chosen = list(choice.chosen)
        if not chosen:
            return verdicts
        why = removal_reasons(gp)
        if self._applier is not None and self._applier.deletes_by_name:
            # Pods are deleted by name (KubeRay workersToDelete): no costs, no ranking check.
            for pod in chosen:
                verdicts.append(await self._drain_or_publish(name, pod, by_pod, why))
            return verdicts
        verdicts += await self._by_deletion_cost(name, chosen, pods, by_pod, why)
        return verdicts

    async def _by_deletion_cost(
        self,
        name: str,
        chosen: Sequence[PodInfo],
        pods: Mapping[str, PodInfo],
        by_pod: Mapping[str, WorkerNode],
        why: Mapping[str, str],
    ) -> list[Verdict]:
        """Deployment mode: mark ``chosen`` with the victim cost, confirm the ReplicaSet would
        take exactly them (:meth:`CostMarks.confirm`), then drain or publish each; else restore
        them."""
        chosen_names = {p.name for p in chosen}
        published = self._ledger.pods()
        busy = [
            p
            for p in pods.values()
            if p.name not in chosen_names
            and p.name not in published
            and (node := by_pod.get(p.name)) is not None
            and node.available != node.total
        ]
        marked, verdicts = await self._marks.mark(name, chosen, busy)
        if not marked:
            return verdicts
        problem = await self._marks.confirm(name, marked, frozenset(self._ledger.published(name)))
        if problem:
            for pod in marked:
                verdicts.append(await self._marks.restore(pod, Outcome.NOT_CONFIRMED, problem))
            return verdicts
        for pod in marked:
            verdicts.append(await self._drain_or_publish(name, pod, by_pod, why))
        return verdicts

    async def _drain_or_publish(
        self, group: str, pod: PodInfo, by_pod: Mapping[str, WorkerNode], why: Mapping[str, str]
    ) -> Verdict:
        """Drain the pod's Ray node; a pod with none (failing, or above a cap before it joined)
        holds no Ray state and is published at once, with the plan's reason."""
        node = by_pod.get(pod.name)
        if node is not None:
            return await self._drain(group, pod, node)
        self._ledger.publish(pod.name, group, "")
        reason = why.get(pod.name, Why.MAX_REPLICAS.value)
        return Verdict(group, pod.name, Outcome.VICTIM, f"{reason}: no Ray node, nothing to drain")

    def _published_not_gone(self, group: str, pods: Mapping[str, PodInfo]) -> list[str]:
        """Published victims of ``group`` whose pods still exist, when pods go by cost.

        A new candidate marked with the victim cost while these wait for the scale-down ties
        with them: the ReplicaSet, removing as many pods as were published, may take the
        candidate (not drained, maybe about to be restored) instead of a drained victim. Seen
        on a real control plane; so one batch at a time. Deleting by name (KubeRay) has no tie.
        """
        if self._applier is not None and self._applier.deletes_by_name:
            return []
        return [p for p in self._ledger.published(group) if p in pods]

    def _active_pods(self, group: str) -> dict[str, PodInfo]:
        """The group's pods not being deleted, by name."""
        return {p.name: p for p in self._pods.pods() if p.group == group and p.active}

    async def _drain(self, group: str, pod: PodInfo, node: WorkerNode) -> Verdict:
        deadline_s = self._settings.drain_deadline_s
        deadline_ms = int((self._clock.now() + deadline_s) * 1000) if deadline_s > 0 else 0
        message = f"keda-ray-scaler: worker group {group} scales down, pod {pod.name} idle"
        result = await self._drainer.drain(node.node_id, message, deadline_ms)
        if not result.accepted:
            return await self._marks.restore(pod, Outcome.DRAIN_REJECTED, result.rejection)
        self._ledger.publish(pod.name, group, node.node_id)
        return Verdict(group, pod.name, Outcome.VICTIM, f"drained node {node.node_id}")

    def _record(self, verdicts: list[Verdict]) -> tuple[Verdict, ...]:
        for v in verdicts:
            self._verdicts.labels(self._name, v.group, v.outcome.value).inc()
            if v.outcome != Outcome.WRONG_VICTIM:  # logged as an error where it is found
                self._log.info(
                    "victim verdict",
                    worker_group=v.group,
                    pod=v.pod,
                    outcome=v.outcome.value,
                    reason=v.reason,
                )
        return tuple(verdicts)
