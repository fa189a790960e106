"""The agent's poll loop: gather (Ray, pods), export, then run the victim protocol.

Each poll:

1. read Ray (:class:`~keda_ray_scaler.agent.ray.ray_state.RayReader`; task demand by rule R1 unless
   asked otherwise, a poll that fell back to the GCS's sum counted by reason);
2. bound demand cardinality (:func:`~keda_ray_scaler.agent.ray.shape_bound.bound_shapes`);
3. step the poll's memory on what was read (:func:`~keda_ray_scaler.agent.loop_memory.step`:
   the pods gone, what changed since the last poll), then complete the node list with victims,
   pods not in Ray yet and pods gone (:mod:`~keda_ray_scaler.agent.joining.pod_view`); pending
   task bundles that Ray counts both running and pending while their workers start are left out
   (:mod:`~keda_ray_scaler.agent.ray.demand_filter`, over ``use_window_s``);
4. publish the snapshot (``success=1``, time = now) to the exporter;
5. unless scale-down is off, plan on Ray's demand as read (not filtered) and hand the plan to
   the victim controller, then publish again so newly confirmed victims show at once.

Between polls it looks at Ray every ``--watch-interval`` (``ray/status_watch.py``) and polls at
once when a look sees a change or fails, or when a node reaches its group's idle timeout (so an
idle node goes within a second of it, not up to ``--interval`` later: Ray's own loop is 5 s),
else at ``--interval``, the floor (``until_next_poll``).

The parts driven besides Ray (the victim protocol, the pods, the join tracker, KubeRay mode's
leads, the look) are always there: an absent one is its "off" implementation
(:mod:`~keda_ray_scaler.agent.loop_parts`), so no step asks whether a part exists.

The worker groups are read afresh at each poll (a
:class:`~keda_ray_scaler.agent.interfaces.SpecView`: in KubeRay mode the RayCluster's watch), so
a group added, removed or changed is planned with its new values at the next poll. While the
view is not fresh the poll reads nothing and plans nothing: ``success=0``, the last snapshot kept.

When Ray cannot be read: ``success=0``, the error is counted, and the last good snapshot stays
exported with its own (old) time, so no reader takes old demand for fresh; before any success,
only the worker-group specs are exported, with time 0.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.interfaces import SpecView, spec_view
from keda_ray_scaler.agent.joining.joins import PodEntry
from keda_ray_scaler.agent.joining.pod_view import complete_nodes, complete_nodes_again
from keda_ray_scaler.agent.loop_memory import Change, Observation, PollMemory, spec_seen, step
from keda_ray_scaler.agent.loop_parts import (
    NO_JOINS,
    NO_PLANNED,
    NO_VICTIMS,
    NO_WATCH,
    JoinStep,
    Planned,
    PodList,
    Victims,
    Watch,
    no_pods,
    until_next_poll,
)
from keda_ray_scaler.agent.ray.demand_filter import DEFAULT_WINDOW_S, UseHistory
from keda_ray_scaler.agent.ray.ray_state import POLL_INTERVAL_S, WATCH_INTERVAL_S
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.agent.ray.shape_bound import DEFAULT_MAX_SHAPES, bound_shapes
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.errors import KubernetesError, RayError
from keda_ray_scaler.model import ClusterSpec, Demand, PlanningInput, Resources, WorkerNode
from keda_ray_scaler.planner.scale_down import next_idle_timeout

log = structlog.get_logger(__name__)


class StateReader(Protocol):
    """Where a poll's Ray state comes from (:class:`RayReader`, or a fake)."""

    async def read(self) -> RayState: ...


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Poll settings.

    - ``interval_s``: seconds between polls at most (Ray's autoscaler polls every 5 s too).
    - ``watch_interval_s``: seconds between looks at Ray between polls (``StatusWatch``); 0: none.
    - ``max_shapes``: bound on demand series; overflow merged conservatively and counted.
    - ``scale_down``: False runs export only: no plan, no victim protocol.
    - ``use_window_s``: how long a rise of use that pending demand does not explain is taken
      for a double count (:mod:`~keda_ray_scaler.agent.ray.demand_filter`); 0 exports as read. Rule
      R1 (the reader's) removes the spill race this was for; the window stays for what R1 does
      not cover (``docs/concepts/demand.md``).
    """

    interval_s: float = POLL_INTERVAL_S
    watch_interval_s: float = WATCH_INTERVAL_S
    max_shapes: int = DEFAULT_MAX_SHAPES
    scale_down: bool = True
    use_window_s: float = DEFAULT_WINDOW_S


class AgentLoop:
    """One Ray cluster's poll loop.

    Each part it drives is always there (:mod:`~keda_ray_scaler.agent.loop_parts`; an absent one
    is its "off" implementation), and what one poll leaves to the next is one
    :class:`~keda_ray_scaler.agent.loop_memory.PollMemory`, stepped by pure functions.
    """

    def __init__(
        self,
        cluster: ClusterSpec | SpecView,
        reader: StateReader,
        collector: SnapshotCollector,
        metrics: AgentMetrics,
        clock: Clock,
        settings: LoopSettings | None = None,
        *,
        victims: Victims = NO_VICTIMS,
        pods: PodList = no_pods,
        joins: JoinStep = NO_JOINS,
        planned: Planned = NO_PLANNED,
        watch: Watch = NO_WATCH,
    ) -> None:
        self._specs = spec_view(cluster)
        self._planned = planned  # KubeRay mode's leads: every published input planned
        self._reader = reader
        self._collector = collector
        self._metrics = metrics
        self._clock = clock
        self._settings = settings or LoopSettings()
        self._victims, self._pods, self._joins, self._watch = victims, pods, joins, watch
        spec = self._specs.spec
        self._last: schema.ClusterSnapshot = schema.ClusterSnapshot(
            PlanningInput(spec), snapshot_time_s=0.0, success=False
        )
        self._history = UseHistory(self._settings.use_window_s)  # polls as read
        self._memory = PollMemory()
        self._log = log.bind(cluster=spec.name)
        collector.publish(self._last)

    @property
    def snapshot(self) -> schema.ClusterSnapshot:
        """The snapshot exported now."""
        return self._last

    @property
    def collector(self) -> SnapshotCollector:
        """Where the snapshots are published (what ``/metrics`` serves them from)."""
        return self._collector

    def _publish(self, inp: PlanningInput, when: float) -> None:
        self._last = schema.ClusterSnapshot(inp, when, True)
        self._collector.publish(self._last)
        self._planned.observe(inp, when)

    def _publish_failed(self) -> schema.ClusterSnapshot:
        """The data already published, now with ``snapshot_success`` 0; no lead from it."""
        self._last = replace(self._last, success=False)
        self._collector.publish(self._last)
        self._planned.clear()
        return self._last

    async def poll_once(self) -> schema.ClusterSnapshot:
        """One poll: read Ray and the pods, step the memory, publish, then scale down; never
        raises for Ray or Kubernetes errors (they are counted and logged)."""
        started = self._clock.now()
        if not self._spec_fresh():
            return self._publish_failed()
        try:
            state = await self._reader.read()
        except RayError as exc:
            self._metrics.poll_errors.inc()
            self._log.warning("ray poll failed", error=str(exc))
            return self._publish_failed()
        cluster = self._specs.spec  # as the reader just mapped the nodes with
        in_ray = frozenset(n.pod for n in state.nodes)
        victims = self._victims.victims()
        self._victims.saw_in_ray(in_ray)
        pods = self._pods()
        changes = self._remember(state, pods, in_ray)
        demand = self._bounded(state, changes)
        joins = self._joins.observe(started, pods, set(in_ray), set(state.dead), victims)
        gone = self._memory.gone
        nodes = complete_nodes(cluster, state.nodes, victims, pods, gone, joins.failing)
        exported = self._without_double_count(started, state, nodes, demand)
        inp = PlanningInput(cluster, exported, nodes, joins.launch_limits, started)
        self._publish(inp, started)
        if self._settings.scale_down:
            await self._scale_down(inp, demand, state, victims, started)
        self._metrics.poll_duration.observe(max(self._clock.now() - started, 0.0))
        return self._last

    def _remember(
        self, state: RayState, pods: Sequence[PodEntry] | None, in_ray: frozenset[str]
    ) -> frozenset[Change]:
        """The memory stepped on this poll's read (:func:`~keda_ray_scaler.agent.loop_memory.step`);
        a poll whose task demand fell back from R1 counted, a change of reason logged."""
        names = frozenset(p.name for p in pods) if pods is not None else None
        seen = Observation(state.superseded, state.fallback, names, in_ray)
        self._memory, changes = step(self._memory, seen)
        fallback = state.fallback
        if fallback is not None:
            self._metrics.demand_fell_back(fallback.value)
            if Change.FELL_BACK in changes:
                self._log.warning(
                    "task demand is the GCS's sum",
                    reason=fallback.value,
                    error=state.fallback_error,
                )
        elif Change.R1_AGAIN in changes:
            self._log.info("task demand by rule R1 again")
        return changes

    def _bounded(self, state: RayState, changes: frozenset[Change]) -> Demand:
        """Ray's demand with at most ``max_shapes`` shapes (the rest merged upward, counted)."""
        demand, merged = bound_shapes(state.demand, self._settings.max_shapes)
        if merged:
            self._metrics.shapes_merged.inc(merged)
            self._log.warning("demand shapes merged", merged=merged)
        self._metrics.unmapped.set(state.unmapped)
        if state.unmapped:
            self._log.warning("unmapped ray nodes", count=state.unmapped)
        self._metrics.superseded.set(len(state.superseded))
        if Change.SUPERSEDED in changes:
            self._log.info("superseded ray nodes left out", node_ids=list(state.superseded))
        return demand

    def _without_double_count(
        self, started: float, state: RayState, nodes: Sequence[WorkerNode], demand: Demand
    ) -> Demand:
        """The demand to export: tasks Ray counts both running and pending taken out
        (:mod:`~keda_ray_scaler.agent.ray.demand_filter`)."""
        out = self._history.filter(started, nodes, demand)
        self._metrics.double_counted.set(out.removed)
        if not getattr(self._log, "is_enabled_for", lambda _: True)(logging.DEBUG):
            return out.demand  # the debug line's sums cost a pass over every node
        self._log.debug(
            "demand read",
            pending=out.current.pending_total.as_dict(),
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
        inp: PlanningInput,
        demand: Demand,
        state: RayState,
        victims: Mapping[str, str],
        started: float,
    ) -> None:
        """The victims' step on this poll's input; the snapshot published again if it changed
        the victims."""
        try:
            # Victims are chosen on Ray's demand as read: the filter is for scale-up only.
            await self._victims.step(replace(inp, demand=demand))
        except (KubernetesError, RayError) as exc:  # the controller logs and counts its own
            self._log.warning("victim step failed", error=str(exc))
        after = self._victims.victims()
        if after != victims:
            again = complete_nodes_again(inp, state, after, self._memory.gone)
            self._publish(replace(inp, nodes=again), started)

    def _spec_fresh(self) -> bool:
        """Whether the worker groups can be trusted now; a change either way logged once."""
        self._memory, changes = spec_seen(self._memory, self._specs.fresh)
        if Change.SPEC_STALE in changes:
            self._log.warning("worker groups not fresh: poll skipped, data marked not fresh")
        elif Change.SPEC_FRESH in changes:
            self._log.info("worker groups fresh again")
        return not self._memory.stale

    async def run(self) -> None:
        """Poll until cancelled: at every ``interval_s``, and at once when a look between polls
        sees a change (:func:`~keda_ray_scaler.agent.loop_parts.until_next_poll`).

        No exception ends the loop: an unexpected one is counted (``poll_errors`` and
        ``poll_crashes``), logged once with its traceback, and the data already exported is
        marked not fresh without encoding anything again (what crashed may be the encoding).
        """
        while True:
            try:
                await self.poll_once()
            except Exception:  # a bug must not stop polling silently while /metrics lives on
                self._crashed()
            pace = (self._clock, self._settings.interval_s, self._watch)
            watched, idle_due = self._last.success, self._idle_due()
            await until_next_poll(
                *pace, watched=watched, rising=self._planned.rising, idle_due=idle_due
            )

    def _idle_due(self) -> float | None:
        """When the next node of the exported input reaches its idle timeout, or a pod the
        victim step refused for Ray's idle time alone reaches it, whichever comes first, when
        this loop scales down (else None: nothing acts on it)."""
        if not self._settings.scale_down or not self._last.success:
            return None
        due = [next_idle_timeout(self._last.input), self._victims.due_at()]
        return min((d for d in due if d is not None), default=None)

    def _crashed(self) -> None:
        """The bookkeeping of a crashed poll; made of steps that cannot raise in turn."""
        self._metrics.poll_errors.inc()
        self._metrics.poll_crashes.inc()
        self._last = replace(self._last, success=False)
        self._collector.mark_failed()
        self._planned.clear()
        self._log.exception("poll crashed")
