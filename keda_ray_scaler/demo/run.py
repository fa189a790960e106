"""The demo's composition: real Ray, agent, scaler and gRPC; simulated Kubernetes and KEDA.

One Ray cluster ``demo`` with one worker group ``cpu`` of 10-CPU pods. Every
``poll_interval_s``: the agent polls Ray, plans, runs the victim protocol and exports
``/metrics``; the scaler (its own background refresh, scraping that ``/metrics``) answers the
KEDA stand-in over gRPC on loopback; the simulated Deployment controller starts or stops worker
raylets to match. A driver submits 20 tasks of ``{CPU: 5}``: the target goes to 10, then, once
the tasks are done and the pods idle for ``idle_timeout_s``, back down through the victim
protocol, deleting only drained, idle pods. Everything runs under ``workdir`` and every process
is stopped by its PID on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import grpc
import structlog

from keda_ray_scaler.agent.demand_filter import DEFAULT_WINDOW_S
from keda_ray_scaler.agent.ports import Clock
from keda_ray_scaler.agent.ray_state import DemandRead
from keda_ray_scaler.demo.agent import DemoAgent, start_agent
from keda_ray_scaler.demo.controller import Deletion, DeploymentController
from keda_ray_scaler.demo.keda import Decision, ScaledObject
from keda_ray_scaler.demo.pods import DemoPods
from keda_ray_scaler.demo.progress import DemoState, Progress, Sample, waiting_for
from keda_ray_scaler.demo.raylets import RayProcesses
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import ClusterSpec, Resources, WorkerGroup
from keda_ray_scaler.rpc.server import build_server
from keda_ray_scaler.rpc.targets import TargetSettings
from keda_ray_scaler.sources.scrape import ScrapeSettings, ScrapeSource
from keda_ray_scaler.sources.transport import RetrySettings

#: The namespace the demo's ScaledObject and its Ray cluster live in (no Kubernetes here: the
#: scaler's --agent-url configuration says it, as in a real scrape-mode setup).
DEMO_NAMESPACE = "demo"

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class DemoSettings:
    """What the demo runs; the defaults are the documented demo (under 2 minutes).

    ``upscaling_speed`` 10 lets all 10 pods be pending at once (Ray's rule: at most
    ``max(5, speed * running)`` pending pods per group), so the first answer is already 10.
    """

    workdir: Path  # HOME, Ray's temp dir and logs (the caller creates and removes it)
    ray_bin: Path  # the ``ray`` executable of the environment
    python: Path  # the interpreter that runs the driver
    base_env: Mapping[str, str]  # environment the Ray processes start from
    cluster: str = "demo"
    group: str = "cpu"
    pod_cpus: int = 10
    max_replicas: int = 20
    idle_timeout_s: float = 10.0
    upscaling_speed: float = 10.0
    tasks: int = 20
    task_cpus: int = 5
    task_seconds: float = 8.0
    long_tasks: int = 0  # tasks that keep their pod busy after the others ended
    long_seconds: float = 30.0
    worker_start_delay_s: float = 0.0  # each worker process of the workload starts this late
    demand_read: DemandRead = DemandRead.EXACT  # the agent's task demand source (--demand-read)
    use_window_s: float = DEFAULT_WINDOW_S  # the agent's double-count window (--use-window)
    poll_interval_s: float = 1.0  # agent poll, scaler refresh and KEDA poll
    settle_s: float = 1.0  # the victim protocol's settling delay (5 s in production)
    #: HPA scaleDown.stabilizationWindowSeconds: longer than agent poll + scaler refresh, the
    #: time it takes a new pod to show in the scaler's view (the manifests use 60 s)
    scale_down_window_s: float = 5.0
    #: the demo fails when nothing it watches (demand, target, replicas, pods by state, tasks
    #: done) changed for this long: longer than the idle timeout and the longest task
    stall_s: float = 60.0
    deadline_s: float = 600.0  # a hard cap on the whole run, however it progresses

    def cluster_spec(self) -> ClusterSpec:
        """The demo's Ray cluster: one group of ``pod_cpus``-CPU pods."""
        group = WorkerGroup(
            self.group,
            Resources.of(CPU=self.pod_cpus),
            min_replicas=0,
            max_replicas=self.max_replicas,
            idle_timeout_s=self.idle_timeout_s,
        )
        return ClusterSpec(self.cluster, (group,), upscaling_speed=self.upscaling_speed)


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


async def run_demo(settings: DemoSettings, clock: Clock, out: TextIO | None) -> DemoResult:
    """Run the demo; print the timeline to ``out``; stop every process before returning."""
    result = DemoResult()
    say = Timeline(clock, out, result)
    ray = RayProcesses(settings.ray_bin, settings.workdir, settings.base_env)
    drivers: list[asyncio.subprocess.Process] = []
    agent: DemoAgent | None = None
    try:
        async with asyncio.timeout(settings.deadline_s):
            ray.start_head()
            say(f"Ray head started (pid {ray.head.pid if ray.head else '?'}, {ray.gcs_address})")
            pods = DemoPods()
            agent = await start_agent(
                settings.cluster_spec(),
                ray.gcs_address,
                ray.env,
                pods,
                clock,
                settings.settle_s,
                settings.demand_read,
                settings.use_window_s,
            )
            say(f"agent exporting {agent.metrics_url}")
            await _scale(settings, clock, say, ray, pods, agent, result, drivers)
    except TimeoutError:
        result.failed = (
            f"deadline of {settings.deadline_s:g} s reached while waiting for {result.waiting_for}"
        )
        say(result.failed)
    finally:
        for driver in drivers:
            if driver.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(driver.pid, signal.SIGKILL)  # its own session: driver + workers
                await driver.wait()
        if agent is not None:
            await agent.stop()
        await asyncio.to_thread(ray.stop_all)
        say("every process stopped")
    return result


async def _scale(
    settings: DemoSettings,
    clock: Clock,
    say: Timeline,
    ray: RayProcesses,
    pods: DemoPods,
    agent: DemoAgent,
    result: DemoResult,
    drivers: list[asyncio.subprocess.Process],
) -> None:
    controller = DeploymentController(
        f"ray-{settings.cluster}-{settings.group}",
        settings.group,
        settings.pod_cpus,
        pods,
        ray,
        clock,
    )
    source = ScrapeSource(
        ScrapeSettings(
            {ClusterRef(DEMO_NAMESPACE, settings.cluster): agent.metrics_url},
            retry=RetrySettings(attempts=2, deadline_s=2.0),
        )
    )
    targets = TargetSettings(
        refresh_interval_s=settings.poll_interval_s,
        max_age_s=max(10.0, 10 * settings.poll_interval_s),
    )
    async with build_server(source, clock=clock.now, target_settings=targets) as server:
        say(f"scaler serving gRPC on 127.0.0.1:{server.port} (source: scrape {agent.metrics_url})")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            scaled = ScaledObject(
                channel,
                controller.name,
                DEMO_NAMESPACE,
                {"rayCluster": settings.cluster, "workerGroup": settings.group},
                min_replicas=0,
                max_replicas=settings.max_replicas,
                clock=clock.now,
                scale_down_window_s=settings.scale_down_window_s,
            )
            try:
                await _loop(settings, clock, say, agent, controller, scaled, result, drivers)
            finally:
                await controller.aclose()
        source.close()


@dataclass
class _Driver:
    """The workload's driver process once submitted, and the task reading its events."""

    process: asyncio.subprocess.Process
    reader: asyncio.Task[None] | None

    async def finished(self) -> bool:
        """True once the driver exited and all its output was read."""
        if self.process.returncode is None:
            return False
        if self.reader is not None:
            await self.reader
            self.reader = None
        return True

    async def stop_reading(self) -> None:
        """Cancel the reader if it still runs."""
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader


async def _loop(
    settings: DemoSettings,
    clock: Clock,
    say: Timeline,
    agent: DemoAgent,
    controller: DeploymentController,
    scaled: ScaledObject,
    result: DemoResult,
    drivers: list[asyncio.subprocess.Process],
) -> None:
    driver: _Driver | None = None
    last: Decision | None = None
    last_nodes = ""
    progress = Progress(settings.stall_s, say.elapsed())
    try:
        while True:
            await agent.step()
            await _replace_deleted(controller, agent, say, result)
            for pod in controller.heal(agent.registered):
                say(f"{pod}: raylet exited before joining Ray, restarted (kubelet)")
            nodes = agent.describe_nodes()
            if nodes != last_nodes:
                say(nodes)
                last_nodes = nodes
            if driver is None and agent.ready():
                driver = await _submit(settings, agent, say, result)
                drivers.append(driver.process)
            decision = await scaled.poll(controller.replicas)
            _record(decision, last, driver is not None, settings, agent, say, result)
            last = decision
            if decision.replicas != controller.replicas:
                await _apply(decision.replicas, controller, agent, say, result)
            process = driver.process if driver is not None else None
            if _stalled(settings, say, agent, controller, decision, result, progress, process):
                return
            if driver is not None and await driver.finished() and _all_gone(controller):
                result.final_replicas = 0
                result.finished = True
                result.waiting_for = "nothing (done)"
                say("back to 0 pods: done")
                return
            await asyncio.sleep(settings.poll_interval_s)
    finally:
        result.final_replicas = controller.replicas
        if driver is not None:
            await driver.stop_reading()


async def _submit(
    settings: DemoSettings, agent: DemoAgent, say: Timeline, result: DemoResult
) -> _Driver:
    """Start the workload's driver; one agent poll later, so the agent sees the demand."""
    process = await _start_driver(settings, agent.gcs_address, agent.env)
    reader = asyncio.create_task(_read_driver(process, say, result))
    say(
        f"driver (pid {process.pid}) submits {settings.tasks} tasks of "
        f"{{CPU: {settings.task_cpus}}}"
        + (f", {settings.long_tasks} of them long" if settings.long_tasks else "")
    )
    await asyncio.sleep(settings.poll_interval_s)  # let the agent see the demand
    await agent.step()
    return _Driver(process, reader)


def _record(
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


def _all_gone(controller: DeploymentController) -> bool:
    """No replicas asked for and no pod left."""
    return controller.replicas == 0 and not controller.current()


def _stalled(
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


async def _apply(
    replicas: int,
    controller: DeploymentController,
    agent: DemoAgent,
    say: Timeline,
    result: DemoResult,
) -> None:
    before = controller.replicas
    victims = set(agent.victims())
    busy = agent.busy_pods()
    created, deleted = await controller.scale(replicas)
    result.peak_replicas = max(result.peak_replicas, replicas)
    result.created += created
    result.deletions += deleted
    for d in deleted:
        result.victim_when_deleted[d.pod] = d.pod in victims
        result.busy_when_deleted[d.pod] = d.pod in busy
    change = f"Deployment {controller.name}: replicas {before} -> {replicas}"
    if created:
        change += f", started {len(created)} worker raylets"
    if deleted:
        names = ", ".join(f"{d.pod} (cost {d.cost})" for d in deleted)
        change += f", deleted {names}"
    say(change)


async def _replace_deleted(
    controller: DeploymentController, agent: DemoAgent, say: Timeline, result: DemoResult
) -> None:
    """Pods the agent deleted itself (victims the scale-down would not take): the "kubelet"
    stops their raylets, the "ReplicaSet" replaces them."""
    victims = set(agent.victims())
    busy = agent.busy_pods()
    stopped, created = await controller.replace_deleted()
    result.created += created
    for pod in stopped:
        result.victim_when_deleted[pod] = pod in victims
        result.busy_when_deleted[pod] = pod in busy
    if stopped or created:
        say(
            f"Deployment {controller.name}: pods deleted by the agent {stopped}, "
            f"replaced by {created} (ReplicaSet)"
        )


async def _start_driver(
    settings: DemoSettings, gcs_address: str, env: Mapping[str, str]
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(settings.python),
        "-m",
        "keda_ray_scaler.demo.workload",
        f"--tasks={settings.tasks}",
        f"--cpus={settings.task_cpus}",
        f"--seconds={settings.task_seconds}",
        f"--long={settings.long_tasks}",
        f"--long-seconds={settings.long_seconds}",
        f"--worker-start-delay={settings.worker_start_delay_s}",
        env={**env, "RAY_ADDRESS": gcs_address},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        stdin=asyncio.subprocess.DEVNULL,
        cwd=settings.workdir,
        start_new_session=True,
    )


async def _read_driver(
    driver: asyncio.subprocess.Process, say: Timeline, result: DemoResult
) -> None:
    assert driver.stdout is not None
    async for raw in driver.stdout:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        kind = event.get("event")
        if kind == "done":
            result.tasks_done[int(event["task"])] = str(event["pod"])
            result.task_done_at_s[int(event["task"])] = say.now()
            say(f"task {event['task']} finished on {event['pod']}")
        elif kind == "finished":
            result.workload_ok = True
            say(f"driver: all {event['tasks']} tasks finished")
        elif kind == "failed":
            say(f"driver: a task failed: {event['error']}")
    code = await driver.wait()
    if code:
        print(f"driver exited with {code}", file=sys.stderr)
