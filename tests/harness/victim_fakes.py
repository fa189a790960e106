"""Fakes for the victim protocol's tests: Ray's view and its drainer, the plan, three synced pods.

:class:`FakeRay` is a RayView whose nodes the test sets, :class:`FakeDrainer` a Drainer that
accepts, rejects or blocks; the fixtures ``ray``, ``drainer``, ``clock`` and ``synced`` (three pods
in the API emulator of :mod:`kube_emulator`, the cache listing and watching them) work in a test
module that imports them by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping

import pytest
from fake_clock import FakeClock
from kube_emulator import NS, PODS, VersionedEmulator, until, watching

from keda_ray_scaler.agent.interfaces import DrainResult
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.victims.verdicts import Verdict
from keda_ray_scaler.decisions import GroupPlan, Plan
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.model import ClusterSpec, NodeStatus, Resources, WorkerGroup, WorkerNode

CLUSTER = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), idle_timeout_s=60),))
POD = Resources.of(CPU=10)


class FakeRay:
    """A RayView whose nodes the test sets; counts reads."""

    def __init__(self) -> None:
        self.by_pod: dict[str, WorkerNode] = {}
        self.reads = 0
        self.down = False
        self.two_nodes: frozenset[str] = frozenset()

    def idle(self, pod: str, idle_s: float = 120.0) -> None:
        """An idle running node for ``pod`` (node id ``n-<pod>``)."""
        self.by_pod[pod] = WorkerNode(pod, "cpu", POD, POD, idle_s, NodeStatus.RUNNING, f"n-{pod}")

    def busy(self, pod: str) -> None:
        """A node for ``pod`` that uses 5 of its 10 CPUs."""
        self.by_pod[pod] = WorkerNode(
            pod, "cpu", POD, Resources.of(CPU=5), 0.0, NodeStatus.RUNNING, f"n-{pod}"
        )

    async def nodes(self) -> tuple[WorkerNode, ...]:
        """The current nodes, or RayError when down."""
        self.reads += 1
        if self.down:
            raise RayError("GCS unreachable")
        return tuple(self.by_pod[p] for p in sorted(self.by_pod))

    def contested(self) -> frozenset[str]:
        """Pods the test says two live nodes name (none unless set)."""
        return self.two_nodes


class FakeDrainer:
    """Accepts drains unless told to reject a node; can block to simulate a crash mid-drain."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.reject: dict[str, str] = {}
        self.block = False

    async def drain(self, node_id: str, message: str, deadline_ms: int) -> DrainResult:
        """Record the call and answer."""
        self.calls.append((node_id, message, deadline_ms))
        if self.block:
            await asyncio.Event().wait()
        if node_id in self.reject:
            return DrainResult(False, self.reject[node_id])
        return DrainResult(True)


def plan(*removable: str) -> Plan:
    """A plan removing ``removable`` from group cpu."""
    gp = GroupPlan(
        "cpu", target=1, desired=1, floor=1, current=3, busy=1, new=0, removable=removable
    )
    return Plan(groups={"cpu": gp})


def annotations(emulator: VersionedEmulator, pod: str) -> dict[str, str]:
    """The pod's annotations as the API server stores them."""
    return dict(emulator.objects[PODS, NS, pod].get("metadata", {}).get("annotations") or {})


def outcomes(verdicts: tuple[Verdict, ...]) -> list[tuple[str, str]]:
    """(pod, outcome) pairs."""
    return [(v.pod, v.outcome.value) for v in verdicts]


@pytest.fixture
def ray() -> FakeRay:
    """w-1 and w-2 idle for 120 s, w-3 busy."""
    fake = FakeRay()
    fake.idle("w-1")
    fake.idle("w-2")
    fake.busy("w-3")
    return fake


@pytest.fixture
def drainer() -> FakeDrainer:
    """A drainer that accepts."""
    return FakeDrainer()


@pytest.fixture
def clock() -> FakeClock:
    """Fake unix time; sleeping records the delay, advances ``now`` at once and yields once."""
    return FakeClock(1_795_341_700.0, yield_on_sleep=True)


def put_three(emulator: VersionedEmulator, **costs: Mapping[str, str]) -> None:
    """Pods w-1, w-2, w-3 of group cpu on distinct nodes."""
    for i in (1, 2, 3):
        name = f"w-{i}"
        emulator.put_pod(name, node=f"node-{i}", annotations=costs.get(name.replace("-", "_")))


@pytest.fixture
async def synced(
    emulator: VersionedEmulator, cache: PodCache, running: Callable[[], object]
) -> AsyncIterator[None]:
    """Three pods in the API server, the cache listing and watching them."""
    put_three(emulator)
    running()
    await until(watching(emulator))
    assert cache.synced
    yield
