"""The agent's poll loop: gather (Ray, pods), export, then run the victim protocol.

Each poll:

1. read Ray (:class:`~keda_ray_scaler.agent.ray.ray_state.RayReader`; task demand by rule R1 unless
   asked otherwise, a poll that fell back to the GCS's sum counted by reason);
2. bound demand cardinality (:func:`~keda_ray_scaler.agent.ray.shape_bound.bound_shapes`);
3. complete the node list with victims, pods not in Ray yet and pods gone
   (:mod:`~keda_ray_scaler.agent.joining.pod_view`); pending task bundles that Ray counts both
   running
   and pending while their workers start are left out
   (:mod:`~keda_ray_scaler.agent.ray.demand_filter`, over ``use_window_s``);
4. publish the snapshot (``success=1``, time = now) to the exporter;
5. unless scale-down is off, plan on Ray's demand as read (not filtered) and hand the plan to
   the victim controller, then publish again so newly confirmed victims show at once.

The worker groups are read afresh at each poll (a
:class:`~keda_ray_scaler.agent.interfaces.SpecView`:
in KubeRay mode the RayCluster's watch), so a group added, removed or changed is planned with its
new values at the next poll. While the view is not fresh (the RayCluster deleted, unreadable or
invalid) the poll reads nothing and plans nothing: ``success=0``, the last snapshot kept.

When Ray cannot be read: ``success=0``, the error is counted, and the last good snapshot stays
exported with its own (old) time, so no reader takes old demand for fresh; before any success,
only the worker-group specs are exported, with time 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.interfaces import Clock, SpecView, spec_view
from keda_ray_scaler.agent.joining.join_tracker import JoinTracker, JoinView
from keda_ray_scaler.agent.joining.joins import PodEntry
from keda_ray_scaler.agent.joining.pod_view import complete_nodes, complete_nodes_again
from keda_ray_scaler.agent.kuberay.scale_up_lead import PlannedTargets
from keda_ray_scaler.agent.ray.demand_filter import DEFAULT_WINDOW_S, UseHistory
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.agent.ray.shape_bound import bound_shapes
from keda_ray_scaler.agent.ray.task_load_read import Fallback
from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.errors import KubernetesError, RayError
from keda_ray_scaler.model import (
    ClusterSpec,
    Demand,
    PlanningInput,
    Resources,
    WorkerNode,
)

log = structlog.get_logger(__name__)


class StateReader(Protocol):
    """Where a poll's Ray state comes from (:class:`RayReader`, or a fake)."""

    async def read(self) -> RayState: ...


class VictimStep(Protocol):
    """The part of ``victims.VictimController`` the loop drives."""

    def victims(self) -> Mapping[str, str]: ...

    def saw_in_ray(self, pods: frozenset[str]) -> None: ...

    async def step(self, plan: Plan) -> Sequence[object]: ...


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Poll settings.

    - ``interval_s``: seconds between polls (Ray's autoscaler polls every 5 s too).
    - ``max_shapes``: bound on demand series; overflow merged conservatively and counted.
    - ``scale_down``: False runs export only: no plan, no victim protocol.
    - ``use_window_s``: how long a rise of use that pending demand does not explain is taken
      for a double count (:mod:`~keda_ray_scaler.agent.ray.demand_filter`); 0 exports as read. Rule
      R1 (the reader's) removes the spill race this was for; the window stays for what R1 does
      not cover (``docs/concepts/demand.md``).
    """

    interval_s: float = 5.0
    max_shapes: int = 200
    scale_down: bool = True
    use_window_s: float = DEFAULT_WINDOW_S


class AgentLoop:
    """One Ray cluster's poll loop."""

    def __init__(
        self,
        cluster: ClusterSpec | SpecView,
        reader: StateReader,
        collector: SnapshotCollector,
        metrics: AgentMetrics,
        clock: Clock,
        settings: LoopSettings | None = None,
        *,
        planner: Callable[[PlanningInput], Plan] | None = None,
        victims: VictimStep | None = None,
        pods: Callable[[], Sequence[PodEntry] | None] | None = None,
        joins: JoinTracker | None = None,
        planned: PlannedTargets | None = None,
    ) -> None:
        self._specs = spec_view(cluster)
        self._planned = planned  # the applier's scale-up lead: every published input planned
        self._stale = False  # the spec was not fresh at the last poll (logged once)
        self._reader = reader
        self._collector = collector
        self._metrics = metrics
        self._clock = clock
        self._settings = settings or LoopSettings()
        self._planner = planner
        self._victims = victims
        self._pods = pods
        self._joins = joins
        spec = self._specs.spec
        self._last: schema.ClusterSnapshot = schema.ClusterSnapshot(
            PlanningInput(spec), snapshot_time_s=0.0, success=False
        )
        self._history = UseHistory(self._settings.use_window_s)  # polls as read
        self._superseded: tuple[str, ...] = ()  # the last poll's, logged when it changes
        self._known_pods: frozenset[str] = frozenset()  # pod names of the last synced listing
        self._gone: frozenset[str] = frozenset()  # seen before, absent now, still in Ray
        self._fallback: Fallback | None = None  # why the last poll's task demand fell back
        self._log = log.bind(cluster=spec.name)
        collector.publish(self._last)

    @property
    def snapshot(self) -> schema.ClusterSnapshot:
        """The snapshot exported now."""
        return self._last

    def _publish(self, inp: PlanningInput, when: float) -> None:
        self._last = schema.ClusterSnapshot(inp, when, True)
        self._collector.publish(self._last)
        if self._planned is not None:
            self._planned.observe(inp, when)

    def _publish_failed(self) -> schema.ClusterSnapshot:
        """The data already published, now with ``snapshot_success`` 0; no lead from it."""
        self._last = replace(self._last, success=False)
        self._collector.publish(self._last)
        if self._planned is not None:
            self._planned.clear()
        return self._last

    async def poll_once(self) -> schema.ClusterSnapshot:
        """One poll; never raises for Ray or Kubernetes errors (they are counted and logged)."""
        started = self._clock.now()
        if not self._spec_fresh():
            return self._publish_failed()
        try:
            state = await self._reader.read()
        except RayError as exc:
            self._metrics.poll_errors.inc()
            self._log.warning("ray poll failed", error=str(exc))
            return self._publish_failed()
        self._note_fallback(state)
        cluster = self._specs.spec  # as the reader just mapped the nodes with
        demand = self._bounded(state)
        victims = self._victims.victims() if self._victims is not None else {}
        if self._victims is not None:
            self._victims.saw_in_ray(frozenset(n.pod for n in state.nodes))
        pods = self._pods() if self._pods is not None else None
        self._track_gone(pods, state.nodes)
        joins = JoinView({}, ())
        if self._joins is not None:
            in_ray = {n.pod for n in state.nodes}
            joins = self._joins.observe(started, pods, in_ray, set(state.dead), victims)
        nodes = complete_nodes(cluster, state.nodes, victims, pods, self._gone, joins.failing)
        exported = self._without_double_count(started, state, nodes, demand)
        inp = PlanningInput(cluster, exported, nodes, joins.launch_limits)
        self._publish(inp, started)
        if self._settings.scale_down and self._victims is not None and self._planner:
            await self._scale_down(
                self._victims, self._planner, inp, demand, state, victims, started
            )
        self._metrics.poll_duration.observe(max(self._clock.now() - started, 0.0))
        return self._last

    def _bounded(self, state: RayState) -> Demand:
        """Ray's demand with at most ``max_shapes`` shapes (the rest merged upward, counted)."""
        demand, merged = bound_shapes(state.demand, self._settings.max_shapes)
        if merged:
            self._metrics.shapes_merged.inc(merged)
            self._log.warning("demand shapes merged", merged=merged)
        self._metrics.unmapped.set(state.unmapped)
        if state.unmapped:
            self._log.warning("unmapped ray nodes", count=state.unmapped)
        self._metrics.superseded.set(len(state.superseded))
        if state.superseded and state.superseded != self._superseded:
            self._log.info("superseded ray nodes left out", node_ids=list(state.superseded))
        self._superseded = state.superseded
        return demand

    def _without_double_count(
        self, started: float, state: RayState, nodes: Sequence[WorkerNode], demand: Demand
    ) -> Demand:
        """The demand to export: tasks Ray counts both running and pending taken out
        (:mod:`~keda_ray_scaler.agent.ray.demand_filter`)."""
        out = self._history.filter(started, nodes, demand)
        self._metrics.double_counted.set(out.removed)
        self._log.debug(
            "demand read",
            pending=out.current.pending.as_dict(),
            in_use=sum((u for u in out.current.used.values()), Resources()).as_dict(),
            starting=len(state.starting),
            gcs_tasks=state.gcs_tasks,
            fallback=state.fallback.value if state.fallback is not None else "",
            horizon_s=round(out.horizon_s, 1),
            removed=out.removed,
        )
        return out.demand

    async def _scale_down(
        self,
        controller: VictimStep,
        planner: Callable[[PlanningInput], Plan],
        inp: PlanningInput,
        demand: Demand,
        state: RayState,
        victims: Mapping[str, str],
        started: float,
    ) -> None:
        """The victims' step on this poll's plan; the snapshot published again if it changed
        the victims."""
        try:
            # Victims are chosen on Ray's demand as read: the filter is for scale-up only.
            await controller.step(planner(replace(inp, demand=demand)))
        except (KubernetesError, RayError) as exc:  # the controller logs and counts its own
            self._log.warning("victim step failed", error=str(exc))
        after = controller.victims()
        if after != victims:
            again = complete_nodes_again(inp, state, after, self._gone)
            self._publish(replace(inp, nodes=again), started)

    def _note_fallback(self, state: RayState) -> None:
        """Count a poll whose task demand fell back from R1; log when the reason changes."""
        now, before = state.fallback, self._fallback
        self._fallback = now
        if now is not None:
            self._metrics.demand_fell_back(now.value)
            if now != before:
                self._log.warning(
                    "task demand is the GCS's sum", reason=now.value, error=state.fallback_error
                )
        elif before is not None:
            self._log.info("task demand by rule R1 again")

    def _spec_fresh(self) -> bool:
        """Whether the worker groups can be trusted now; a change either way logged once."""
        fresh = self._specs.fresh
        if not fresh and not self._stale:
            self._log.warning("worker groups not fresh: poll skipped, data marked not fresh")
        elif fresh and self._stale:
            self._log.info("worker groups fresh again")
        self._stale = not fresh
        return fresh

    def _track_gone(self, pods: Sequence[PodEntry] | None, ray_nodes: Sequence[WorkerNode]) -> None:
        """Remember pods that left the (synced) cache while Ray still reports their node."""
        if pods is None:  # cache not synced: keep what we knew, decide nothing new
            return
        names = frozenset(p.name for p in pods)
        in_ray = {n.pod for n in ray_nodes}
        self._gone = frozenset((self._gone | (self._known_pods - names)) & in_ray - names)
        self._known_pods = names

    async def run(self) -> None:
        """Poll every ``interval_s`` until cancelled; a poll that crashes is a failed poll.

        No exception ends the loop: an unexpected one is counted (``poll_errors`` and
        ``poll_crashes``), logged once with its traceback, and the data already exported is
        marked not fresh without encoding anything again (what crashed may be the encoding).
        """
        while True:
            try:
                await self.poll_once()
            except Exception:  # a bug must not stop polling silently while /metrics lives on
                self._crashed()
            await self._clock.sleep(self._settings.interval_s)

    def _crashed(self) -> None:
        """The bookkeeping of a crashed poll; made of steps that cannot raise in turn."""
        self._metrics.poll_errors.inc()
        self._metrics.poll_crashes.inc()
        self._last = replace(self._last, success=False)
        self._collector.mark_failed()
        if self._planned is not None:
            self._planned.clear()
        self._log.exception("poll crashed")
