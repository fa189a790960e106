"""The victim protocol in KubeRay mode: the same choose, drain, publish, verify, but no
deletion-cost marks and no ReplicaSet ranking (KubeRay deletes the pods it is told, by name)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from fake_clock import FakeClock
from kube_emulator import VersionedEmulator, api, cache, calls, emulator, registry, running
from prometheus_client import CollectorRegistry
from victim_fakes import (
    CLUSTER,
    FakeDrainer,
    FakeRay,
    annotations,
    clock,
    drainer,
    outcomes,
    plan,
    ray,
    synced,
)

from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.modes import Applier, DeploymentApplier
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.agent.victims.marks import VictimSettings
from keda_ray_scaler.decisions import Decision, DecisionKind, GroupPlan, Plan, Why

__all__ = ["api", "cache", "clock", "drainer", "emulator", "ray", "registry", "running", "synced"]


class ByName:
    """An applier whose workload deletes by name; refuses when told."""

    def __init__(self, refusal: str = "") -> None:
        self._refusal = refusal

    @property
    def deletes_by_name(self) -> bool:
        """Pods go by name."""
        return True

    def refusal(self, group: str) -> str:
        """The configured refusal."""
        return self._refusal

    async def apply(self) -> tuple[object, ...]:
        """Nothing (the controller never calls it)."""
        return ()


Build = Callable[[Any], VictimController]


@pytest.fixture
def build(
    synced: None,
    cache: PodCache,
    ray: FakeRay,
    drainer: FakeDrainer,
    clock: FakeClock,
    registry: CollectorRegistry,
) -> Build:
    """Builds a controller on the test's synced cache and fakes, with the given applier."""
    return functools.partial(controller, cache, ray, drainer, clock, registry)


def controller(
    cache: PodCache,
    ray: FakeRay,
    drainer: FakeDrainer,
    clock: FakeClock,
    registry: CollectorRegistry,
    applier: Any,
) -> VictimController:
    """A controller on the test's cache and fakes with ``applier``."""
    return VictimController(
        CLUSTER, cache, ray, drainer, clock, registry, VictimSettings(), applier=applier
    )


def test_both_appliers_satisfy_the_protocol() -> None:
    """The Deployment and KubeRay appliers are Appliers."""
    assert isinstance(DeploymentApplier(), Applier)
    assert isinstance(ByName(), Applier)


async def test_kuberay_mode_drains_and_publishes_without_marks(
    emulator: VersionedEmulator, drainer: FakeDrainer, clock: FakeClock, build: Build
) -> None:
    """Idle w-1, w-2: drained and published; no pod written, no settle wait."""
    c = build(ByName())
    verdicts = await c.step(plan("w-1", "w-2"))
    assert outcomes(verdicts) == [("w-1", "victim"), ("w-2", "victim")]
    assert calls(emulator) == [("LIST", ""), ("WATCH", "")]
    assert clock.sleeps == []
    assert [call[0] for call in drainer.calls] == ["n-w-1", "n-w-2"]
    assert c.victims() == {"w-1": "cpu", "w-2": "cpu"}
    assert annotations(emulator, "w-1") == {}


async def test_rejected_drain_is_not_published_and_the_pod_is_untouched(
    emulator: VersionedEmulator, drainer: FakeDrainer, clock: FakeClock, build: Build
) -> None:
    """Ray refuses w-1's drain: only w-2 is published (the applier can name only it)."""
    drainer.reject["n-w-1"] = "The node to be idle terminated is no longer idle."
    c = build(ByName())
    verdicts = await c.step(plan("w-1", "w-2"))
    assert outcomes(verdicts)[0] == ("w-1", "drain_rejected")
    assert c.victims() == {"w-2": "cpu"}
    assert annotations(emulator, "w-1") == {}


async def test_refused_cluster_drains_nothing(
    emulator: VersionedEmulator, drainer: FakeDrainer, clock: FakeClock, build: Build
) -> None:
    """While the applier refuses (in-tree autoscaling), candidates are REFUSED, not drained."""
    c = build(ByName("in-tree autoscaling is on"))
    verdicts = await c.step(plan("w-1"))
    assert outcomes(verdicts) == [("w-1", "refused")]
    assert verdicts[0].reason == "in-tree autoscaling is on"
    assert drainer.calls == [] and c.victims() == {}


async def test_deployment_applier_keeps_the_marking_protocol(
    emulator: VersionedEmulator, drainer: FakeDrainer, clock: FakeClock, build: Build
) -> None:
    """With the Deployment applier the pods are marked and the settle waited, as before."""
    c = build(DeploymentApplier())
    await c.step(plan("w-1"))
    assert ("UPDATE", "w-1") in calls(emulator)
    assert clock.sleeps == [5.0]
    assert c.victims() == {"w-1": "cpu"}


async def test_kuberay_mode_names_a_failing_pod_without_a_drain_and_says_why(
    emulator: VersionedEmulator, drainer: FakeDrainer, ray: FakeRay, build: Build
) -> None:
    """w-1 never joined Ray (no node): published at once for workersToDelete, with the plan's
    reason; nothing drained (there was a KeyError here before pods without nodes could go)."""
    del ray.by_pod["w-1"]
    gp = GroupPlan(
        "cpu",
        target=2,
        desired=2,
        floor=3,
        current=3,
        busy=1,
        new=0,
        removable=("w-1",),
        over_cap=("w-1",),
        decisions=(Decision(DecisionKind.REMOVE, 1, Why.CONTAINER_FAILING, ("w-1",)),),
    )
    c = build(ByName())
    verdicts = await c.step(Plan(groups={"cpu": gp}))
    assert outcomes(verdicts) == [("w-1", "victim")]
    assert verdicts[0].reason.startswith("container_failing:")
    assert drainer.calls == [] and c.victims() == {"w-1": "cpu"}
