"""The safe scale-down protocol against a Kubernetes API emulator, with fake Ray and clock.

No real API server can run here, so the pods live in kmock's ``KubernetesEmulator`` served on
127.0.0.1 (with resourceVersion semantics added, see tests/harness/kube_emulator.py) and the agent
talks to it through a real ``kubernetes`` ApiClient, list+watch included. Ray is faked
(:class:`FakeRay`, :class:`FakeDrainer`, tests/harness/victim_fakes.py): real drains against real
Ray are tested with the Ray side. The clock is fake, so the settling delay is asserted, not waited
for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import kmock
import pytest
from fake_clock import FakeClock
from kube_emulator import (  # the emulator fixtures and helpers
    NS,
    PODS,
    VersionedEmulator,
    api,
    cache,
    calls,
    emulator,
    make_pod,
    registry,
    requests_of,
    running,
    until,
    watching,
)
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs
from victim_fakes import (  # the fakes, builders and fixtures
    CLUSTER,
    POD,
    FakeDrainer,
    FakeRay,
    annotations,
    clock,
    drainer,
    outcomes,
    plan,
    put_three,
    ray,
    synced,
)

from keda_ray_scaler import schema
from keda_ray_scaler.agent.interfaces import Drainer, RayView
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.metric_names import VICTIM_VERDICTS
from keda_ray_scaler.agent.pod import DELETION_COST, PodInfo
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.agent.victims.marks import VictimSettings, clear_cost, owns_cost, set_cost
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.decisions import GroupPlan, Plan
from keda_ray_scaler.model import NodeStatus, WorkerNode

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

OWNER = "ray-scaler.keda.sh/deletion-cost"
LOW, HIGH = "-2147483648", "2147483647"


def test_fakes_satisfy_the_ports() -> None:
    """The fakes implement the protocols B1's real classes implement."""
    assert isinstance(FakeRay(), RayView)
    assert isinstance(FakeDrainer(), Drainer)
    assert isinstance(FakeClock(), Clock)


@pytest.fixture
def make_controller(
    cache: PodCache,
    ray: FakeRay,
    drainer: FakeDrainer,
    clock: FakeClock,
    registry: CollectorRegistry,
) -> Callable[..., VictimController]:
    """Build the controller on the test's cache, fakes and registry."""

    def build(**kw: Any) -> VictimController:
        return VictimController(CLUSTER, cache, ray, drainer, clock, registry, VictimSettings(**kw))

    return build


# --- the whole protocol -------------------------------------------------------------------
async def test_idle_pods_are_marked_confirmed_drained_and_published(
    emulator: VersionedEmulator,
    synced: None,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
    clock: FakeClock,
    registry: CollectorRegistry,
) -> None:
    """Mark victims low and the busy pod high, settle 5 s, confirm, drain both, publish both."""
    controller = make_controller()
    verdicts = await controller.step(plan("w-1", "w-2"))
    assert outcomes(verdicts) == [("w-1", "victim"), ("w-2", "victim")]
    assert calls(emulator) == [
        ("LIST", ""),
        ("WATCH", ""),
        ("UPDATE", "w-1"),
        ("UPDATE", "w-2"),
        ("UPDATE", "w-3"),
    ]
    bodies = [r.data for r in requests_of(emulator, kmock.action.UPDATE)]
    assert bodies == [
        {"metadata": {"resourceVersion": "101", "annotations": {DELETION_COST: LOW, OWNER: LOW}}},
        {"metadata": {"resourceVersion": "102", "annotations": {DELETION_COST: LOW, OWNER: LOW}}},
        {"metadata": {"resourceVersion": "103", "annotations": {DELETION_COST: HIGH, OWNER: HIGH}}},
    ]
    assert clock.sleeps == [5.0]
    message = "keda-ray-scaler: worker group cpu scales down, pod {} idle"
    assert drainer.calls == [
        ("n-w-1", message.format("w-1"), 0),
        ("n-w-2", message.format("w-2"), 0),
    ]
    assert controller.victims() == {"w-1": "cpu", "w-2": "cpu"}
    labels = {"cluster": "demo", "group": "cpu", "outcome": "victim"}
    assert registry.get_sample_value(VICTIM_VERDICTS, labels) == 2.0


async def test_a_second_step_writes_nothing_new(
    emulator: VersionedEmulator,
    synced: None,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
) -> None:
    """Published victims are not chosen again; marks are written only on change."""
    controller = make_controller()
    await controller.step(plan("w-1", "w-2"))
    before = len(calls(emulator))
    assert await controller.step(plan("w-1", "w-2")) == ()
    assert len(calls(emulator)) == before and len(drainer.calls) == 2


async def test_drain_deadline_is_absolute_unix_milliseconds(
    synced: None,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
    clock: FakeClock,
) -> None:
    """drain_deadline_s=30 sends now+30 s in ms (now after the 5 s settle)."""
    await make_controller(drain_deadline_s=30).step(plan("w-1"))
    assert [c[2] for c in drainer.calls] == [int((clock.t + 30) * 1000)]


# --- never act on what is not ours or not known -------------------------------------------
async def test_a_user_set_cost_is_never_overwritten(
    emulator: VersionedEmulator,
    cache: PodCache,
    running: Callable[[], object],
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
) -> None:
    """w-1 and busy w-3 carry a user's cost: neither is patched; w-2 goes through alone."""
    put_three(emulator, w_1={DELETION_COST: "100"}, w_3={DELETION_COST: "5"})
    running()
    await until(watching(emulator))
    verdicts = await make_controller().step(plan("w-1", "w-2"))
    assert outcomes(verdicts) == [("w-1", "not_owned"), ("w-2", "victim")]
    assert verdicts[0].reason == "cost 100 set by another"
    assert calls(emulator) == [("LIST", ""), ("WATCH", ""), ("UPDATE", "w-2")]
    assert annotations(emulator, "w-1") == {DELETION_COST: "100"}
    assert annotations(emulator, "w-3") == {DELETION_COST: "5"}
    assert [c[0] for c in drainer.calls] == ["n-w-2"]


async def test_a_cost_set_by_the_user_between_read_and_patch_is_kept(
    emulator: VersionedEmulator, synced: None, make_controller: Callable[..., VictimController]
) -> None:
    """The cache is stale, the patch gets 409, the fresh read shows the user's cost: no write."""
    emulator.change_quietly("w-1", {DELETION_COST: "7"})
    verdicts = await make_controller().step(plan("w-1"))
    assert outcomes(verdicts) == [("w-1", "not_owned")]
    assert calls(emulator) == [("LIST", ""), ("WATCH", ""), ("UPDATE", "w-1"), ("FETCH", "w-1")]
    assert annotations(emulator, "w-1") == {DELETION_COST: "7"}


async def test_marking_retries_a_409_and_goes_on(
    emulator: VersionedEmulator, synced: None, make_controller: Callable[..., VictimController]
) -> None:
    """One conflict on the first patch: GET, patch again, and the protocol completes."""
    emulator.conflicts = 1
    verdicts = await make_controller().step(plan("w-1"))
    assert outcomes(verdicts) == [("w-1", "victim")]
    assert calls(emulator)[2:5] == [("UPDATE", "w-1"), ("FETCH", "w-1"), ("UPDATE", "w-1")]


def test_ownership_follows_the_marker() -> None:
    """Ours: no cost, or marker equal to cost. Not ours: cost without marker, or changed cost."""
    s = VictimSettings()
    assert owns_cost(PodInfo("p"), s)
    assert owns_cost(PodInfo("p", annotations={DELETION_COST: LOW, OWNER: LOW}), s)
    assert not owns_cost(PodInfo("p", annotations={DELETION_COST: "3"}), s)
    assert not owns_cost(PodInfo("p", annotations={DELETION_COST: "3", OWNER: LOW}), s)
    assert set_cost(-1, s)(PodInfo("p", annotations={DELETION_COST: "3"})) == {}
    assert clear_cost(s)(PodInfo("p", annotations={DELETION_COST: "3", OWNER: LOW})) == {}
    assert clear_cost(s)(PodInfo("p", annotations={DELETION_COST: LOW, OWNER: LOW})) == {
        DELETION_COST: None,
        OWNER: None,
    }


async def test_nothing_is_patched_before_the_cache_is_synced(
    emulator: VersionedEmulator,
    running: Callable[[], object],
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
    ray: FakeRay,
) -> None:
    """The LIST keeps failing: the step reports not_synced and sends no patch, reads no Ray."""
    put_three(emulator)
    emulator[kmock.action.LIST] << 503
    running()
    await until(lambda: len(requests_of(emulator, kmock.action.LIST)) >= 3)
    verdicts = await make_controller().step(plan("w-1", "w-2"))
    assert outcomes(verdicts) == [("", "not_synced")]
    assert requests_of(emulator, kmock.action.UPDATE) == []
    assert (drainer.calls, ray.reads) == ([], 0)


async def test_ray_unreachable_acts_on_nothing(
    emulator: VersionedEmulator,
    synced: None,
    make_controller: Callable[..., VictimController],
    ray: FakeRay,
) -> None:
    """The re-check cannot read Ray: no patch, no drain."""
    ray.down = True
    verdicts = await make_controller().step(plan("w-1"))
    assert outcomes(verdicts) == [("", "ray_unavailable")]
    assert verdicts[0].reason == "GCS unreachable"
    assert requests_of(emulator, kmock.action.UPDATE) == []


async def test_recheck_skips_a_node_that_got_work_since_the_plan(
    emulator: VersionedEmulator,
    synced: None,
    make_controller: Callable[..., VictimController],
    ray: FakeRay,
    clock: FakeClock,
) -> None:
    """The plan said w-1 idle, Ray now says busy: w-1 is neither marked nor drained; w-2 is
    idle 30 s of 60 by Ray: due 30 s on (the loop polls then), busy w-1 is due never."""
    ray.busy("w-1")
    ray.idle("w-2", idle_s=30)
    controller = make_controller()
    verdicts = await controller.step(plan("w-1", "w-2"))
    assert [(v.pod, v.outcome.value, v.reason) for v in verdicts] == [
        ("w-1", "not_idle", "node uses resources (available {CPU: 5} of {CPU: 10})"),
        ("w-2", "not_idle", "idle 30s < idleTimeoutSeconds 60"),
    ]
    assert requests_of(emulator, kmock.action.UPDATE) == []
    assert controller.due_at() == clock.now() + 30.0
    await controller.step(plan("w-1"))
    assert controller.due_at() is None


# --- confirmation and drain failures roll back ------------------------------------------------
async def test_a_pending_pod_blocks_confirmation_and_the_marks_are_restored(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
) -> None:
    """A pending pod would be deleted before the victim: restore, do not drain."""
    await emulator.post(
        f"/api/v1/namespaces/{NS}/pods", json=make_pod("w-4", phase="Pending", ready=False)
    )
    assert await cache.wait_until(lambda: cache.get_cached("w-4") is not None, 10)
    controller = make_controller()
    verdicts = await controller.step(plan("w-1"))
    assert [(v.pod, v.outcome.value, v.reason) for v in verdicts] == [
        ("w-1", "not_confirmed", "pod w-4 ranks before or with victim w-1 by unassigned")
    ]
    assert calls(emulator)[2:] == [
        ("UPDATE", "w-1"),
        ("UPDATE", "w-3"),
        ("FETCH", "w-1"),
        ("UPDATE", "w-1"),
    ]
    assert requests_of(emulator, kmock.action.UPDATE)[-1].data["metadata"]["annotations"] == {
        DELETION_COST: None,
        OWNER: None,
    }
    assert annotations(emulator, "w-1") == {}
    assert drainer.calls == [] and controller.victims() == {}


async def test_a_rejected_drain_returns_the_pod_to_normal_cost(
    emulator: VersionedEmulator,
    synced: None,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
) -> None:
    """Ray refuses w-2 (it got work): its annotations are removed, only w-1 is published."""
    drainer.reject["n-w-2"] = "The node to be idle terminated is no longer idle."
    controller = make_controller()
    verdicts = await controller.step(plan("w-1", "w-2"))
    assert [(v.pod, v.outcome.value, v.reason) for v in verdicts] == [
        ("w-1", "victim", "drained node n-w-1"),
        ("w-2", "drain_rejected", "The node to be idle terminated is no longer idle."),
    ]
    assert annotations(emulator, "w-2") == {}
    assert annotations(emulator, "w-1") == {DELETION_COST: LOW, OWNER: LOW}
    assert controller.victims() == {"w-1": "cpu"}


# --- release ----------------------------------------------------------------------------------
def plan_for(target: int, new: int) -> Plan:
    """Group cpu's three pods, w-1 a published victim: ``target`` pods, ``new`` of them new."""
    gp = GroupPlan("cpu", target, target, 2, 3, 1, new)
    return Plan(groups={"cpu": gp})


async def test_a_victim_no_scale_down_takes_is_deleted_by_the_agent(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
    registry: CollectorRegistry,
) -> None:
    """w-1 drained and published; then demand for one new pod of its group: the target (2 kept
    + 1 new = 3) is the pods there are, the HPA changes nothing, so the agent deletes w-1 with
    its uid as precondition (the ReplicaSet replaces it); the scale-down's own verdict follows."""
    controller = make_controller()
    await controller.step(plan("w-1"))
    assert controller.victims() == {"w-1": "cpu"}
    verdicts = await controller.step(plan_for(target=3, new=1))
    assert outcomes(verdicts) == [("w-1", "released")]
    assert "target 3 >= 3 pods" in verdicts[0].reason
    (delete,) = requests_of(emulator, kmock.action.DELETE)
    assert delete.name == "w-1" and delete.data["preconditions"] == {"uid": "uid-w-1"}
    assert await cache.wait_until(lambda: cache.get_cached("w-1") is None, 10)
    assert outcomes(await controller.step(plan_for(target=3, new=1))) == [("w-1", "deleted")]
    assert controller.victims() == {} and controller.frozen() == frozenset()
    labels = {"cluster": "demo", "group": "cpu", "outcome": "released"}
    assert registry.get_sample_value(VICTIM_VERDICTS, labels) == 1.0


async def test_a_backed_off_group_releases_no_victim_while_its_back_off_runs(
    emulator: VersionedEmulator,
    synced: None,
    cache: PodCache,
    ray: FakeRay,
    drainer: FakeDrainer,
    clock: FakeClock,
    registry: CollectorRegistry,
) -> None:
    """A launch limit of 0 (the group's back-off waits): w-1 stays a victim, nothing deleted;
    at 1, it is released."""
    limits: dict[str, int | None] = {"cpu": 0}
    controller = VictimController(
        CLUSTER, cache, ray, drainer, clock, registry, launch_limit=limits.get
    )
    await controller.step(plan("w-1"))
    assert outcomes(await controller.step(plan_for(target=3, new=1))) == []
    assert requests_of(emulator, kmock.action.DELETE) == []
    limits["cpu"] = 1
    assert outcomes(await controller.step(plan_for(target=3, new=1))) == [("w-1", "released")]


async def test_a_victim_is_left_to_a_scale_down_under_way_and_another_pod_is_never_deleted(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
) -> None:
    """Target 2 of 3 pods: the HPA's scale-down takes w-1, the agent deletes nothing; a pod
    now another under the victim's name (a new uid) is not deleted either."""
    controller = make_controller()
    await controller.step(plan("w-1"))
    assert outcomes(await controller.step(plan_for(target=2, new=0))) == []
    assert requests_of(emulator, kmock.action.DELETE) == []
    emulator.objects[PODS, NS, "w-1"].patch({"metadata": {"uid": "uid-w-1-again"}})
    verdicts = await controller.step(plan_for(target=3, new=1))
    assert outcomes(verdicts) == [("w-1", "pod_gone")]
    assert (PODS, NS, "w-1") in emulator.objects


# --- verify -----------------------------------------------------------------------------------
async def test_a_deleted_victim_is_reported_and_leaves_the_published_set(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
) -> None:
    """The ReplicaSet took w-1, as planned: deleted, no wrong victim."""
    controller = make_controller()
    await controller.step(plan("w-1"))
    await emulator.delete(f"/api/v1/namespaces/{NS}/pods/w-1")
    assert await cache.wait_until(lambda: cache.get_cached("w-1") is None, 10)
    assert outcomes(await controller.step(plan())) == [("w-1", "deleted")]
    assert controller.victims() == {}


async def test_a_pod_never_seen_in_ray_going_instead_is_no_wrong_victim(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
    registry: CollectorRegistry,
    ray: FakeRay,
) -> None:
    """w-3 never was a Ray node (KEDA's fallback pod, one that never joined): the ReplicaSet
    taking it while w-1 is expected loses nothing, so the group is not frozen."""
    del ray.by_pod["w-3"]
    controller = make_controller()
    await controller.step(plan("w-1"))
    await emulator.delete(f"/api/v1/namespaces/{NS}/pods/w-3")
    assert await cache.wait_until(lambda: cache.get_cached("w-3") is None, 10)
    verdicts = await controller.step(plan())
    assert outcomes(verdicts) == [("w-3", "pod_gone")]
    labels = {"cluster": "demo", "group": "cpu"}
    assert registry.get_sample_value(schema.SCALE_DOWN_FROZEN, labels) == 0.0
    assert controller.frozen() == frozenset()


async def test_a_pod_whose_ray_node_died_going_instead_is_no_wrong_victim(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
    registry: CollectorRegistry,
    ray: FakeRay,
) -> None:
    """w-3 was a Ray node, its raylet died (a start over Ray's 30 s limit; the kubelet restarts
    the container, the pod is not Ready): the ReplicaSet takes it first while w-1 is expected.
    Nothing ran there at the last read, so the group is not frozen; while w-3 was live the same
    deletion is a wrong victim (the test after this one)."""
    controller = make_controller()
    await controller.step(plan("w-1"))
    del ray.by_pod["w-3"]
    controller.saw_in_ray(frozenset(ray.by_pod))  # the loop's next poll: w-3 is no Ray node
    await emulator.delete(f"/api/v1/namespaces/{NS}/pods/w-3")
    assert await cache.wait_until(lambda: cache.get_cached("w-3") is None, 10)
    verdicts = await controller.step(plan())
    assert outcomes(verdicts) == [("w-3", "pod_gone")]
    labels = {"cluster": "demo", "group": "cpu"}
    assert registry.get_sample_value(schema.WRONG_VICTIMS, labels) in (None, 0.0)
    assert controller.frozen() == frozenset()


async def test_a_wrong_victim_is_counted_logged_and_freezes_the_group(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
    registry: CollectorRegistry,
    ray: FakeRay,
) -> None:
    """w-3 goes while w-1 was the victim: counted, logged as an error, frozen until cleared."""
    controller = make_controller()
    await controller.step(plan("w-1"))
    await emulator.delete(f"/api/v1/namespaces/{NS}/pods/w-3")
    assert await cache.wait_until(lambda: cache.get_cached("w-3") is None, 10)
    with capture_logs() as logs:
        verdicts = await controller.step(plan())
    assert outcomes(verdicts) == [("w-3", "wrong_victim")]
    labels = {"cluster": "demo", "group": "cpu"}
    assert registry.get_sample_value(schema.WRONG_VICTIMS, labels) == 1.0
    assert registry.get_sample_value(schema.SCALE_DOWN_FROZEN, labels) == 1.0
    errors = [(e["event"], e["pod"], e["victims"]) for e in logs if e["log_level"] == "error"]
    assert errors == [("wrong victim", "w-3", ["w-1"])]
    patches = len(requests_of(emulator, kmock.action.UPDATE))
    assert outcomes(await controller.step(plan("w-2"))) == [("w-2", "frozen")]
    assert len(requests_of(emulator, kmock.action.UPDATE)) == patches
    controller.unfreeze("cpu")
    assert registry.get_sample_value(schema.SCALE_DOWN_FROZEN, labels) == 0.0
    # unfrozen, w-2 still waits for the published w-1 to go; then it is taken
    assert outcomes(await controller.step(plan("w-2"))) == [("w-2", "awaiting_deletion")]
    await emulator.delete(f"/api/v1/namespaces/{NS}/pods/w-1")
    assert await cache.wait_until(lambda: cache.get_cached("w-1") is None, 10)
    assert outcomes(await controller.step(plan("w-2"))) == [("w-1", "deleted"), ("w-2", "victim")]


# --- restarts ---------------------------------------------------------------------------------
async def test_restart_mid_protocol_leaves_no_undrained_victim(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
    ray: FakeRay,
    clock: FakeClock,
) -> None:
    """Killed while draining: the next agent restores both marked pods, publishes none."""
    drainer.block = True
    first = asyncio.create_task(make_controller().step(plan("w-1", "w-2")))
    await until(lambda: len(drainer.calls) == 1)
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    assert annotations(emulator, "w-1") == {DELETION_COST: LOW, OWNER: LOW}
    assert annotations(emulator, "w-2") == {DELETION_COST: LOW, OWNER: LOW}

    drainer.block = False
    restarted = VictimController(CLUSTER, cache, ray, drainer, clock, CollectorRegistry())
    verdicts = await restarted.reconcile()
    assert outcomes(verdicts) == [("w-1", "restored"), ("w-2", "restored")]
    assert annotations(emulator, "w-1") == {} and annotations(emulator, "w-2") == {}
    assert annotations(emulator, "w-3") == {DELETION_COST: HIGH, OWNER: HIGH}
    assert restarted.victims() == {}


async def test_a_victim_drained_before_the_restart_is_adopted(
    emulator: VersionedEmulator,
    cache: PodCache,
    synced: None,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
    ray: FakeRay,
    clock: FakeClock,
) -> None:
    """Its Ray node is gone (drained): the restarted agent keeps the mark and publishes it."""
    await make_controller().step(plan("w-1"))
    del ray.by_pod["w-1"]
    restarted = VictimController(CLUSTER, cache, ray, drainer, clock, CollectorRegistry())
    verdicts = await restarted.reconcile()
    assert [(v.pod, v.outcome.value, v.reason) for v in verdicts] == [
        ("w-1", "victim", "adopted: Ray node gone")
    ]
    assert restarted.victims() == {"w-1": "cpu"}
    assert annotations(emulator, "w-1") == {DELETION_COST: LOW, OWNER: LOW}


async def test_a_victim_whose_pod_runs_a_new_ray_node_is_unpublished(
    emulator: VersionedEmulator,
    synced: None,
    make_controller: Callable[..., VictimController],
    ray: FakeRay,
) -> None:
    """The drained pod registered a new Ray node: it may get work, so it is restored."""
    controller = make_controller()
    await controller.step(plan("w-1"))
    ray.by_pod["w-1"] = WorkerNode("w-1", "cpu", POD, POD, 0.0, NodeStatus.RUNNING, "n-w-1-again")
    verdicts = await controller.step(plan())
    assert [(v.pod, v.outcome.value, v.reason) for v in verdicts] == [
        ("w-1", "resurrected", "new Ray node n-w-1-again")
    ]
    assert controller.victims() == {}
    assert annotations(emulator, "w-1") == {}


async def test_a_quiet_step_does_not_read_ray(
    synced: None, make_controller: Callable[..., VictimController], ray: FakeRay
) -> None:
    """Nothing removable, no victims, no marks: no Ray read, no verdict."""
    assert await make_controller().step(plan()) == ()
    assert ray.reads == 0


async def test_an_api_failure_while_marking_is_a_verdict_not_a_crash(
    emulator: VersionedEmulator,
    synced: None,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
    registry: CollectorRegistry,
) -> None:
    """Three 409s exhaust the attempts on w-1: kube_error, nothing drained, w-2 untouched."""
    emulator.conflicts = 3
    verdicts = await make_controller().step(plan("w-1", "w-2"))
    assert [(v.pod, v.outcome.value) for v in verdicts] == [("w-1", "kube_error")]
    assert verdicts[0].reason.startswith("mark failed: update failed: 409")
    assert calls(emulator)[2:] == [("UPDATE", "w-1"), ("FETCH", "w-1")] * 2 + [("UPDATE", "w-1")]
    assert drainer.calls == []
    labels = {"cluster": "demo", "operation": "update", "code": "409"}
    assert registry.get_sample_value("ray_scaler_kube_api_errors_total", labels) == 3.0


async def test_marks_the_watch_never_shows_are_not_confirmed(
    emulator: VersionedEmulator,
    cache: PodCache,
    running: Callable[[], object],
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
) -> None:
    """A silent watch: the marks are not seen within confirm_timeout_s, so they are undone."""
    put_three(emulator)
    emulator[kmock.action.WATCH] << (b"", ...)  # a watch that stays open and says nothing
    running()
    await until(watching(emulator))
    assert cache.synced
    verdicts = await make_controller(confirm_timeout_s=0.2).step(plan("w-1"))
    assert [(v.pod, v.outcome.value, v.reason) for v in verdicts] == [
        ("w-1", "not_confirmed", "victim marks not seen through the watch")
    ]
    assert calls(emulator)[2:] == [
        ("UPDATE", "w-1"),
        ("UPDATE", "w-3"),
        ("FETCH", "w-1"),
        ("UPDATE", "w-1"),
    ]
    assert annotations(emulator, "w-1") == {}
    assert drainer.calls == []


async def test_a_stopped_cache_is_not_synced(
    emulator: VersionedEmulator, cache: PodCache, running: Callable[[], asyncio.Task[None]]
) -> None:
    """Once its list+watch loop ends, nothing keeps the cache fresh: it reports not synced."""
    put_three(emulator)
    task = running()
    await until(watching(emulator))
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert not cache.synced


# --- pods above a cap ---------------------------------------------------------------------
def over_cap(*pods: str) -> Plan:
    """A plan removing ``pods`` from group cpu because it is above maxReplicas."""
    gp = GroupPlan(
        "cpu", target=1, desired=1, floor=3, current=3, busy=1, new=0, removable=pods, over_cap=pods
    )
    return Plan(groups={"cpu": gp})


async def test_no_new_candidate_is_marked_while_published_victims_wait_for_deletion(
    emulator: VersionedEmulator,
    synced: None,
    cache: PodCache,
    make_controller: Callable[..., VictimController],
    drainer: FakeDrainer,
) -> None:
    """w-1 published, its pod not deleted yet: w-2 is not marked (it would tie with w-1)."""
    controller = make_controller()
    assert outcomes(await controller.step(plan("w-1"))) == [("w-1", "victim")]
    before = len(calls(emulator))
    verdicts = await controller.step(plan("w-1", "w-2"))
    assert outcomes(verdicts) == [("w-2", "awaiting_deletion")]
    assert len(calls(emulator)) == before and len(drainer.calls) == 1
    await emulator.delete(f"/api/v1/namespaces/{NS}/pods/w-1")
    await until(lambda: "w-1" not in {p.name for p in cache.pods()})
    verdicts = await controller.step(plan("w-2"))
    assert outcomes(verdicts) == [("w-1", "deleted"), ("w-2", "victim")]


async def test_a_pod_above_a_cap_goes_at_once_whatever_its_idle_time(
    synced: None, make_controller: Callable[..., VictimController], ray: FakeRay
) -> None:
    """Idle 1 s (timeout 60 s): refused as idle removal, taken at once above a cap."""
    ray.idle("w-1", idle_s=1.0)
    controller = make_controller()
    assert outcomes(await controller.step(plan("w-1"))) == [("w-1", "not_idle")]
    assert outcomes(await controller.step(over_cap("w-1"))) == [("w-1", "victim")]
    assert dict(controller.victims()) == {"w-1": "cpu"}


async def test_a_pod_above_a_cap_without_a_ray_node_is_published_without_a_drain(
    synced: None,
    make_controller: Callable[..., VictimController],
    ray: FakeRay,
    drainer: FakeDrainer,
) -> None:
    """A pending pod (no Ray node) above a cap: marked, confirmed, published, no drain call."""
    del ray.by_pod["w-1"]
    controller = make_controller()
    assert outcomes(await controller.step(over_cap("w-1"))) == [("w-1", "victim")]
    assert drainer.calls == []


async def test_a_busy_pod_above_a_cap_is_never_taken(
    synced: None, make_controller: Callable[..., VictimController]
) -> None:
    """w-3 uses 5 CPUs: above a cap or not, the re-check refuses it."""
    verdicts = await make_controller().step(over_cap("w-3"))
    assert outcomes(verdicts) == [("w-3", "not_idle")]
