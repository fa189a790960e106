"""The demo's simulated Kubernetes: the pod store and the ReplicaSet's choice of pods to delete."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fake_clock import FakeClock

from keda_ray_scaler.agent.pod import DELETION_COST, PodInfo
from keda_ray_scaler.agent.victims.marks import VictimSettings, set_cost
from keda_ray_scaler.demo.controller import Deletion, DeploymentController
from keda_ray_scaler.demo.pods import DemoPods
from keda_ray_scaler.demo.raylets import RayProcesses


class StepClock(FakeClock):
    """Fake time at 1000 s that only the test moves; sleeping only yields."""

    def __init__(self) -> None:
        super().__init__(1000.0, advance_on_sleep=False, yield_on_sleep=True)


def pod(name: str, cost: int | None = None) -> PodInfo:
    """A running, ready pod of group cpu, optionally with a deletion cost."""
    annotations = {DELETION_COST: str(cost)} if cost is not None else {}
    return PodInfo(
        name=name,
        uid=f"uid-{name}",
        group="cpu",
        node_name="demo-node",
        ready_since_s=900.0,
        created_s=900.0,
        owner="ReplicaSet/ray-demo-cpu",
        annotations=annotations,
    )


async def test_update_writes_the_agents_mark_and_bumps_the_resource_version() -> None:
    """The victim controller's decision lands on the pod; None deletes; a gone pod is None."""
    pods = DemoPods()
    pods.add(pod("a"))
    before = pods.get_cached("a")
    assert before is not None
    written = await pods.update("a", set_cost(-5, VictimSettings()))
    assert written is not None
    assert dict(written.annotations) == {
        DELETION_COST: "-5",
        "ray-scaler.keda.sh/deletion-cost": "-5",
    }
    assert int(written.resource_version) == int(before.resource_version) + 1
    cleared = await pods.update("a", lambda p: {DELETION_COST: None})
    assert cleared is not None
    assert dict(cleared.annotations) == {"ray-scaler.keda.sh/deletion-cost": "-5"}
    assert await pods.update("gone", lambda p: {DELETION_COST: "1"}) is None


async def test_wait_until_wakes_on_a_change() -> None:
    """A waiter sees a pod added after it started waiting."""
    pods = DemoPods()
    waiting = asyncio.create_task(pods.wait_until(lambda: pods.get_cached("b") is not None, 5.0))
    await asyncio.sleep(0)
    pods.add(pod("b"))
    assert await waiting is True
    assert await pods.wait_until(lambda: False, 0.01) is False


async def test_scale_down_deletes_the_lowest_deletion_cost_first(tmp_path: Path) -> None:
    """Of four pods, scaling to two removes the two with the lowest cost, as a ReplicaSet does."""
    pods = DemoPods()
    for name, cost in (("a", 10), ("b", -(2**31)), ("c", None), ("d", -1)):
        pods.add(pod(name, cost))
    ray = RayProcesses(Path("/nonexistent/ray"), tmp_path, {})
    controller = DeploymentController("ray-demo-cpu", "cpu", 10, pods, ray, StepClock())
    controller.replicas = 4
    created, deleted = await controller.scale(2)
    assert created == []
    assert deleted == [Deletion("b", -(2**31), 1000.0), Deletion("d", -1, 1000.0)]
    assert controller.current() == ["a", "c"]


def test_the_slow_start_hook_is_named_by_a_path_a_ray_worker_can_import() -> None:
    """Run as ``python -m``, the workload's ``__name__`` is ``__main__``: the hook must be named
    by its module path (every task failed with ``AttributeError`` when it was not)."""
    import importlib

    from keda_ray_scaler.demo import workload

    module, _, name = workload.SLOW_START_HOOK.rpartition(".")
    assert getattr(importlib.import_module(module), name) is workload.slow_start


async def test_the_demo_agent_serves_healthz_beside_metrics(tmp_path: Path) -> None:
    """The demo's agent answers /healthz as the CLI agent does: 200 ``starting`` before any
    poll, 503 ``stale`` once no poll has succeeded for 30 s; /metrics on the same port."""
    import urllib.request

    from keda_ray_scaler.demo.demo_agent import DemoAgent
    from keda_ray_scaler.demo.demo_settings import DemoSettings

    settings = DemoSettings(workdir=tmp_path, ray_bin=tmp_path, python=tmp_path, base_env={})
    clock = StepClock()
    # No Ray at this address, and none needed: the GCS client is made at the first poll.
    agent = DemoAgent(settings.cluster_spec(), "127.0.0.1:1", {}, DemoPods(), clock, 1.0)
    agent.serve()
    try:
        status, body = await agent.healthz()
        assert (status, body.split(":")[0]) == (200, "starting")
        clock.t += 31.0
        status, body = await agent.healthz()
        assert (status, body.split(":")[0]) == (503, "stale")
        assert agent.health_url.rsplit("/", 1)[0] == agent.metrics_url.rsplit("/", 1)[0]

        def metrics() -> bytes:
            with urllib.request.urlopen(agent.metrics_url, timeout=5) as answer:
                return bytes(answer.read())

        assert b"ray_scaler_" in await asyncio.to_thread(metrics)
    finally:
        await agent.stop()


class FakeRaylets:
    """The part of RayProcesses the controller uses: workers by pod, starts and stops recorded."""

    def __init__(self) -> None:
        self.workers: dict[str, object] = {}
        self.stopped: list[str] = []

    def stop_worker(self, pod: str) -> None:
        """Forget the worker."""
        self.workers.pop(pod, None)
        self.stopped.append(pod)

    def sockets(self) -> tuple[int, int]:
        """Never changes: the start loop ends when the process is not alive."""
        return (0, 0)

    def start_worker(self, pod: str, group: str, num_cpus: int) -> object:
        """A process that is not alive."""
        self.workers[pod] = proc = type("Dead", (), {"alive": lambda self: False})()
        return proc


async def test_a_pod_the_agent_deletes_is_stopped_and_replaced_as_a_replicaset_would() -> None:
    """The agent's delete (uid as precondition) removes the pod; the controller stops its
    raylet and makes a new pod, replicas unchanged; another uid is not deleted."""
    pods = DemoPods()
    ray = FakeRaylets()
    controller = DeploymentController("ray-demo-cpu", "cpu", 10, pods, ray, StepClock())  # type: ignore[arg-type]
    first = "ray-demo-cpu-00001"
    assert (await controller.scale(2))[0] == [first, "ray-demo-cpu-00002"]
    for _ in range(100):  # yield until the "kubelet" task started both
        if len(ray.workers) == 2:
            break
        await asyncio.sleep(0)
    assert sorted(ray.workers) == [first, "ray-demo-cpu-00002"]
    assert await pods.delete(first, "uid-other") is False
    assert await controller.replace_deleted() == ([], [])
    assert await pods.delete(first, "ray-demo-cpu-uid-00001") is True
    assert await controller.replace_deleted() == ([first], ["ray-demo-cpu-00003"])
    await controller.aclose()
    assert ray.stopped == [first] and controller.replicas == 2
    assert controller.current() == ["ray-demo-cpu-00002", "ray-demo-cpu-00003"]
