"""The demo's composition: real Ray, agent, scaler and gRPC; simulated Kubernetes and KEDA.

One Ray cluster ``demo`` with one worker group ``cpu`` of 10-CPU pods. Every
``poll_interval_s``: the agent polls Ray, plans, runs the victim protocol and exports
``/metrics``; the scaler (its own background refresh, scraping that ``/metrics``) answers the
KEDA stand-in over gRPC on loopback; the simulated Deployment controller starts or stops worker
raylets to match. A driver submits 20 tasks of ``{CPU: 5}``: the target goes to 10, then, once
the tasks are done and the pods idle for ``idle_timeout_s``, back down through the victim
protocol, deleting only drained, idle pods. Everything runs under ``workdir`` and every process
is stopped by its PID on the way out.

This module runs the loop and applies KEDA's answers to the Deployment; what it runs is in
``demo_settings.py``, the workload's driver process in ``driver.py``, the timeline and the result in
``record.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import TextIO

import grpc
import structlog

from keda_ray_scaler.clock import Clock
from keda_ray_scaler.demo.controller import DeploymentController
from keda_ray_scaler.demo.demo_agent import DemoAgent
from keda_ray_scaler.demo.demo_settings import DemoSettings
from keda_ray_scaler.demo.driver import Driver, submit
from keda_ray_scaler.demo.keda import Decision, ScaledObject
from keda_ray_scaler.demo.pods import DemoPods
from keda_ray_scaler.demo.progress import Progress
from keda_ray_scaler.demo.raylets import RayProcesses
from keda_ray_scaler.demo.record import DemoResult, Timeline, record, stalled
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc.server import build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.sources.scrape import ScrapeSettings, ScrapeSource
from keda_ray_scaler.sources.source_settings import RetrySettings

#: The namespace the demo's ScaledObject and its Ray cluster live in (no Kubernetes here: the
#: scaler's --agent-url configuration says it, as in a real scrape-mode setup).
DEMO_NAMESPACE = "demo"

log = structlog.get_logger(__name__)


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
            agent = await DemoAgent(
                settings.cluster_spec(),
                ray.gcs_address,
                ray.env,
                pods,
                clock,
                settings.settle_s,
                settings.demand_read,
                settings.use_window_s,
            ).started()
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
    driver: Driver | None = None
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
                driver = await submit(settings, agent, say, result)
                drivers.append(driver.process)
            decision = await scaled.poll(controller.replicas)
            record(decision, last, driver is not None, settings, agent, say, result)
            last = decision
            if decision.replicas != controller.replicas:
                await _apply(decision.replicas, controller, agent, say, result)
            process = driver.process if driver is not None else None
            if stalled(settings, say, agent, controller, decision, result, progress, process):
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


def _all_gone(controller: DeploymentController) -> bool:
    """No replicas asked for and no pod left."""
    return controller.replicas == 0 and not controller.current()


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
