"""KubeRay mode: a RayWorkerGroup's new replicas (KEDA's HPA through ``/scale``) wake the applier
at once instead of at its next round; its own status writes and other clusters' groups do not.

The watch runs against kmock's ``KubernetesEmulator`` on 127.0.0.1 through a real
``kubernetes`` ApiClient (as tests/unit/agent/kuberay/test_raycluster_watch.py does); the applier's
loop runs on a
fake clock whose sleeps never end, so only a wake can start a second round."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import kmock
import pytest
from kubernetes import client as k8s

from keda_ray_scaler.agent.kube.object_watch import ObjectWatch, WatchSettings
from keda_ray_scaler.agent.kuberay.raycluster import WORKER_GROUP_API
from keda_ray_scaler.agent.kuberay.rwg_watch import ReplicasWake, replicas_watch
from keda_ray_scaler.agent.modes import run_applier, sleep_or_wake

NS = "ray"
PATH = f"/apis/keda-ray-scaler.io/v1alpha1/namespaces/{NS}/rayworkergroups"


def rwg(name: str, replicas: int, cluster: str = "demo") -> dict[str, Any]:
    """A RayWorkerGroup naming ``cluster``."""
    return {
        "apiVersion": "keda-ray-scaler.io/v1alpha1",
        "kind": "RayWorkerGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"rayCluster": cluster, "group": name.removeprefix(f"{cluster}-"),
                 "replicas": replicas},
    }  # fmt: skip


@pytest.fixture
async def emulator() -> AsyncIterator[kmock.KubernetesEmulator]:
    """The emulator serving RayWorkerGroups on 127.0.0.1 (a random port)."""
    async with kmock.KubernetesEmulator() as handler, kmock.Server(handler):
        handler.resources["keda-ray-scaler.io/v1alpha1/rayworkergroups"] = kmock.ResourceInfo(
            kind="RayWorkerGroup", namespaced=True
        )
        yield handler


class NeverWakes:
    """A clock whose sleeps never end by themselves."""

    def now(self) -> float:
        return 0.0

    async def sleep(self, s: float) -> None:
        await asyncio.Event().wait()


class CountingApplier:
    """Counts rounds; each round is an event the test can await."""

    def __init__(self) -> None:
        self.rounds = 0
        self.ran = asyncio.Condition()

    @property
    def deletes_by_name(self) -> bool:
        return True

    def refusal(self, group: str) -> str:
        return ""

    async def apply(self) -> Sequence[object]:
        async with self.ran:
            self.rounds += 1
            self.ran.notify_all()
        return ()

    async def until(self, rounds: int) -> None:
        async with asyncio.timeout(10), self.ran:
            await self.ran.wait_for(lambda: self.rounds >= rounds)


async def test_new_replicas_wake_a_round_at_once_status_writes_and_other_clusters_do_not(
    emulator: kmock.KubernetesEmulator,
) -> None:
    await emulator.post(PATH, json=rwg("demo-cpu", 0))
    await emulator.post(PATH, json=rwg("other-cpu", 0, cluster="other"))
    configuration = k8s.Configuration(host=str(emulator.url).rstrip("/"))
    api = k8s.CustomObjectsApi(k8s.ApiClient(configuration))
    watch, wake = replicas_watch(api, WatchSettings(NS, "demo", retry_max_s=0.01))
    applier = CountingApplier()
    tasks = [
        asyncio.create_task(watch.run()),
        asyncio.create_task(run_applier(applier, NeverWakes(), 5.0, wake.event)),
    ]
    try:
        await applier.until(1)
        async with asyncio.timeout(10):  # the watch is open once the list is taken
            while not [r for r in emulator if r.action == kmock.action.WATCH]:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        await emulator.patch(f"{PATH}/other-cpu", json={"spec": {"replicas": 4}})
        await emulator.patch(f"{PATH}/demo-cpu", json={"status": {"replicas": 0}})
        await emulator.patch(f"{PATH}/demo-cpu", json={"spec": {"replicas": 1}})
        await applier.until(2)  # the NeverWakes clock: only the wake ran it
        await asyncio.sleep(0.2)  # give a wrong wake (status, other cluster) time to show
        assert applier.rounds == 2
        await emulator.patch(f"{PATH}/demo-cpu", json={"spec": {"replicas": 10}})
        await applier.until(3)
    finally:
        watch.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def test_a_relist_that_finds_new_replicas_wakes_and_a_first_list_does_not() -> None:
    wake = ReplicasWake("demo")
    wake.listed([rwg("demo-cpu", 1), rwg("other-cpu", 3, cluster="other")])
    assert not wake.event.is_set()
    wake.listed([rwg("demo-cpu", 1), rwg("other-cpu", 9, cluster="other")])
    assert not wake.event.is_set()
    wake.listed([rwg("demo-cpu", 2)])
    assert wake.event.is_set()
    wake.event.clear()
    wake.changed("DELETED", rwg("demo-cpu", 2))
    assert not wake.event.is_set()
    wake.changed("ADDED", rwg("demo-cpu", 2))
    assert wake.event.is_set()


async def test_sleep_or_wake_ends_on_the_wake_or_the_sleep_and_leaves_no_task() -> None:
    wake = asyncio.Event()
    wake.set()
    async with asyncio.timeout(5):
        await sleep_or_wake(NeverWakes(), 60.0, wake)

    class Instant(NeverWakes):
        async def sleep(self, s: float) -> None:
            return None

    before = len(asyncio.all_tasks())
    async with asyncio.timeout(5):
        await sleep_or_wake(Instant(), 60.0, asyncio.Event())
    assert len(asyncio.all_tasks()) == before


async def test_a_watch_the_server_refuses_backs_off_doubling_instead_of_looping(
    emulator: kmock.KubernetesEmulator,
) -> None:
    """Seen on the real node: the example's Role granted rayworkergroups ``list`` but not
    ``watch``, and the agent relisted and re-watched at once, 16,910 times in 4 minutes, half a
    core. Every watch refused (403): each failure waits, doubling up to the cap; a 410 relists
    at once."""
    emulator[kmock.action.WATCH] << 403
    await emulator.post(PATH, json=rwg("demo-cpu", 0))
    configuration = k8s.Configuration(host=str(emulator.url).rstrip("/"))
    api = k8s.CustomObjectsApi(k8s.ApiClient(configuration))
    waits: list[float] = []
    enough = asyncio.Event()

    async def sleep(s: float) -> None:
        waits.append(s)
        if len(waits) >= 6:
            enough.set()
            await asyncio.Event().wait()  # the test stops the watch here

    settings = WatchSettings(NS, "demo", retry_initial_s=0.5, retry_max_s=4.0)
    wake = ReplicasWake("demo")
    watch = ObjectWatch(api, WORKER_GROUP_API, settings, wake, sleep=sleep)
    task = asyncio.create_task(watch.run())
    try:
        async with asyncio.timeout(20):
            await enough.wait()
    finally:
        watch.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert waits == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    watches = [r for r in emulator if r.action == kmock.action.WATCH]
    assert len(watches) == 6  # one a wait: no watch without a wait before the next


def test_the_applier_reads_the_groups_as_served_while_the_watch_holds_them() -> None:
    """None before a list and after a failure; a list replaces the groups, an event adds or
    replaces one, a deletion or a move to another RayCluster drops it."""
    wake = ReplicasWake("demo")
    assert wake.current() is None
    wake.listed([rwg("demo-cpu", 1), rwg("other-cpu", 3, cluster="other")])
    assert wake.current() == [rwg("demo-cpu", 1)]
    written = {**rwg("demo-cpu", 1), "status": {"replicas": 1}}
    wake.changed("MODIFIED", written)
    wake.changed("ADDED", rwg("demo-gpu", 0))
    assert wake.current() == [written, rwg("demo-gpu", 0)]
    wake.changed("MODIFIED", rwg("demo-gpu", 0, cluster="other"))
    wake.changed("DELETED", written)
    assert wake.current() == []
    wake.unreadable("watch failed", "(403) Forbidden")
    assert wake.current() is None
    wake.listed([rwg("demo-cpu", 2)])
    assert wake.current() == [rwg("demo-cpu", 2)]
