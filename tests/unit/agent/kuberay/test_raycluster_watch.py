"""The RayCluster read continuously: the watch against an API emulator, and the loop planning
with the worker groups as they are now.

The watch runs against kmock's ``KubernetesEmulator`` on 127.0.0.1 through a real ``kubernetes``
ApiClient (as tests/unit/agent/kube/test_kube.py does for the pod cache): list, watch, a 410 on
cue, a failing
list. The loop tests give :class:`~keda_ray_scaler.agent.loop.AgentLoop` a spec view the test
changes between polls (what the watch does), and check what the next poll exports and plans.
(tests/real/control_plane/test_real_kuberay.py shows it on a real control plane with KubeRay's
operator.)
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import kmock
import pytest
import tenacity
from fake_clock import FakeClock
from kuberay_examples import example
from kubernetes import client as k8s
from loop_fakes import FakeReader, FakeVictims, r, ray_state
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.interfaces import SpecView
from keda_ray_scaler.agent.joining.join_tracker import JoinSettings, JoinTracker
from keda_ray_scaler.agent.joining.joins import PodEntry
from keda_ray_scaler.agent.kube.object_watch import WatchSettings
from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec
from keda_ray_scaler.agent.kuberay.raycluster_watch import RayClusterWatch, group_changes
from keda_ray_scaler.agent.loop import AgentLoop, LoopSettings
from keda_ray_scaler.agent.loop_parts import NO_VICTIMS, PlannedVictims
from keda_ray_scaler.agent.metric_names import BACKOFF_SECONDS, SPEC_CHANGES, SPEC_FRESH
from keda_ray_scaler.model import Bundle, ClusterSpec, Resources, WorkerGroup
from keda_ray_scaler.planner import plan

NS = "ray"
RCS = kmock.resource("ray.io/v1/rayclusters")
PATH = f"/apis/ray.io/v1/namespaces/{NS}/rayclusters"


def raycluster(**cpu: Any) -> dict[str, Any]:
    """The example RayCluster ``demo``; ``cpu`` fields set on its cpu group."""
    rc = example()
    rc["metadata"] = {"name": "demo", "namespace": NS}
    rc["spec"]["workerGroupSpecs"][0].update(cpu)
    return rc


@pytest.fixture
async def emulator() -> AsyncIterator[kmock.KubernetesEmulator]:
    """The emulator serving RayClusters on 127.0.0.1 (a random port)."""
    async with kmock.KubernetesEmulator() as handler, kmock.Server(handler):
        handler.resources["ray.io/v1/rayclusters"] = kmock.ResourceInfo(
            kind="RayCluster", namespaced=True
        )
        yield handler


@pytest.fixture
def registry() -> CollectorRegistry:
    """A fresh metrics registry."""
    return CollectorRegistry()


@pytest.fixture
def watch(emulator: kmock.KubernetesEmulator, registry: CollectorRegistry) -> RayClusterWatch:
    """A watch of ``demo`` seeded with the example's spec, not waiting between retries."""
    configuration = k8s.Configuration(host=str(emulator.url).rstrip("/"))
    api = k8s.CustomObjectsApi(k8s.ApiClient(configuration))
    settings = WatchSettings(NS, "demo", retry_attempts=2, retry_max_s=0.01)
    initial = cluster_spec(raycluster())
    return RayClusterWatch(api, settings, initial, registry, wait=tenacity.wait_none())


@pytest.fixture
async def running(watch: RayClusterWatch) -> AsyncIterator[Callable[[], None]]:
    """Start the watch's list+watch loop on demand; stopped by the fixture."""
    tasks: list[asyncio.Task[None]] = []

    def start() -> None:
        tasks.append(asyncio.create_task(watch.run()))

    yield start
    watch.stop()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def requests_of(emulator: kmock.KubernetesEmulator, action: kmock.action) -> list[kmock.Request]:
    """The requests of one kind, in order."""
    return [req for req in emulator if req.action == action]


async def until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait for what the watch thread does (fails after ``timeout_s``)."""
    async with asyncio.timeout(timeout_s):
        while not predicate():  # noqa: ASYNC110  # kmock's request log has no event to await
            await asyncio.sleep(0.01)


def watching(emulator: kmock.KubernetesEmulator, count: int = 1) -> Callable[[], bool]:
    """True once ``count`` watches were opened."""
    return lambda: len(requests_of(emulator, kmock.action.WATCH)) >= count


async def create(emulator: kmock.KubernetesEmulator, rc: dict[str, Any]) -> None:
    """Create the RayCluster through the API (a watch event)."""
    await emulator.post(PATH, json=rc)


async def patch_cpu(emulator: kmock.KubernetesEmulator, **fields: Any) -> None:
    """Change the cpu group as a user would (the whole list: a merge patch replaces lists)."""
    groups = copy.deepcopy(raycluster()["spec"]["workerGroupSpecs"])
    groups[0].update(fields)
    await emulator.patch(f"{PATH}/demo", json={"spec": {"workerGroupSpecs": groups}})


def cpu_group(watch: RayClusterWatch) -> WorkerGroup:
    """The watch's cpu group now."""
    group = watch.spec.group("cpu")
    assert group is not None
    return group


# --- the watch --------------------------------------------------------------------------------
async def test_the_watch_lists_the_one_raycluster_by_name_then_watches_it(
    emulator: kmock.KubernetesEmulator, watch: RayClusterWatch, running: Callable[[], None]
) -> None:
    """One LIST and one WATCH, each with the field selector on the RayCluster's name."""
    await create(emulator, raycluster())
    running()
    await until(watching(emulator))
    for action in (kmock.action.LIST, kmock.action.WATCH):
        (req,) = requests_of(emulator, action)
        assert req.params["fieldSelector"] == "metadata.name=demo"
    assert watch.fresh and watch.spec == cluster_spec(raycluster())


async def test_a_new_max_min_and_idle_timeout_are_taken_logged_and_counted(
    emulator: kmock.KubernetesEmulator,
    watch: RayClusterWatch,
    running: Callable[[], None],
    registry: CollectorRegistry,
) -> None:
    """maxReplicas lowered, minReplicas raised, idleTimeoutSeconds changed: the spec follows,
    one structured line says what changed, the change is counted."""
    await create(emulator, raycluster())
    running()
    await until(watching(emulator))
    before = cpu_group(watch)
    with capture_logs() as logs:
        await patch_cpu(emulator, maxReplicas=3, minReplicas=1, idleTimeoutSeconds=7)
        await until(lambda: cpu_group(watch).max_replicas == 3)
    group = cpu_group(watch)
    assert (group.min_replicas, group.max_replicas, group.idle_timeout_s) == (1, 3, 7.0)
    (line,) = [e for e in logs if e["event"] == "worker groups changed"]
    assert line["changed"] == {
        "cpu": {
            "min_replicas": [before.min_replicas, 1],
            "max_replicas": [before.max_replicas, 3],
            "idle_timeout_s": [before.idle_timeout_s, 7.0],
        }
    }
    assert registry.get_sample_value(SPEC_CHANGES, {"cluster": "demo"}) == 1.0
    assert registry.get_sample_value(SPEC_FRESH, {"cluster": "demo"}) == 1.0


async def test_a_group_added_and_one_removed_are_taken(
    emulator: kmock.KubernetesEmulator, watch: RayClusterWatch, running: Callable[[], None]
) -> None:
    """The group list changes: the spec has exactly the new groups."""
    await create(emulator, raycluster())
    running()
    await until(watching(emulator))
    groups = copy.deepcopy(raycluster()["spec"]["workerGroupSpecs"])
    big = copy.deepcopy(groups[0]) | {"groupName": "big"}
    with capture_logs() as logs:
        await emulator.patch(f"{PATH}/demo", json={"spec": {"workerGroupSpecs": [big]}})
        await until(lambda: watch.spec.group("big") is not None)
    assert [g.name for g in watch.spec.worker_groups] == ["big"]
    (line,) = [e for e in logs if e["event"] == "worker groups changed"]
    assert line["added"] == ["big"]
    assert line["removed"] == sorted(g["groupName"] for g in groups)


async def test_deleted_or_invalid_keeps_the_last_spec_and_is_not_fresh(
    emulator: kmock.KubernetesEmulator,
    watch: RayClusterWatch,
    running: Callable[[], None],
    registry: CollectorRegistry,
) -> None:
    """An invalid edit (max below min) and a deletion: the last good groups stay, not fresh,
    an error line; a valid object again: fresh with its groups."""
    await create(emulator, raycluster())
    running()
    await until(watching(emulator))
    good = watch.spec
    with capture_logs() as logs:
        await patch_cpu(emulator, minReplicas=4, maxReplicas=2)
        await until(lambda: not watch.fresh)
    assert watch.spec == good
    assert registry.get_sample_value(SPEC_FRESH, {"cluster": "demo"}) == 0.0
    (line,) = [e for e in logs if e["event"] == "worker groups not fresh"]
    assert line["log_level"] == "error" and "maxReplicas" in line["error"]
    await patch_cpu(emulator, maxReplicas=6)
    await until(lambda: watch.fresh)
    assert cpu_group(watch).max_replicas == 6
    await emulator.delete(f"{PATH}/demo")
    await until(lambda: not watch.fresh)
    assert cpu_group(watch).max_replicas == 6
    await create(emulator, raycluster(maxReplicas=9))
    await until(lambda: watch.fresh)
    assert cpu_group(watch).max_replicas == 9


async def test_a_410_relists_and_stays_fresh(
    emulator: kmock.KubernetesEmulator, watch: RayClusterWatch, running: Callable[[], None]
) -> None:
    """An expired watch relists and watches again; the spec was never stale for it."""
    gone = {
        "type": "ERROR",
        "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
    }
    emulator[kmock.action.WATCH][:1] << json.dumps(gone).encode() + b"\n"
    await create(emulator, raycluster(maxReplicas=4))
    seen: list[bool] = []
    running()
    while not watching(emulator, 2)():
        seen.append(watch.fresh)
        await asyncio.sleep(0.001)
    assert len(requests_of(emulator, kmock.action.LIST)) == 2
    assert all(seen) and watch.fresh
    assert cpu_group(watch).max_replicas == 4


async def test_an_unreadable_raycluster_is_not_fresh_until_a_list_succeeds(
    emulator: kmock.KubernetesEmulator, watch: RayClusterWatch, running: Callable[[], None]
) -> None:
    """Every list failing (500, then 403): not fresh, the last groups kept; then fresh again."""
    emulator[kmock.action.LIST][:2] << 500
    emulator[kmock.action.LIST][2:3] << 403
    await create(emulator, raycluster(maxReplicas=4))
    good = watch.spec
    with capture_logs() as logs:
        running()
        await until(lambda: not watch.fresh)
        assert watch.spec == good
        await until(lambda: watch.fresh)
    assert cpu_group(watch).max_replicas == 4
    assert [e["reason"] for e in logs if e["event"] == "worker groups not fresh"] == [
        "RayCluster unreadable"
    ]


def test_group_changes_names_resources_and_cluster_fields() -> None:
    """The log line's content: a group's new shape, and the cluster's upscaling speed."""
    old = ClusterSpec("c", (WorkerGroup("g", Resources.of(CPU=4)),))
    new = ClusterSpec("c", (WorkerGroup("g", Resources.of(CPU=8)),), upscaling_speed=1.0)
    assert group_changes(old, new) == {
        "changed": {"g": {"resources": ["{CPU: 4}", "{CPU: 8}"]}},
        "upscaling_speed": [old.upscaling_speed, 1.0],
    }
    assert group_changes(old, old) == {}


# --- the loop plans with the groups as they are now -------------------------------------------
@dataclass
class Specs:
    """A spec view the test changes between polls (what the watch does)."""

    spec: ClusterSpec
    fresh: bool = True


CPU = WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50, idle_timeout_s=60)


def make_loop(
    specs: SpecView, reader: FakeReader, victims: FakeVictims | None = None
) -> tuple[AgentLoop, CollectorRegistry]:
    """A planning loop on ``specs``."""
    registry = CollectorRegistry()
    loop = AgentLoop(
        specs,
        reader,
        SnapshotCollector(registry),
        AgentMetrics(registry, "demo"),
        FakeClock(),
        LoopSettings(),
        victims=PlannedVictims(victims, plan) if victims is not None else NO_VICTIMS,
    )
    return loop, registry


def gauge(registry: CollectorRegistry, name: str, group: str) -> float | None:
    """A group series of cluster demo."""
    return registry.get_sample_value(name, {"cluster": "demo", "group": group})


async def test_a_lowered_max_is_exported_and_planned_at_the_next_poll() -> None:
    """30 pods' worth of demand, max 50 then 5: the next poll exports max 5 and plans 5."""
    specs = Specs(ClusterSpec("demo", (CPU,)))
    demand = Bundle(r(CPU=10), 30)
    victims = FakeVictims({})
    loop, registry = make_loop(specs, FakeReader(ray_state(demand), ray_state(demand)), victims)
    await loop.poll_once()
    assert gauge(registry, schema.GROUP_MAX_REPLICAS, "cpu") == 50.0
    assert victims.plans[-1].groups["cpu"].target == 30
    specs.spec = ClusterSpec("demo", (replace(CPU, min_replicas=2, max_replicas=5),))
    await loop.poll_once()
    assert gauge(registry, schema.GROUP_MAX_REPLICAS, "cpu") == 5.0
    assert gauge(registry, schema.GROUP_MIN_REPLICAS, "cpu") == 2.0
    assert victims.plans[-1].groups["cpu"].target == 5


async def test_new_resources_are_planned_at_the_next_poll() -> None:
    """The group's pods grow from 10 to 20 CPUs: 30 tasks of 10 CPUs need 15 pods, not 30."""
    specs = Specs(ClusterSpec("demo", (CPU,)))
    demand = Bundle(r(CPU=10), 30)
    victims = FakeVictims({})
    loop, _ = make_loop(specs, FakeReader(ray_state(demand), ray_state(demand)), victims)
    await loop.poll_once()
    specs.spec = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=20), max_replicas=50),))
    snap = await loop.poll_once()
    assert snap.input.cluster.worker_groups[0].resources == r(CPU=20)
    assert victims.plans[-1].groups["cpu"].target == 16


async def test_a_removed_group_stops_being_exported_and_an_added_one_is_planned() -> None:
    """cpu replaced by big: no cpu series any more, big's are there and big is planned."""
    specs = Specs(ClusterSpec("demo", (CPU,)))
    demand = Bundle(r(CPU=10), 3)
    victims = FakeVictims({})
    loop, registry = make_loop(specs, FakeReader(ray_state(demand), ray_state(demand)), victims)
    await loop.poll_once()
    big = WorkerGroup("big", Resources.of(CPU=30), max_replicas=4)
    specs.spec = ClusterSpec("demo", (big,))
    snap = await loop.poll_once()
    assert snap.success
    assert gauge(registry, schema.GROUP_MAX_REPLICAS, "cpu") is None
    assert gauge(registry, schema.GROUP_MAX_REPLICAS, "big") == 4.0
    assert victims.plans[-1].groups["big"].target == 1
    assert "cpu" not in victims.plans[-1].groups
    # the cpu pod's Ray node is left as it was read; its group is no longer one to scale
    assert [n.group for n in snap.input.nodes] == ["cpu"]


async def test_not_fresh_groups_skip_the_poll_with_success_zero_and_no_plan() -> None:
    """The RayCluster gone: the last data kept, success 0, nothing planned, one warning."""
    specs = Specs(ClusterSpec("demo", (CPU,)))
    demand = Bundle(r(CPU=10), 3)
    victims = FakeVictims({})
    loop, registry = make_loop(specs, FakeReader(ray_state(demand), ray_state(demand)), victims)
    first = await loop.poll_once()
    specs.fresh = False
    with capture_logs() as logs:
        second = await loop.poll_once()
        third = await loop.poll_once()
    assert (second.success, third.success) == (False, False)
    assert third.input == first.input and third.snapshot_time_s == first.snapshot_time_s
    assert registry.get_sample_value(schema.SNAPSHOT_SUCCESS, {"cluster": "demo"}) == 0.0
    assert len(victims.plans) == 1
    assert [e["event"] for e in logs] == [
        "worker groups not fresh: poll skipped, data marked not fresh"
    ]
    specs.fresh = True
    assert (await loop.poll_once()).success


def test_the_join_tracker_follows_groups_added_and_removed() -> None:
    """A group's back-off series comes with it and goes with it; a pod of a removed group
    is no longer judged."""
    specs = Specs(ClusterSpec("demo", (CPU,)))
    registry = CollectorRegistry()
    tracker = JoinTracker(specs, registry, JoinSettings())
    assert gauge(registry, BACKOFF_SECONDS, "cpu") == 0.0
    specs.spec = ClusterSpec("demo", (WorkerGroup("big", Resources.of(CPU=30)),))
    tracker.observe(1000.0, [PodEntry("cpu-1", "cpu")], set(), set(), {})
    assert gauge(registry, BACKOFF_SECONDS, "cpu") is None
    assert gauge(registry, BACKOFF_SECONDS, "big") == 0.0
    assert tracker.backoff_message("cpu") == ""


def test_the_applier_reads_the_raycluster_as_served_while_it_is_fresh(
    watch: RayClusterWatch,
) -> None:
    """None until listed (the seed is a spec, not the object), the object as served after,
    our own patch's result until the watch brings a version; None while not fresh."""
    assert watch.current() is None
    served = raycluster()
    served["metadata"]["resourceVersion"] = "7"
    watch.listed([served])
    assert watch.current() == served
    patched = copy.deepcopy(served)
    patched["metadata"]["resourceVersion"] = "8"
    watch.wrote(patched)
    assert watch.current() == patched
    watch.unreadable("watch failed", "(500) boom")
    assert watch.current() is None
    watch.listed([served])
    assert watch.current() == served
    watch.changed("DELETED", served)
    assert watch.current() is None
