"""Fence: the Ray node of a pod being deleted is drained for preemption, once, so Ray places no
new work on a pod that is about to die (the fault matrix's lost tasks, 2026-11-27)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fake_clock import FakeClock
from kube_emulator import (  # the emulator fixtures and helpers
    NS,
    PODS,
    VersionedEmulator,
    api,
    cache,
    emulator,
    registry,
    running,
    until,
    watching,
)
from prometheus_client import CollectorRegistry
from victim_fakes import CLUSTER, FakeDrainer, FakeRay

from keda_ray_scaler.agent.interfaces import DrainResult
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.metric_names import VICTIM_VERDICTS
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.agent.victims.fence import Fence, to_fence
from keda_ray_scaler.agent.victims.verdicts import Outcome
from keda_ray_scaler.decisions import GroupPlan, Plan
from keda_ray_scaler.model import NodeStatus, Resources, WorkerNode

__all__ = ["api", "cache", "emulator", "registry", "running"]  # fixtures used by name
CPU = Resources.of(CPU=10)


def node(pod: str, status: NodeStatus = NodeStatus.RUNNING, node_id: str = "") -> WorkerNode:
    return WorkerNode(pod, "cpu", CPU, CPU, 0.0, status, node_id or f"n-{pod}")


def test_only_running_nodes_of_pods_being_deleted_are_fenced() -> None:
    pods = [PodInfo("a", deleting=True), PodInfo("b"), PodInfo("c", deleting=True)]
    nodes = [node("a"), node("b"), node("c", NodeStatus.DRAINING), node("d")]
    assert [n.pod for n in to_fence(pods, nodes, frozenset())] == ["a"]
    assert to_fence(pods, nodes, frozenset({"n-a"})) == []


class Fencer:
    """Answers each fence as told; records the calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.reject = False

    async def fence(self, node_id: str, message: str) -> DrainResult:
        self.calls.append(node_id)
        return DrainResult(not self.reject, "no" if self.reject else "")


def test_a_fence_is_asked_once_retried_after_a_rejection_and_forgotten_with_the_node() -> None:
    async def scenario() -> list[list[str]]:
        fencer = Fencer()
        fence = Fence(fencer)
        pods = [PodInfo("a", deleting=True)]
        seen = []
        fencer.reject = True
        assert await fence.step(pods, [node("a")]) == []
        fencer.reject = False
        (verdict,) = await fence.step(pods, [node("a")])
        assert (verdict.pod, verdict.outcome) == ("a", Outcome.FENCED)
        assert await fence.step(pods, [node("a")]) == []  # fenced already
        seen.append(list(fencer.calls))
        await fence.step(pods, [])  # the node is gone from Ray: forgotten
        await fence.step(pods, [node("a")])  # listed again (a new read): fenced again
        seen.append(list(fencer.calls))
        return seen

    assert asyncio.run(scenario()) == [["n-a", "n-a"], ["n-a", "n-a", "n-a"]]


class FencingDrainer(FakeDrainer):
    """The test's drainer, fences recorded apart."""

    def __init__(self) -> None:
        super().__init__()
        self.fences: list[str] = []

    async def fence(self, node_id: str, message: str) -> DrainResult:
        self.fences.append(node_id)
        return DrainResult(True)


@pytest.fixture
async def deleting_pod(
    emulator: VersionedEmulator, cache: PodCache, running: Callable[[], object]
) -> AsyncIterator[None]:
    """w-1 being deleted (deletionTimestamp set), w-2 running; the cache synced."""
    emulator.put_pod("w-1", node="node-1")
    emulator.put_pod("w-2", node="node-2")
    pod: Any = emulator.objects[PODS, NS, "w-1"]
    pod.patch({"metadata": {"deletionTimestamp": "2026-11-27T15:29:45Z"}})
    running()
    await until(watching(emulator))
    yield


async def test_the_controller_fences_a_deleted_pods_node_with_nothing_else_to_do(
    deleting_pod: None, cache: PodCache, registry: CollectorRegistry
) -> None:
    """No candidate, no victim: the step still reads Ray and fences w-1's node, once; w-2's
    node and the idle-termination drains are left alone."""
    ray = FakeRay()
    ray.busy("w-1")
    ray.idle("w-2")
    drainer = FencingDrainer()
    controller = VictimController(
        CLUSTER, cache, ray, drainer, FakeClock(), registry, fence=Fence(drainer)
    )
    gp = GroupPlan("cpu", target=2, desired=2, floor=2, current=2, busy=2, new=0)
    verdicts = await controller.step(Plan(groups={"cpu": gp}))
    assert [(v.pod, v.outcome) for v in verdicts] == [("w-1", Outcome.FENCED)]
    assert (drainer.fences, drainer.calls) == (["n-w-1"], [])
    await controller.step(Plan(groups={"cpu": gp}))
    assert drainer.fences == ["n-w-1"]
    labels = {"cluster": "demo", "group": "cpu", "outcome": "fenced"}
    assert registry.get_sample_value(VICTIM_VERDICTS, labels) == 1.0
