"""What the demo saw: the timeline it prints and the :class:`DemoResult` it returns.

:class:`Timeline` prints and keeps timestamped lines; :func:`record` notes KEDA's answer of a
poll and :func:`stalled` the poll's sample and the condition the demo waits for, failing the run
when nothing it watches changed for ``stall_s``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TextIO

from keda_ray_scaler.clock import Clock
from keda_ray_scaler.demo.controller import Deletion, DeploymentController
from keda_ray_scaler.demo.demo_agent import DemoAgent
from keda_ray_scaler.demo.demo_settings import DemoSettings
from keda_ray_scaler.demo.keda import Decision
from keda_ray_scaler.demo.progress import DemoState, Progress, Sample, waiting_for


@dataclass(frozen=True, slots=True)
class Event:
    """One line of the timeline."""

    at_s: float  # seconds since the start
    what: str


@dataclass
class DemoResult:
    """What happened, for the timeline's summary and the local end-to-end test."""

    events: list[Event] = field(default_factory=list)
    first_metric: float | None = None  # GetMetrics' first answer once the tasks were submitted
    #: GetMetrics' first answer once Ray reported every task pending (before any pod joined)
    metric_at_full_demand: float | None = None
    peak_replicas: int = 0
    created: list[str] = field(default_factory=list)
    deletions: list[Deletion] = field(default_factory=list)
    #: for each deleted pod: it was a published victim when the ReplicaSet deleted it
    victim_when_deleted: dict[str, bool] = field(default_factory=dict)
    #: for each deleted pod: its Ray node had resources in use when the ReplicaSet deleted it
    busy_when_deleted: dict[str, bool] = field(default_factory=dict)
    tasks_done: dict[int, str] = field(default_factory=dict)  # task -> pod it ran on
    task_done_at_s: dict[int, float] = field(default_factory=dict)  # task -> clock time
    workload_ok: bool = False
    final_replicas: int = -1
    finished: bool = False  # back to zero before the deadline
    samples: list[Sample] = field(default_factory=list)  # one per poll, for the PNG
    waiting_for: str = "the Ray head and the agent to start"  # the condition not met yet
    failed: str = ""  # why the demo stopped before the end (names the condition)


class Timeline:
    """Prints readable, timestamped lines as they happen, and keeps them."""

    def __init__(self, clock: Clock, out: TextIO | None, result: DemoResult) -> None:
        self._clock = clock
        self._start = clock.now()
        self._out = out
        self._result = result

    def __call__(self, what: str) -> None:
        at = self._clock.now() - self._start
        self._result.events.append(Event(at, what))
        if self._out is not None:
            print(f"[{at:6.1f}s] {what}", file=self._out, flush=True)

    def elapsed(self) -> float:
        """Seconds since the start."""
        return self._clock.now() - self._start

    def now(self) -> float:
        """The clock's time."""
        return self._clock.now()


def record(
    decision: Decision,
    last: Decision | None,
    submitted: bool,
    settings: DemoSettings,
    agent: DemoAgent,
    say: Timeline,
    result: DemoResult,
) -> None:
    """Note KEDA's answer in the result; say it when it changed."""
    if submitted and result.first_metric is None and decision.metric:
        result.first_metric = decision.metric
    if agent.pending_bundles() == settings.tasks and decision.metric is not None:
        # The last answer while every task is still pending (the scaler's view may
        # lag one refresh behind the agent's, so the first one may be partial).
        result.metric_at_full_demand = decision.metric
    if last is None or (decision.metric, decision.active, decision.error) != (
        last.metric,
        last.active,
        last.error,
    ):
        say(_describe(decision, agent))


def stalled(
    settings: DemoSettings,
    say: Timeline,
    agent: DemoAgent,
    controller: DeploymentController,
    decision: Decision,
    result: DemoResult,
    progress: Progress,
    driver: asyncio.subprocess.Process | None,
) -> bool:
    """Record this poll (sample, condition); True, with the reason said, when progress stopped."""
    now = say.elapsed()
    pods = agent.pod_states()
    sample = Sample(now, agent.pending_bundles(), decision.metric, controller.replicas, pods)
    result.samples.append(sample)
    result.waiting_for = waiting_for(
        DemoState(
            agent_ready=agent.ready(),
            submitted=driver is not None,
            answered=result.first_metric is not None,
            tasks=settings.tasks,
            tasks_done=len(result.tasks_done),
            driver_running=driver is not None and driver.returncode is None,
            replicas=controller.replicas,
            pods_left=len(controller.current()),
        )
    )
    watched = (sample.pending, sample.target, sample.replicas, pods, len(result.tasks_done))
    progress.observe((watched, len(controller.current()), result.waiting_for), now)
    if not progress.stalled(now):
        return False
    result.failed = f"no progress for {settings.stall_s:g} s while waiting for {result.waiting_for}"
    say(result.failed)
    return True


def _describe(decision: Decision, agent: DemoAgent) -> str:
    if decision.error:
        return f"scaler: {decision.error} (KEDA keeps the current replicas)"
    victims = sorted(agent.victims())
    shown = f", victims {victims}" if victims else ""
    return f"scaler: IsActive={decision.active} GetMetrics={decision.metric}{shown}"
