"""Whose pod is it: a pod the worker selector matches is the cluster's worker only when its
controller is the workload the mode expects (keda_ray_scaler/agent/kube/pod_owner.py).

The pod cache runs against the API emulator (tests/harness/kube_emulator.py) in Deployment mode,
its default. Before the owner check (the first test on the code of 95c4713): the bare pod was
read as a pod of the group, so the ReplicaSet check refused both victims as ``not_confirmed``,
"pods of more than one owner ['', 'ReplicaSet/ray-cpu-7d9f'] (rollout in progress)", at every
step for as long as that pod lived: no scale-down.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fake_clock import FakeClock
from kube_emulator import (
    NS,
    VersionedEmulator,
    api,
    cache,
    emulator,
    make_pod,
    registry,
    running,
    until,
    watching,
)
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs
from victim_fakes import (
    CLUSTER,
    FakeDrainer,
    FakeRay,
    clock,
    drainer,
    outcomes,
    plan,
    put_three,
    ray,
)

from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.kube.pod_owner import (
    DEPLOYMENT_OWNER,
    OwnerRefusal,
    PodController,
    controller_of,
    raycluster_owner,
    refusal,
)
from keda_ray_scaler.agent.metric_names import KUBE_PODS_REFUSED
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.agent.victims.marks import VictimSettings

__all__ = ["api", "cache", "clock", "drainer", "emulator", "ray", "registry", "running"]

REFUSED = "pod refused as a worker"


async def test_a_bare_pod_labelled_for_the_group_never_stalls_the_scale_down(
    emulator: VersionedEmulator,
    cache: PodCache,
    running: Callable[[], object],
    ray: FakeRay,
    drainer: FakeDrainer,
    clock: FakeClock,
    registry: CollectorRegistry,
) -> None:
    """w-1..w-3 of the Deployment's ReplicaSet and a bare pod with the group's labels: idle w-1
    and w-2 are marked, confirmed and drained."""
    put_three(emulator)
    emulator.put_pod("impostor", owner="")
    running()
    await until(watching(emulator))
    controller = VictimController(CLUSTER, cache, ray, drainer, clock, registry, VictimSettings())
    verdicts = await controller.step(plan("w-1", "w-2"))
    assert outcomes(verdicts) == [("w-1", "victim"), ("w-2", "victim")]


async def test_each_pod_refused_is_counted_and_logged_once_however_often_it_changes(
    emulator: VersionedEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """A bare pod listed, then changed twice through the watch, then deleted and made again
    (a new uid): two counts, two log lines, never in the cache."""
    emulator.put_pod("w-1")
    emulator.put_pod("impostor", owner="")
    with capture_logs() as logs:
        running()
        await until(watching(emulator))
        for value in ("1", "2"):
            body = {"metadata": {"annotations": {"a": value}}}
            await emulator.patch(f"/api/v1/namespaces/{NS}/pods/impostor", json=body)
        await emulator.delete(f"/api/v1/namespaces/{NS}/pods/impostor")
        again = make_pod("impostor", owner="")
        again["metadata"]["uid"] = "uid-impostor-2"
        await emulator.post(f"/api/v1/namespaces/{NS}/pods", json=again)
        await until(lambda: len([e for e in logs if e["event"] == REFUSED]) == 2)
    assert [p.name for p in cache.pods()] == ["w-1"]
    assert [(e["uid"], e["reason"]) for e in logs if e["event"] == REFUSED] == [
        ("uid-impostor", "no_controller"),
        ("uid-impostor-2", "no_controller"),
    ]
    sample = {"cluster": "demo", "reason": "no_controller"}
    assert registry.get_sample_value(KUBE_PODS_REFUSED, sample) == 2.0


def controller(kind: str, api_version: str, name: str, **kw: str) -> PodController:
    """A controlling reference (uid ``uid-<name>``)."""
    return PodController(api_version, kind, name, f"uid-{name}", **kw)


@pytest.mark.parametrize(
    ("owner", "expected"),
    [
        (controller("ReplicaSet", "apps/v1", "ray-cpu-7d9f", template_hash="7d9f"), None),
        (None, OwnerRefusal.NO_CONTROLLER),
        (controller("Job", "batch/v1", "ray-cpu-7d9f"), OwnerRefusal.WRONG_KIND),
        (
            controller("ReplicaSet", "example.com/v1", "ray-cpu-7d9f", template_hash="7d9f"),
            OwnerRefusal.WRONG_KIND,
        ),
        (controller("ReplicaSet", "apps/v1", "handmade"), OwnerRefusal.WRONG_NAME),
        (
            controller("ReplicaSet", "apps/v1", "ray-cpu-7d9f", template_hash="0000"),
            OwnerRefusal.WRONG_NAME,
        ),
    ],
    ids=["deployments", "bare", "job", "other-group", "no-hash", "other-hash"],
)
def test_deployment_mode_takes_a_deployments_replicaset_only(
    owner: PodController | None, expected: OwnerRefusal | None
) -> None:
    """A ReplicaSet of apps named ``<deployment>-<pod-template-hash>`` of the pod's label."""
    assert refusal(owner, DEPLOYMENT_OWNER) == expected


@pytest.mark.parametrize(
    ("owner", "uid", "expected"),
    [
        (controller("RayCluster", "ray.io/v1", "demo"), "", None),
        (controller("RayCluster", "ray.io/v1", "demo"), "uid-demo", None),
        (controller("RayCluster", "ray.io/v1", "demo"), "uid-new", OwnerRefusal.WRONG_UID),
        (controller("RayCluster", "ray.io/v1", "other"), "", OwnerRefusal.WRONG_NAME),
        (controller("RayCluster", "fake.io/v1", "demo"), "", OwnerRefusal.WRONG_KIND),
        (
            controller("ReplicaSet", "apps/v1", "demo-7d9f", template_hash="7d9f"),
            "",
            OwnerRefusal.WRONG_KIND,
        ),
    ],
    ids=["uid-unknown", "uid-known", "other-uid", "other-cluster", "other-group", "replicaset"],
)
def test_kuberay_mode_takes_its_rayclusters_pods_only(
    owner: PodController, uid: str, expected: OwnerRefusal | None
) -> None:
    """RayCluster ``demo`` of ray.io, of its uid once known."""
    assert refusal(owner, raycluster_owner("demo", uid)) == expected


def test_only_the_controlling_reference_counts() -> None:
    """An owner without ``controller: true`` is not the pod's controller."""
    raw = make_pod("w-1", owner="")
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "demo", "uid": "u"},
        {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "v", "controller": False},
    ]
    assert controller_of(raw) is None
    assert controller_of(make_pod("w-1")) == PodController(
        "apps/v1", "ReplicaSet", "ray-cpu-7d9f", "uid-ray-cpu-7d9f", "7d9f"
    )
