"""A pod two live Ray nodes name is never a victim (issue 35, finding 4): which node is its own
is unknown, and the other may be an impostor's raylet (``RAY_CLOUD_INSTANCE_ID=<a busy pod>``)
or a restarted raylet's old node. Counted as the verdict ``two_ray_nodes``."""

from __future__ import annotations

from fake_clock import FakeClock
from kube_emulator import (  # the emulator fixtures and helpers
    VersionedEmulator,
    api,
    cache,
    calls,
    emulator,
    registry,
    running,
)
from prometheus_client import CollectorRegistry
from victim_fakes import (  # the fakes, builders and fixtures
    CLUSTER,
    FakeDrainer,
    FakeRay,
    clock,
    drainer,
    outcomes,
    plan,
    ray,
    synced,
)

from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.metric_names import VICTIM_VERDICTS
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.victims.choose import GroupView, choose
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.agent.victims.marks import VictimSettings
from keda_ray_scaler.decisions import GroupPlan
from keda_ray_scaler.model import NodeStatus, Resources, WorkerNode

__all__ = [  # fixtures used by name
    "api",
    "cache",
    "clock",
    "drainer",
    "emulator",
    "ray",
    "registry",
    "running",
    "synced",
]

POD = Resources.of(CPU=10)


def idle(pod: str) -> WorkerNode:
    """An idle node of ``pod`` (as an impostor's raylet is: nothing runs there)."""
    return WorkerNode(pod, "cpu", POD, POD, 120.0, NodeStatus.RUNNING, f"n-{pod}")


def view(removable: tuple[str, ...], over_cap: tuple[str, ...] = ()) -> GroupView:
    """Group cpu, pods w-1 and w-2 idle; w-1 contested."""
    gp = GroupPlan("cpu", 0, 0, 0, 2, 0, 0, removable=removable, over_cap=over_cap)
    pods = {p: PodInfo(p, group="cpu") for p in ("w-1", "w-2")}
    nodes = {p: idle(p) for p in pods}
    return GroupView(gp, pods, nodes, idle_timeout_s=60.0, contested=frozenset({"w-1"}))


def test_a_contested_pod_is_never_chosen_even_above_a_cap() -> None:
    """Idle past the timeout, or above maxReplicas: still not taken; the other pod is."""
    for over_cap in ((), ("w-1", "w-2")):
        c = choose(view(("w-1", "w-2"), over_cap), VictimSettings())
        assert [p.name for p in c.chosen] == ["w-2"]
        assert [(v.pod, v.outcome.value, v.reason) for v in c.verdicts] == [
            ("w-1", "two_ray_nodes", "two live Ray nodes name the pod")
        ]


async def test_the_protocol_drains_and_marks_nothing_of_a_contested_pod(
    emulator: VersionedEmulator,
    synced: None,
    cache: PodCache,
    ray: FakeRay,
    drainer: FakeDrainer,
    clock: FakeClock,
    registry: CollectorRegistry,
) -> None:
    """Before: the impostor's idle node stood for w-1; w-1 was marked, its (impostor's) node
    drained and w-1 published. Now only w-2 goes; w-1 is counted once a step."""
    ray.two_nodes = frozenset({"w-1"})
    controller = VictimController(CLUSTER, cache, ray, drainer, clock, registry)
    verdicts = await controller.step(plan("w-1", "w-2"))
    assert outcomes(verdicts) == [("w-1", "two_ray_nodes"), ("w-2", "victim")]
    assert [node_id for node_id, _, _ in drainer.calls] == ["n-w-2"]
    assert ("UPDATE", "w-1") not in calls(emulator)
    assert controller.victims() == {"w-2": "cpu"}
    labels = {"cluster": "demo", "group": "cpu", "outcome": "two_ray_nodes"}
    assert registry.get_sample_value(VICTIM_VERDICTS, labels) == 1.0
