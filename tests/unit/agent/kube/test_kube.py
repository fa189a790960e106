"""The pod cache and annotation patches against a Kubernetes API emulator.

A stand-in for the API server, kept for what a real one will not do on cue: a 409 at a chosen
write, a change behind a watch's back, a failing call. (The pod cache, the patches and the agent's
Role run against a real kube-apiserver in tests/real/control_plane/test_real_control_plane.py.)
These tests serve
kmock's ``KubernetesEmulator`` on 127.0.0.1 and point a real ``kubernetes`` ApiClient at it: every
read, watch and patch crosses HTTP as it would in a cluster. kmock keeps objects and streams watch
events but knows nothing of resourceVersion, so :class:`VersionedEmulator` adds what the real API
server does with it: a new version on every write, served in lists, and 409 Conflict for a merge
patch whose ``metadata.resourceVersion`` is not the current one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import attrs
import kmock
import pytest
import tenacity
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler.agent.kube.kube_settings import USER_AGENT, KubeSettings
from keda_ray_scaler.agent.kube.pod_api import KUBE_API_ERRORS
from keda_ray_scaler.agent.kube.pod_cache import KUBE_CACHE_SYNCED, KUBE_RELISTS, PodCache
from keda_ray_scaler.agent.kube.pod_info import pod_info
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.errors import KubernetesError

NS = "ray"
SELECTOR = "ray.io/cluster=demo,ray.io/node-type=worker"
PODS = kmock.resource("v1/pods")


@attrs.define(kw_only=True)
class VersionedEmulator(kmock.KubernetesEmulator):
    """kmock's emulator with resourceVersion semantics (see the module docstring)."""

    last_version: int = 100
    conflicts: int = 0  # answer this many more pod patches with 409, whatever they carry

    async def _handle(self, request: kmock.Request) -> Any:
        if request.resource == PODS and request.action in (
            kmock.action.CREATE,
            kmock.action.UPDATE,
        ):
            meta = request.data.setdefault("metadata", {})
            if request.action == kmock.action.UPDATE:
                key = (PODS, request.namespace, request.name)
                current = self.objects[key].get("metadata", {}).get("resourceVersion")
                wanted = meta.get("resourceVersion")
                if self.conflicts or (wanted is not None and wanted != current):
                    self.conflicts = max(0, self.conflicts - 1)
                    raise kmock.KubernetesError(
                        status=409, reason="Conflict", message="the object has been modified"
                    )
            self.last_version += 1
            sent = meta.get("resourceVersion")
            meta["resourceVersion"] = str(self.last_version)
            try:
                return await super()._handle(request)
            finally:  # keep the recorded request as the client sent it
                if request.action == kmock.action.UPDATE:
                    if sent is None:
                        del meta["resourceVersion"]
                    else:
                        meta["resourceVersion"] = sent
        if request.resource == PODS and request.action == kmock.action.DELETE:
            # the API server's delete preconditions: another uid under the name answers 409
            wanted = ((request.data or {}).get("preconditions") or {}).get("uid")
            key = (PODS, request.namespace, request.name)
            stored = self.objects[key].get("metadata", {}).get("uid") if key in self.objects else ""
            if wanted and stored and stored != wanted:
                raise kmock.KubernetesError(
                    status=409, reason="Conflict", message="Precondition failed: UID mismatch"
                )
        return await super()._handle(request)

    async def _serve_list(self, request: kmock.Request) -> Any:
        body = await super()._serve_list(request)
        body["metadata"]["resourceVersion"] = str(self.last_version)
        return body

    def put_pod(self, name: str, **kw: Any) -> None:
        """Store a pod directly (no watch event), with a fresh resourceVersion."""
        self.last_version += 1
        self.objects[PODS, NS, name] = make_pod(name, version=self.last_version, **kw)

    def change_quietly(self, name: str, annotations: Mapping[str, str | None]) -> None:
        """Change a pod behind the watch's back: a write the cache has not seen yet."""
        self.last_version += 1
        self.objects[PODS, NS, name].patch(
            {
                "metadata": {
                    "annotations": dict(annotations),
                    "resourceVersion": str(self.last_version),
                }
            }
        )


def make_pod(
    name: str,
    *,
    version: int = 1,
    group: str = "cpu",
    annotations: Mapping[str, str] | None = None,
    phase: str = "Running",
    ready: bool = True,
    node: str = "node-1",
    owner: str = "ray-cpu-7d9f",
) -> dict[str, Any]:
    """A worker pod as the API serves it."""
    conditions = [
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "lastTransitionTime": "2026-11-22T10:00:00Z",
        }
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "resourceVersion": str(version),
            "creationTimestamp": "2026-11-22T09:59:00Z",
            "labels": {
                "ray.io/cluster": "demo",
                "ray.io/node-type": "worker",
                "ray.io/group": group,
            },
            "annotations": dict(annotations or {}),
            "ownerReferences": [{"kind": "ReplicaSet", "name": owner, "controller": True}],
        },
        "spec": {"nodeName": node if phase != "Pending" else ""},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"name": "ray", "restartCount": 0}],
        },
    }


def calls(emulator: kmock.KubernetesEmulator) -> list[tuple[str, str]]:
    """The agent's requests, in order, as (action, pod name)."""
    return [
        (r.action.value, r.name or "")
        for r in emulator
        if r.headers.get("User-Agent", "").startswith(USER_AGENT) and r.action is not None
    ]


def requests_of(emulator: kmock.KubernetesEmulator, action: kmock.action) -> list[kmock.Request]:
    """The agent's requests of one kind."""
    return [
        r
        for r in emulator
        if r.action == action and r.headers.get("User-Agent", "").startswith(USER_AGENT)
    ]


@pytest.fixture
async def emulator() -> AsyncIterator[VersionedEmulator]:
    """The emulator serving on 127.0.0.1 (a random port)."""
    async with VersionedEmulator() as handler, kmock.Server(handler):
        handler.resources["v1/pods"] = kmock.ResourceInfo(kind="Pod", namespaced=True)
        yield handler


@pytest.fixture
def api(emulator: VersionedEmulator) -> k8s.CoreV1Api:
    """A real kubernetes CoreV1Api talking HTTP to the emulator."""
    configuration = k8s.Configuration(host=str(emulator.url).rstrip("/"))
    api_client = k8s.ApiClient(configuration)
    api_client.user_agent = f"{USER_AGENT}/test"
    return k8s.CoreV1Api(api_client)


def settings(**kw: Any) -> KubeSettings:
    """Test settings: three attempts per call."""
    fields: dict[str, Any] = {
        "namespace": NS,
        "label_selector": SELECTOR,
        "cluster": "demo",
        "retry_attempts": 3,
        "retry_max_s": 0.01,
    }
    fields.update(kw)
    return KubeSettings(**fields)


@pytest.fixture
def registry() -> CollectorRegistry:
    """A fresh metrics registry."""
    return CollectorRegistry()


@pytest.fixture
def cache(api: k8s.CoreV1Api, registry: CollectorRegistry) -> PodCache:
    """A pod cache that does not wait between retries."""
    return PodCache(api, settings(), registry, wait=tenacity.wait_none())


@pytest.fixture
async def running(cache: PodCache) -> AsyncIterator[Callable[[], asyncio.Task[None]]]:
    """Start the cache's list+watch loop on demand; stopped by the fixture."""
    tasks: list[asyncio.Task[None]] = []

    def start() -> asyncio.Task[None]:
        tasks.append(asyncio.create_task(cache.run()))
        return tasks[-1]

    yield start
    cache.stop()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait for something another task or thread does (fails after ``timeout_s``)."""
    async with asyncio.timeout(timeout_s):
        while not predicate():  # noqa: ASYNC110  # kmock's request log has no event to await
            await asyncio.sleep(0.01)


def watching(emulator: VersionedEmulator, count: int = 1) -> Callable[[], bool]:
    """True once the agent opened ``count`` watches."""
    return lambda: len(requests_of(emulator, kmock.action.WATCH)) >= count


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
        pod_ip="10.1.2.3",
        resource_version="7",
        annotations={"k": "v"},
    )


def test_a_pending_unready_pod_parses_as_such() -> None:
    """No node, phase Pending, not ready, no ready time."""
    info = pod_info(make_pod("w-2", phase="Pending", ready=False), "ray.io/group")
    assert (info.node_name, info.phase, info.ready, info.ready_since_s) == (
        "",
        "Pending",
        False,
        None,
    )
