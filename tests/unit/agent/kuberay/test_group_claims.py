"""KubeRay mode: one RayWorkerGroup holds each RayCluster group; a second claim is refused.

The applier runs against the API emulator (tests/harness/kuberay_emulator.py). Before the claim
check (the first test on the code of 95c4713): in the first round ``evil-cpu``'s HPA (50) raised
the group from 2 to 50 (``scale_up``, "replicas 2 -> 50"); in the second ``ray-demo-cpu`` (2)
waited for victims ("desired 2 < replicas 50, no drained victim to name"), so the later claim
held the group, and ``evil-cpu``'s status said ``Ready`` True.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kube_emulator import NS, api, registry, running, until, watching
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

from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.kuberay.applier import KubeRayApplier
from keda_ray_scaler.agent.kuberay.group_claims import GroupClaims, holders
from keda_ray_scaler.agent.metric_names import KUBERAY_DECISIONS

__all__ = ["api", "cache", "emulator", "registry", "running"]  # fixtures used by name

LATER = "2026-11-22T10:00:00Z"
REFUSED = "RayWorkerGroup refused: its group is claimed by another"


@pytest.fixture
async def applier(
    emulator: KubeRayEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> KubeRayApplier:
    """RayCluster demo's cpu group at 2 with its two pods, the cache synced; the applier on
    them, with no victims."""
    emulator.put(RAYCLUSTERS, raycluster(2))
    kuberay_pod(emulator, "demo-cpu-worker-a")
    kuberay_pod(emulator, "demo-cpu-worker-b")
    running()
    await until(watching(emulator))
    return applier_on(emulator, cache, registry)


def ready(emulator: KubeRayEmulator, name: str) -> dict[str, Any]:
    """The Ready condition of RayWorkerGroup ``name`` as stored."""
    status = emulator.stored(RAYWORKERGROUPS, name)["status"]
    (condition,) = [c for c in status["conditions"] if c["type"] == "Ready"]
    return dict(condition)


async def test_a_later_rayworkergroup_claiming_a_group_is_refused_and_moves_nothing(
    emulator: KubeRayEmulator, applier: KubeRayApplier, registry: CollectorRegistry
) -> None:
    """ray-demo-cpu asks 2, evil-cpu (an hour younger) asks 50 of the same group: over two
    rounds the group stays at 2, evil-cpu is held with a condition naming ray-demo-cpu, counted
    each round and logged once."""
    emulator.put(RAYWORKERGROUPS, rayworkergroup("ray-demo-cpu", "cpu", 2))
    emulator.put(RAYWORKERGROUPS, rayworkergroup("evil-cpu", "cpu", 50, created=LATER))
    with capture_logs() as logs:
        for _ in range(2):
            verdicts = await applier.apply()
            assert [v.action.value for v in verdicts] == ["none", "claimed"]
            assert emulator.group()["replicas"] == 2
    assert verdicts[1].reason == "group cpu is claimed by RayWorkerGroup ray-demo-cpu (the oldest)"
    assert ready(emulator, "evil-cpu") | {"lastTransitionTime": ""} == {
        "type": "Ready",
        "status": "False",
        "reason": "GroupClaimedByAnother",
        "message": verdicts[1].reason,
        "lastTransitionTime": "",
    }
    assert ready(emulator, "ray-demo-cpu")["status"] == "True"
    claimed = {"cluster": "demo", "group": "cpu", "action": "claimed"}
    assert registry.get_sample_value(KUBERAY_DECISIONS, claimed) == 2.0
    refusals = [e for e in logs if e["event"] == REFUSED]
    assert [(e["rayworkergroup"], e["holder"]) for e in refusals] == [("evil-cpu", "ray-demo-cpu")]


async def test_when_the_holder_goes_the_next_oldest_holds_the_group(
    emulator: KubeRayEmulator, applier: KubeRayApplier
) -> None:
    """ray-demo-cpu deleted: evil-cpu's 3 is carried into the group at the next round."""
    emulator.put(RAYWORKERGROUPS, rayworkergroup("ray-demo-cpu", "cpu", 2))
    emulator.put(RAYWORKERGROUPS, rayworkergroup("evil-cpu", "cpu", 3, created=LATER))
    await applier.apply()
    emulator.objects[RAYWORKERGROUPS, NS, "ray-demo-cpu"].delete()
    (verdict,) = await applier.apply()
    assert (verdict.action.value, verdict.replicas) == ("scale_up", 3)
    assert ready(emulator, "evil-cpu")["reason"] == "Reconciled"


def rwg(name: str, group: str, created: str | None) -> dict[str, Any]:
    """A RayWorkerGroup as listed (``created`` None: no creationTimestamp)."""
    obj = rayworkergroup(name, group, 1, created=created or "")
    if created is None:
        del obj["metadata"]["creationTimestamp"]
    return obj


@pytest.mark.parametrize("order", [1, -1], ids=["listed", "reversed"])
def test_the_oldest_claim_holds_then_the_first_by_name_whatever_the_list_order(
    order: int,
) -> None:
    """Age first, the name on a tie, an undated claim last; each group on its own."""
    rwgs = [
        rwg("b-cpu", "cpu", "2026-11-22T09:00:00Z"),
        rwg("a-cpu", "cpu", "2026-11-22T09:00:00Z"),
        rwg("old-cpu", "cpu", "2026-11-22T08:59:59Z"),
        rwg("undated-gpu", "gpu", None),
        rwg("z-gpu", "gpu", LATER),
        rwg("nothing", "", "2026-11-22T08:00:00Z"),
    ][::order]
    assert holders(rwgs) == {
        "old-cpu": "old-cpu",
        "a-cpu": "old-cpu",
        "b-cpu": "old-cpu",
        "z-gpu": "z-gpu",
        "undated-gpu": "z-gpu",
        "nothing": "nothing",
    }


def test_a_refusal_is_logged_again_only_when_its_holder_changes() -> None:
    """Three reads with the same claims log once; a new holder logs again."""
    claims = GroupClaims(cluster="demo")
    first = [rwg("a", "cpu", "2026-11-22T09:00:00Z"), rwg("b", "cpu", LATER)]
    with capture_logs() as logs:
        for _ in range(3):
            claims.read(first)
        claims.read([rwg("old", "cpu", "2026-11-22T08:00:00Z"), *first])
    assert [(e["rayworkergroup"], e["holder"]) for e in logs if e["event"] == REFUSED] == [
        ("b", "a"),
        ("a", "old"),
        ("b", "old"),
    ]
    assert (claims.holder_of("b"), claims.holder_of("old")) == ("old", "")
