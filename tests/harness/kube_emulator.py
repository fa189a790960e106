"""A Kubernetes API emulator with resourceVersion semantics, and the fixtures that serve it.

A stand-in for the API server, kept for what a real one will not do on cue: a 409 at a chosen
write, a change behind a watch's back, a failing call. The fixtures serve kmock's
``KubernetesEmulator`` on 127.0.0.1 and point a real ``kubernetes`` ApiClient at it: every read,
watch and patch crosses HTTP as it would in a cluster. kmock keeps objects and streams watch
events but knows nothing of resourceVersion, so :class:`VersionedEmulator` adds what the real API
server does with it: a new version on every write, served in lists, and 409 Conflict for a merge
patch whose ``metadata.resourceVersion`` is not the current one.

Used by the pod cache's tests (tests/unit/agent/kube/test_kube.py) and the victim protocol's.
The fixtures (``emulator``, ``api``, ``registry``, ``cache``, ``running``) work in a test module
that imports them by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import attrs
import kmock
import pytest
import tenacity
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.kube.kube_settings import USER_AGENT, KubeSettings
from keda_ray_scaler.agent.kube.pod_cache import PodCache

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
    owner_kind: str = "ReplicaSet",
) -> dict[str, Any]:
    """A worker pod as the API serves it, controlled by ``owner`` of ``owner_kind`` (uid
    ``uid-<owner>``): a Deployment's ReplicaSet ``<deployment>-<pod-template-hash>`` with that
    label on the pod, or KubeRay's RayCluster; ``owner=""``: no owner (a pod somebody labelled
    for the cluster)."""
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
                **_owner_labels(owner, owner_kind),
            },
            "annotations": dict(annotations or {}),
            "ownerReferences": _owner_references(owner, owner_kind),
        },
        "spec": {"nodeName": node if phase != "Pending" else ""},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"name": "ray", "restartCount": 0}],
        },
    }


#: the apiVersion of each kind of owner a worker pod has
OWNER_API_VERSIONS = {"ReplicaSet": "apps/v1", "RayCluster": "ray.io/v1"}


def _owner_references(owner: str, kind: str) -> list[dict[str, Any]]:
    if not owner:
        return []
    api_version = OWNER_API_VERSIONS.get(kind, "v1")
    ref = {"apiVersion": api_version, "kind": kind, "name": owner, "uid": f"uid-{owner}"}
    return [{**ref, "controller": True, "blockOwnerDeletion": True}]


def _owner_labels(owner: str, kind: str) -> dict[str, str]:
    """The Deployment controller's ``pod-template-hash``: the ReplicaSet's name ends with it."""
    if kind != "ReplicaSet" or "-" not in owner:
        return {}
    return {"pod-template-hash": owner.rsplit("-", 1)[1]}


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
