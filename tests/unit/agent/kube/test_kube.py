"""The pod cache and annotation patches against a Kubernetes API emulator.

The emulator (tests/harness/kube_emulator.py) is kmock's ``KubernetesEmulator`` on 127.0.0.1 with
resourceVersion semantics, reached through a real ``kubernetes`` ApiClient: a stand-in for the API
server, kept for what a real one will not do on cue: a 409 at a chosen write, a change behind a
watch's back, a failing call. (The pod cache, the patches and the agent's Role run against a real
kube-apiserver in tests/real/control_plane/test_real_control_plane.py.)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping

import kmock
import pytest
import tenacity
from kube_emulator import (  # the emulator fixtures and helpers
    NS,
    SELECTOR,
    VersionedEmulator,
    api,
    cache,
    calls,
    emulator,
    make_pod,
    registry,
    requests_of,
    running,
    settings,
    until,
    watching,
)
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.kube.pod_info import pod_info
from keda_ray_scaler.agent.metric_names import KUBE_API_ERRORS, KUBE_CACHE_SYNCED, KUBE_RELISTS
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.errors import KubernetesError

__all__ = ["api", "cache", "emulator", "registry", "running"]  # fixtures used by name


# --- list and watch ---------------------------------------------------------------------------
async def test_cache_lists_with_the_selector_then_watches_from_the_list_version(
    emulator: VersionedEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """One LIST with the label selector, then one WATCH from the list's resourceVersion."""
    emulator.put_pod("w-1")
    emulator.put_pod("w-2", group="gpu")
    assert not cache.synced
    running()
    await until(watching(emulator))
    assert cache.synced
    assert calls(emulator) == [("LIST", ""), ("WATCH", "")]
    listing, watch = (
        requests_of(emulator, kmock.action.LIST)[0],
        requests_of(emulator, kmock.action.WATCH)[0],
    )
    assert listing.params == {"labelSelector": SELECTOR}
    assert watch.params["labelSelector"] == SELECTOR
    assert watch.params["resourceVersion"] == "102"
    assert watch.params["timeoutSeconds"] == "300"
    assert [(p.name, p.group) for p in cache.pods()] == [("w-1", "cpu"), ("w-2", "gpu")]
    assert registry.get_sample_value(KUBE_CACHE_SYNCED, {"cluster": "demo"}) == 1.0


async def test_watch_events_reach_the_cache(
    emulator: VersionedEmulator, cache: PodCache, running: Callable[[], object]
) -> None:
    """A pod added, annotated and deleted through the API shows in the cache."""
    running()
    await until(watching(emulator))
    await emulator.post(f"/api/v1/namespaces/{NS}/pods", json=make_pod("w-9"))
    assert await cache.wait_until(lambda: cache.get_cached("w-9") is not None, 10)
    await emulator.patch(
        f"/api/v1/namespaces/{NS}/pods/w-9", json={"metadata": {"annotations": {"a": "b"}}}
    )
    assert await cache.wait_until(lambda: cache.get_cached("w-9").annotations == {"a": "b"}, 10)  # type: ignore[union-attr]
    await emulator.delete(f"/api/v1/namespaces/{NS}/pods/w-9")
    assert await cache.wait_until(lambda: cache.get_cached("w-9") is None, 10)


async def test_watch_expiry_410_relists_and_watches_again(
    emulator: VersionedEmulator,
    cache: PodCache,
    running: Callable[[], object],
    registry: CollectorRegistry,
) -> None:
    """A 410 Gone watch event drops the sync, relists, and watches again."""
    gone = {
        "type": "ERROR",
        "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
    }
    emulator[kmock.action.WATCH][:1] << json.dumps(gone).encode() + b"\n"
    emulator.put_pod("w-1")
    with capture_logs() as logs:
        running()
        await until(watching(emulator, 2))
    assert calls(emulator) == [("LIST", ""), ("WATCH", ""), ("LIST", ""), ("WATCH", "")]
    assert cache.synced
    assert registry.get_sample_value(KUBE_RELISTS + "", {"cluster": "demo"}) == 1.0
    assert (
        registry.get_sample_value(
            KUBE_API_ERRORS, {"cluster": "demo", "operation": "watch", "code": "410"}
        )
        == 1.0
    )
    relist = [e for e in logs if e["event"] == "pod watch ended, relisting"]
    assert [(e["status"], e["log_level"]) for e in relist] == [("410", "warning")]


async def test_list_retries_on_500_and_429_then_syncs(
    emulator: VersionedEmulator, cache: PodCache, registry: CollectorRegistry
) -> None:
    """Two failed LISTs (500, 429) are retried; the third syncs the cache."""
    emulator[kmock.action.LIST][:1] << 500
    emulator[kmock.action.LIST][1:2] << 429
    emulator.put_pod("w-1")
    with capture_logs() as logs:
        assert await cache.relist() == "101"
    assert calls(emulator) == [("LIST", ""), ("LIST", ""), ("LIST", "")]
    assert cache.synced and [p.name for p in cache.pods()] == ["w-1"]
    for code in ("500", "429"):
        assert (
            registry.get_sample_value(
                KUBE_API_ERRORS, {"cluster": "demo", "operation": "list", "code": code}
            )
            == 1.0
        )
    retries = [
        (e["attempt"], e["status"])
        for e in logs
        if e["event"] == "kubernetes call failed, retrying"
    ]
    assert retries == [(1, "500"), (2, "429")]


async def test_a_list_that_keeps_failing_leaves_the_cache_unsynced(
    emulator: VersionedEmulator, cache: PodCache
) -> None:
    """After the configured 3 attempts the list raises KubernetesError and nothing is synced."""
    emulator[kmock.action.LIST] << 503
    with capture_logs() as logs, pytest.raises(KubernetesError, match="list failed: 503"):
        await cache.relist()
    assert calls(emulator) == [("LIST", "")] * 3
    assert not cache.synced
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["kubernetes call failed"]


class RecordedSleeps:
    """The pod cache's back-off sleep: records each wait; from the ``block_at``-th on it never
    returns (the test stops the cache there)."""

    def __init__(self, block_at: int) -> None:
        self.waits: list[float] = []
        self.enough = asyncio.Event()
        self._block_at = block_at

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if len(self.waits) >= self._block_at:
            self.enough.set()
            await asyncio.Event().wait()


async def stopped(cache: PodCache, task: asyncio.Task[None]) -> None:
    """Stop the cache's loop and wait for it to end."""
    cache.stop()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_watch_the_server_refuses_backs_off_doubling_unsynced_and_counted(
    emulator: VersionedEmulator, api: k8s.CoreV1Api, registry: CollectorRegistry
) -> None:
    """Every watch refused (403, say a Role without ``watch``): each failure relists after a
    wait doubling from retry_initial_s up to retry_max_s, never a tight loop of requests; the
    cache is unsynced while it waits, and unsynced (gauge 0) once the loop ends."""
    emulator[kmock.action.WATCH] << 403
    emulator.put_pod("w-1")
    sleeps = RecordedSleeps(block_at=6)
    cache = PodCache(
        api, settings(retry_initial_s=0.5, retry_max_s=4.0), registry,
        wait=tenacity.wait_none(), sleep=sleeps,
    )  # fmt: skip
    task = asyncio.create_task(cache.run())
    try:
        async with asyncio.timeout(20):
            await sleeps.enough.wait()
        assert not cache.synced
    finally:
        await stopped(cache, task)
    assert sleeps.waits == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert calls(emulator) == [("LIST", ""), ("WATCH", "")] * 6  # one wait before each relist
    assert registry.get_sample_value(KUBE_RELISTS, {"cluster": "demo"}) == 6.0
    errors = {"cluster": "demo", "operation": "watch", "code": "403"}
    assert registry.get_sample_value(KUBE_API_ERRORS, errors) == 6.0
    assert not cache.synced
    assert registry.get_sample_value(KUBE_CACHE_SYNCED, {"cluster": "demo"}) == 0.0


async def test_a_410_relists_at_once_without_a_wait(
    emulator: VersionedEmulator, api: k8s.CoreV1Api, registry: CollectorRegistry
) -> None:
    """An expired watch loses nothing by relisting at once: no back-off."""
    gone = {
        "type": "ERROR",
        "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
    }
    emulator[kmock.action.WATCH][:1] << json.dumps(gone).encode() + b"\n"
    sleeps = RecordedSleeps(block_at=1)
    cache = PodCache(api, settings(), registry, wait=tenacity.wait_none(), sleep=sleeps)
    task = asyncio.create_task(cache.run())
    try:
        await until(watching(emulator, 2))
        assert cache.synced
    finally:
        await stopped(cache, task)
    assert sleeps.waits == []
    assert registry.get_sample_value(KUBE_CACHE_SYNCED, {"cluster": "demo"}) == 0.0


async def test_a_list_that_gives_up_waits_retry_max_s_before_listing_again(
    emulator: VersionedEmulator, api: k8s.CoreV1Api, registry: CollectorRegistry
) -> None:
    """The list's retries spent (PodApi counted each attempt): logged, unsynced, and the next
    list only after retry_max_s."""
    emulator[kmock.action.LIST] << 503
    sleeps = RecordedSleeps(block_at=1)
    cache = PodCache(
        api, settings(retry_max_s=4.0), registry, wait=tenacity.wait_none(), sleep=sleeps
    )
    task = asyncio.create_task(cache.run())
    try:
        with capture_logs() as logs:
            async with asyncio.timeout(20):
                await sleeps.enough.wait()
    finally:
        await stopped(cache, task)
    assert sleeps.waits == [4.0]
    assert calls(emulator) == [("LIST", "")] * 3
    assert not cache.synced
    errors = {"cluster": "demo", "operation": "list", "code": "503"}
    assert registry.get_sample_value(KUBE_API_ERRORS, errors) == 3.0
    assert [e["event"] for e in logs if e["log_level"] == "error"] == [
        "kubernetes call failed",
        "pod list failed",
    ]


# --- patches ----------------------------------------------------------------------------------
def write(values: Mapping[str, str | None]) -> Callable[[PodInfo], Mapping[str, str | None]]:
    """A decision that always asks for ``values``."""
    return lambda pod: values


async def test_update_sends_one_merge_patch_with_the_resource_version(
    emulator: VersionedEmulator, cache: PodCache
) -> None:
    """The patch is a JSON merge patch of annotations, guarded by the pod's resourceVersion."""
    emulator.put_pod("w-1", annotations={"keep": "me"})
    await cache.relist()
    written = await cache.update("w-1", write({"x": "1"}))
    patch = requests_of(emulator, kmock.action.UPDATE)[0]
    assert patch.headers["Content-Type"] == "application/merge-patch+json"
    assert patch.data == {"metadata": {"resourceVersion": "101", "annotations": {"x": "1"}}}
    assert written is not None and written.annotations == {"keep": "me", "x": "1"}
    assert calls(emulator) == [("LIST", ""), ("UPDATE", "w-1")]


async def test_update_writes_nothing_when_the_values_are_already_there(
    emulator: VersionedEmulator, cache: PodCache
) -> None:
    """Write only on change: equal values and deleting an absent key send no request."""
    emulator.put_pod("w-1", annotations={"x": "1"})
    await cache.relist()
    assert await cache.update("w-1", write({"x": "1", "y": None})) is not None
    assert calls(emulator) == [("LIST", "")]


async def test_update_retries_on_409_with_a_fresh_read_and_decides_again(
    emulator: VersionedEmulator, cache: PodCache, registry: CollectorRegistry
) -> None:
    """A stale cache gets 409; the retry GETs the pod and decides on what it reads."""
    emulator.put_pod("w-1")
    await cache.relist()
    emulator.change_quietly("w-1", {"seen-by": "user"})
    decided_on: list[dict[str, str]] = []

    def decide(pod: PodInfo) -> Mapping[str, str | None]:
        decided_on.append(dict(pod.annotations))
        return {"x": "1"}

    written = await cache.update("w-1", decide)
    assert calls(emulator) == [("LIST", ""), ("UPDATE", "w-1"), ("FETCH", "w-1"), ("UPDATE", "w-1")]
    assert decided_on == [{}, {"seen-by": "user"}]
    assert written is not None and written.annotations == {"seen-by": "user", "x": "1"}
    assert (
        registry.get_sample_value(
            KUBE_API_ERRORS, {"cluster": "demo", "operation": "update", "code": "409"}
        )
        == 1.0
    )


async def test_update_gives_up_after_three_attempts(
    emulator: VersionedEmulator, cache: PodCache
) -> None:
    """Persistent 409: exactly 3 attempts, then KubernetesError; logged, not crashed."""
    emulator.put_pod("w-1")
    await cache.relist()
    emulator.conflicts = 99
    with capture_logs() as logs, pytest.raises(KubernetesError, match="update failed: 409"):
        await cache.update("w-1", write({"x": "1"}))
    assert calls(emulator) == [("LIST", "")] + [("UPDATE", "w-1"), ("FETCH", "w-1")] * 2 + [
        ("UPDATE", "w-1")
    ]
    retries = [e["attempt"] for e in logs if e["event"] == "kubernetes call failed, retrying"]
    assert retries == [1, 2]
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["kubernetes call failed"]


async def test_a_503_whose_write_landed_is_not_written_again(
    emulator: VersionedEmulator, cache: PodCache
) -> None:
    """The emulator applies the patch and answers 503: the retry reads, finds it, stops."""
    emulator.put_pod("w-1")
    await cache.relist()
    emulator[kmock.action.UPDATE] << 503
    written = await cache.update("w-1", write({"x": "1"}))
    assert calls(emulator) == [("LIST", ""), ("UPDATE", "w-1"), ("FETCH", "w-1")]
    assert written is not None and written.annotations == {"x": "1"}


async def test_a_missing_pod_is_none_without_retries(
    emulator: VersionedEmulator, cache: PodCache
) -> None:
    """404 is an answer, not a failure: one GET, None."""
    assert await cache.get("nope") is None
    assert calls(emulator) == [("FETCH", "nope")]


# --- parsing ----------------------------------------------------------------------------------
def test_pod_info_reads_what_the_ranking_needs() -> None:
    """Fields are taken from the API JSON: group label, readiness, restarts, owner, IP, times."""
    raw = make_pod("w-1", version=7, annotations={"k": "v"})
    raw["status"]["podIP"] = "10.1.2.3"
    raw["status"]["containerStatuses"] = [
        {"name": "ray", "restartCount": 2},
        {"name": "log", "restartCount": 5},
    ]
    raw["spec"]["initContainers"] = [{"name": "side", "restartPolicy": "Always"}, {"name": "init"}]
    raw["status"]["initContainerStatuses"] = [
        {"name": "side", "restartCount": 3},
        {"name": "init", "restartCount": 9},
    ]
    info = pod_info(raw, "ray.io/group")
    assert info == PodInfo(
        name="w-1",
        uid="uid-w-1",
        group="cpu",
        node_name="node-1",
        phase="Running",
        ready=True,
        ready_since_s=1795341600.0,
        restarts=5,
        sidecar_restarts=3,
        created_s=1795341540.0,
        deleting=False,
        owner="ReplicaSet/ray-cpu-7d9f",
        pod_ips=("10.1.2.3",),
        resource_version="7",
        annotations={"k": "v"},
    )


@pytest.mark.parametrize(
    ("label", "probe", "endpoint"),
    [("true", True, True), ("true", False, False), ("false", True, False), (None, True, False)],
)
def test_a_serve_endpoint_is_a_rayservice_worker_whose_readiness_is_probed(
    label: str | None, probe: bool, endpoint: bool
) -> None:
    """KubeRay's ``ray.io/serve: "true"`` and a readiness probe: Ready means in the Service."""
    raw = make_pod("w-1")
    if label is not None:
        raw["metadata"].setdefault("labels", {})["ray.io/serve"] = label
    raw["spec"]["containers"] = [{"name": "ray-worker"}]
    if probe:
        raw["spec"]["containers"][0]["readinessProbe"] = {"exec": {"command": ["true"]}}
    assert pod_info(raw, "ray.io/group").serve_endpoint is endpoint


def test_a_pending_unready_pod_parses_as_such() -> None:
    """No node, phase Pending, not ready, no ready time."""
    info = pod_info(make_pod("w-2", phase="Pending", ready=False), "ray.io/group")
    assert (info.node_name, info.phase, info.ready, info.ready_since_s) == (
        "",
        "Pending",
        False,
        None,
    )
