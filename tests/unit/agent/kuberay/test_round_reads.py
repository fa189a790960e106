"""KubeRay mode: the applier's round reads the RayCluster, its RayWorkerGroups and the
ScaledObjects from their watches, by GET only while a watch holds nothing; a stale watched
RayCluster costs a refused patch and a fresh GET, never a wrong write; an unchanged world writes
a RayWorkerGroup's status once although the watched object lags our write.

The objects live in the API emulator (tests/harness/kuberay_emulator.py); the applier and the
watches talk to it through real ``kubernetes`` clients, and the emulator's request log counts
the GETs. Before the watches (the code of c6ee642) every round made three: the RayCluster, the
RayWorkerGroups and the ScaledObjects.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import kmock
import pytest
from kube_emulator import NS, api, registry, running, until
from kuberay_emulator import (
    RAYCLUSTERS,
    RAYWORKERGROUPS,
    SCALEDOBJECTS,
    KubeRayEmulator,
    applier_on,
    cache,
    emulator,
    kuberay_pod,
    raycluster,
    rayworkergroup,
)
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler.agent.kube.object_watch import WatchSettings
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.kuberay.kuberay_api import ScaledObjectRefusals
from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec
from keda_ray_scaler.agent.kuberay.raycluster_watch import RayClusterWatch
from keda_ray_scaler.agent.kuberay.round_reads import Watches
from keda_ray_scaler.agent.kuberay.rwg_watch import replicas_watch
from keda_ray_scaler.agent.kuberay.scaledobject import ScaledObject
from keda_ray_scaler.agent.kuberay.scaledobject_watch import (
    ScaledObjectWatch,
    scaled_object_watch,
)
from keda_ray_scaler.agent.metric_names import KUBERAY_CONFLICTS

__all__ = ["api", "cache", "emulator", "registry", "running"]  # fixtures used by name

READS = (kmock.action.FETCH, kmock.action.LIST)


def scaled_object(name: str, target: str) -> dict[str, Any]:
    """A ScaledObject on RayWorkerGroup ``target`` with the group's bounds (0 to 50)."""
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "scaleTargetRef": {"kind": "RayWorkerGroup", "name": target},
            "minReplicaCount": 0,
            "maxReplicaCount": 50,
        },
    }


def gets(emulator: KubeRayEmulator) -> list[tuple[str, str]]:
    """The GETs and lists of the RayCluster, RayWorkerGroups and ScaledObjects so far."""
    kinds = {RAYCLUSTERS: "rayclusters", RAYWORKERGROUPS: "rwgs", SCALEDOBJECTS: "scaledobjects"}
    return [
        (kinds[r.resource], r.action.value)
        for r in emulator
        if r.resource in kinds and r.action in READS
    ]


def status_writes(emulator: KubeRayEmulator) -> int:
    """The RayWorkerGroup status patches so far."""
    return len(
        [r for r in emulator if r.resource == RAYWORKERGROUPS and r.action == kmock.action.UPDATE]
    )


class Held:
    """A watch holding ``value`` (None: nothing yet); what our patches handed it."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.written: list[Mapping[str, Any]] = []

    def current(self) -> Any:
        """What it holds."""
        return self.value

    def wrote(self, obj: Mapping[str, Any]) -> None:
        """Keep what our patch returned."""
        self.written.append(obj)


@pytest.fixture
def world(emulator: KubeRayEmulator) -> KubeRayEmulator:
    """RayCluster demo's cpu group at 2 with two pods; its RayWorkerGroup asks 3; one
    ScaledObject on it."""
    emulator.put(RAYCLUSTERS, raycluster(2))
    emulator.put(RAYWORKERGROUPS, rayworkergroup("ray-demo-cpu", "cpu", 3))
    emulator.put(SCALEDOBJECTS, scaled_object("ray-demo-cpu", "ray-demo-cpu"))
    kuberay_pod(emulator, "demo-cpu-worker-a")
    kuberay_pod(emulator, "demo-cpu-worker-b")
    return emulator


@pytest.fixture
async def watches(world: KubeRayEmulator, registry: CollectorRegistry) -> AsyncIterator[Watches]:
    """The three watches as the CLI builds them, running, each holding its objects."""
    configuration = k8s.Configuration(host=str(world.url).rstrip("/"))
    custom = k8s.CustomObjectsApi(k8s.ApiClient(configuration))
    settings = WatchSettings(NS, "demo", retry_max_s=0.01)
    rc = RayClusterWatch(custom, settings, cluster_spec(raycluster(2)), registry)
    rwg_watch, rwgs = replicas_watch(custom, settings)
    refusals = ScaledObjectRefusals(CollectorRegistry(), cluster="demo")
    so_watch, scaled = scaled_object_watch(custom, settings, refusals)
    runs = [rc, rwg_watch, so_watch]
    tasks = [asyncio.create_task(w.run()) for w in runs]
    held = Watches(rc, rwgs, scaled)
    try:
        await until(lambda: None not in (rc.current(), rwgs.current(), scaled.current()))
        yield held
    finally:
        for w in runs:
            w.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_round_with_synced_watches_makes_no_get(
    world: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
    watches: Watches,
) -> None:
    """Two rounds read everything from the watches: the group goes to 3 and no GET is made
    (before: three each round)."""
    running()
    await until(lambda: cache.synced)
    await until(lambda: len([r for r in world if r.action == kmock.action.WATCH]) >= 4)
    before = len(gets(world))
    subject = applier_on(world, cache, registry, watches)
    for _ in range(2):
        (verdict,) = await subject.apply()
        assert verdict.group == "cpu"
    assert world.group()["replicas"] == 3
    assert gets(world)[before:] == []


async def test_a_watch_not_listed_or_failed_is_read_by_get_logged_once(
    world: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """Watches holding nothing (not yet listed, or failed): each round GETs all three; the
    fallback is logged at info once per read, then at debug."""
    running()
    await until(lambda: cache.synced)
    subject = applier_on(world, cache, registry, Watches(Held(None), Held(None), Held(None)))
    with capture_logs() as logs:
        for _ in range(2):
            (verdict,) = await subject.apply()
            assert verdict.group == "cpu"
    expected = [("rayclusters", "FETCH"), ("rwgs", "LIST"), ("scaledobjects", "LIST")]
    assert gets(world) == expected * 2
    fallbacks = [(e["log_level"], e["read"]) for e in logs if e["event"].startswith("read by GET")]
    assert fallbacks == [
        ("info", "RayCluster"),
        ("info", "RayWorkerGroups"),
        ("info", "ScaledObjects"),
        ("debug", "RayCluster"),
        ("debug", "RayWorkerGroups"),
        ("debug", "ScaledObjects"),
    ]


async def test_only_the_read_whose_watch_failed_is_a_get(
    world: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
    watches: Watches,
) -> None:
    """A Role without ``watch`` on scaledobjects: the ScaledObjects' watch fails, warns once
    over two failures; each round lists the ScaledObjects, and reads the rest from the
    watches."""
    running()
    await until(lambda: cache.synced)
    scaled = watches.scaled_objects
    assert isinstance(scaled, ScaledObjectWatch)
    with capture_logs() as logs:
        for _ in range(2):
            scaled.unreadable("watch failed", "(403) Forbidden")
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == [
        "ScaledObject watch failed, read by GET"
    ]
    before = len(gets(world))
    subject = applier_on(world, cache, registry, watches)
    for _ in range(2):
        await subject.apply()
    assert gets(world)[before:] == [("scaledobjects", "LIST")] * 2


async def test_a_stale_watched_raycluster_is_refused_then_read_fresh_and_patched(
    world: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """The watch still holds the RayCluster at its old resourceVersion (someone wrote since):
    the patch is refused (409), the RayCluster read by GET, and the patch carries the new
    resourceVersion; the patched object goes back to the watch."""
    running()
    await until(lambda: cache.synced)
    stale = copy.deepcopy(world.stored(RAYCLUSTERS, "demo"))
    world.put(RAYCLUSTERS, raycluster(2))  # a newer version the watch has not brought
    current = world.stored(RAYCLUSTERS, "demo")["metadata"]["resourceVersion"]
    rc = Held(stale)
    rwgs = [rayworkergroup("ray-demo-cpu", "cpu", 3)]
    subject = applier_on(world, cache, registry, Watches(rc, Held(rwgs), Held([])))
    (verdict,) = await subject.apply()
    assert (verdict.action.value, verdict.replicas) == ("scale_up", 3)
    patches = [
        r.data for r in world if r.resource == RAYCLUSTERS and r.action == kmock.action.UPDATE
    ]
    versions = [
        op["value"] for p in patches for op in p if op["path"] == "/metadata/resourceVersion"
    ]
    assert versions == [stale["metadata"]["resourceVersion"], current]
    assert gets(world) == [("rayclusters", "FETCH")]
    assert registry.get_sample_value(KUBERAY_CONFLICTS, {"cluster": "demo"}) == 1.0
    assert world.group()["replicas"] == 3
    assert [w["spec"]["workerGroupSpecs"][0]["replicas"] for w in rc.written] == [3]


async def test_an_unchanged_world_writes_the_status_once_though_the_watch_lags(
    world: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """The watched RayWorkerGroup never shows our status write: two rounds of the same world
    write its status once (before: every round, a new lastTransitionTime each time)."""
    running()
    await until(lambda: cache.synced)
    rc = world.stored(RAYCLUSTERS, "demo")
    rwgs = [rayworkergroup("ray-demo-cpu", "cpu", 2)]  # as the group: nothing to patch
    scaled: list[ScaledObject] = []
    subject = applier_on(world, cache, registry, Watches(Held(rc), Held(rwgs), Held(scaled)))
    for _ in range(2):
        (verdict,) = await subject.apply()
        assert verdict.action.value == "none"
    assert status_writes(world) == 1
    assert gets(world) == []
