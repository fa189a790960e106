"""KubeRay mode: only the RayCluster's own pods are its workers, so a pod labelled for a group by
somebody else never stalls the applier.

Pods, the RayCluster and its RayWorkerGroup live in the API emulator
(tests/harness/kuberay_emulator.py); the pod cache lists and watches them and the applier reads
and patches through real ``kubernetes`` clients.

Before the owner check (the first test on the code of 95c4713): the bare pod counted as the
group's third pod, so the round's verdict was ``wait_operator`` "3 pods above replicas 2", the
group stayed at 2 whatever the HPA asked, round after round, and the RayWorkerGroup's
``status.replicas`` said 3.
"""

from __future__ import annotations

from collections.abc import Callable

from kube_emulator import NS, PODS, api, registry, running, until, watching
from kuberay_emulator import (
    RAYCLUSTERS,
    RAYWORKERGROUPS,
    KubeRayEmulator,
    applier_on,
    cache,
    emulator,
    kuberay_pod,
    raycluster,
    rayworkergroup,
)
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler.agent.kube.object_watch import WatchSettings
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec
from keda_ray_scaler.agent.kuberay.raycluster_watch import RayClusterWatch
from keda_ray_scaler.agent.metric_names import KUBE_PODS_REFUSED

__all__ = ["api", "cache", "emulator", "registry", "running"]  # fixtures used by name


def refused(registry: CollectorRegistry, reason: str) -> float | None:
    """The pods refused for ``reason``."""
    return registry.get_sample_value(KUBE_PODS_REFUSED, {"cluster": "demo", "reason": reason})


async def test_a_pod_labelled_for_the_group_by_somebody_else_never_stalls_the_applier(
    emulator: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """Two workers of the RayCluster and a bare pod with the group's labels; the HPA asks 3:
    the group goes to 3, its status counts the two workers, the bare pod is counted once."""
    emulator.put(RAYCLUSTERS, raycluster(2))
    emulator.put(RAYWORKERGROUPS, rayworkergroup("ray-demo-cpu", "cpu", 3))
    kuberay_pod(emulator, "demo-cpu-worker-a")
    kuberay_pod(emulator, "demo-cpu-worker-b")
    emulator.put_pod("impostor", owner="")
    running()
    await until(watching(emulator))
    (verdict,) = await applier_on(emulator, cache, registry).apply()
    assert (verdict.action, verdict.replicas) == ("scale_up", 3)
    assert emulator.group()["replicas"] == 3
    assert emulator.stored(RAYWORKERGROUPS, "ray-demo-cpu")["status"]["replicas"] == 2
    assert [p.name for p in cache.pods()] == ["demo-cpu-worker-a", "demo-cpu-worker-b"]
    assert refused(registry, "no_controller") == 1.0


async def test_a_pod_of_another_raycluster_or_a_replicaset_is_no_worker(
    emulator: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """Labelled for demo's cpu group: one controlled by RayCluster other, one by a ReplicaSet;
    both left out, each counted by its reason."""
    kuberay_pod(emulator, "demo-cpu-worker-a")
    emulator.put_pod("other-cpu-worker-a", owner="other", owner_kind="RayCluster")
    emulator.put_pod("web-7d9f-abcde", owner="web-7d9f")
    running()
    await until(watching(emulator))
    assert [p.name for p in cache.pods()] == ["demo-cpu-worker-a"]
    assert (refused(registry, "wrong_name"), refused(registry, "wrong_kind")) == (1.0, 1.0)


async def test_once_the_rayclusters_uid_is_known_a_pod_naming_another_uid_is_left_out(
    emulator: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """A pod whose controller names RayCluster demo with another uid (a RayCluster deleted and
    made again, or a forged reference) is a worker only while the uid is unknown; the RayCluster
    watch tells the cache the uid, and then the pod is left out, counted and logged once."""
    kuberay_pod(emulator, "demo-cpu-worker-a")
    emulator.put_pod("stale", owner="demo", owner_kind="RayCluster")
    stale_ref = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "demo"}
    emulator.objects[PODS, NS, "stale"].patch(
        {"metadata": {"ownerReferences": [{**stale_ref, "uid": "uid-old", "controller": True}]}}
    )
    running()
    await until(watching(emulator))
    assert [p.name for p in cache.pods()] == ["demo-cpu-worker-a", "stale"]
    watch = RayClusterWatch(
        None,  # type: ignore[arg-type]  # fed by hand: no call is made
        WatchSettings(namespace=NS, name="demo"),
        cluster_spec(raycluster(1)),
        registry,
        on_uid=cache.expect_owner_uid,
    )
    with capture_logs() as logs:
        watch.listed([raycluster(1)])
        watch.changed("MODIFIED", raycluster(1))
    assert [p.name for p in cache.pods()] == ["demo-cpu-worker-a"]
    assert refused(registry, "wrong_uid") == 1.0
    assert [e["pod"] for e in logs if e["event"] == "pod refused as a worker"] == ["stale"]
