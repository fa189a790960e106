"""KubeRay mode's objects in the API emulator: a RayCluster, RayWorkerGroups, ScaledObjects.

:class:`KubeRayEmulator` is :class:`~kube_emulator.VersionedEmulator` (pods with
resourceVersion semantics) that also serves what the KubeRay applier reads and writes: the
RayCluster, patched by JSON patch with the API server's preconditions (a ``test`` op that fails
answers 422, a ``resourceVersion`` that is not the current one 409), the RayWorkerGroups and
their status subresource (merge patches), and the namespace's ScaledObjects. The applier reaches
it through a real ``kubernetes`` CustomObjectsApi, so every call crosses HTTP. (The applier runs
against a real kube-apiserver with KubeRay's CRD in tests/real/control_plane/test_kuberay_api.py.)

The fixtures ``emulator`` and ``cache`` replace kube_emulator's in a test module that imports
them by name: kube_emulator's ``api`` and ``running`` then serve from this emulator, and the
pod cache takes the RayCluster's pods for workers (KubeRay mode); :func:`kuberay_pod` puts one.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import attrs
import kmock
import pytest
import tenacity
from fake_clock import FakeClock
from kube_emulator import NS, VersionedEmulator, settings
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.kube.kube_retry import KubeApiErrors
from keda_ray_scaler.agent.kube.kube_settings import USER_AGENT
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.kube.pod_owner import raycluster_owner
from keda_ray_scaler.agent.kuberay.applier import KubeRayApplier
from keda_ray_scaler.agent.kuberay.group_round import ApplierSettings
from keda_ray_scaler.agent.kuberay.kuberay_api import KubeRayApi, KubeRaySettings
from keda_ray_scaler.agent.kuberay.round_reads import Watches

RAYCLUSTERS = kmock.resource("ray.io/v1/rayclusters")
RAYWORKERGROUPS = kmock.resource("keda-ray-scaler.io/v1alpha1/rayworkergroups")
SCALEDOBJECTS = kmock.resource("keda.sh/v1alpha1/scaledobjects")
#: the RayCluster's uid as the emulator stores it (pods it owns name it)
RAYCLUSTER_UID = "uid-demo"


@attrs.define(kw_only=True)
class KubeRayEmulator(VersionedEmulator):
    """Pods, and the RayCluster's JSON patches with their preconditions (module doc)."""

    async def _handle(self, request: kmock.Request) -> Any:
        sent = request.data
        patching = request.resource == RAYCLUSTERS and request.action == kmock.action.UPDATE
        if patching and isinstance(sent, list):  # a JSON patch: kmock merges dicts only
            # kmock serves the request it recorded: a merge body meanwhile (frozen: set by hand)
            object.__setattr__(request, "data", self._json_patched(request))
        try:
            return await super()._handle(request)
        finally:  # keep the recorded request as the client sent it
            object.__setattr__(request, "data", sent)

    def _json_patched(self, request: kmock.Request) -> dict[str, Any]:
        """The stored RayCluster with the patch applied, as a merge body kmock can store."""
        stored = self.objects[RAYCLUSTERS, request.namespace, request.name]
        obj = copy.deepcopy(stored.raw)
        current = str(obj["metadata"].get("resourceVersion"))
        for op in request.data:
            *parents, last = _pointer(op["path"])
            parent = obj
            for key in parents:
                parent = parent[key]
            if op["op"] == "test" and _get(parent, last) != op["value"]:
                raise kmock.KubernetesError(status=422, reason="Invalid", message="test failed")
            if op["path"] == "/metadata/resourceVersion" and op["value"] != current:
                raise kmock.KubernetesError(
                    status=409, reason="Conflict", message="the object has been modified"
                )
            if op["op"] in ("add", "replace"):
                parent[last] = op["value"]
        self.last_version += 1
        return {"metadata": {"resourceVersion": str(self.last_version)}, "spec": obj["spec"]}

    def put(self, resource: kmock.resource, obj: dict[str, Any]) -> None:
        """Store one object directly (no watch event), with a fresh resourceVersion."""
        self.last_version += 1
        obj["metadata"]["resourceVersion"] = str(self.last_version)
        self.objects[resource, NS, obj["metadata"]["name"]] = obj

    def stored(self, resource: kmock.resource, name: str) -> dict[str, Any]:
        """One object as stored now."""
        return dict(self.objects[resource, NS, name].raw)

    def group(self, name: str = "cpu") -> dict[str, Any]:
        """The RayCluster's worker group ``name`` as stored now."""
        groups = self.stored(RAYCLUSTERS, "demo")["spec"]["workerGroupSpecs"]
        (group,) = [g for g in groups if g["groupName"] == name]
        return dict(group)


def kuberay_pod(emulator: VersionedEmulator, name: str, group: str = "cpu") -> None:
    """A worker pod of RayCluster ``demo``'s ``group``, as KubeRay makes it (no watch event)."""
    emulator.put_pod(name, group=group, owner="demo", owner_kind="RayCluster")


def _pointer(path: str) -> list[Any]:
    """A JSON pointer's keys, list indices as ints."""
    return [int(k) if k.isdigit() else k for k in path.lstrip("/").split("/")]


def _get(parent: Any, key: Any) -> Any:
    return parent[key] if isinstance(parent, list) else parent.get(key)


def raycluster(replicas: int, *, groups: tuple[str, ...] = ("cpu",)) -> dict[str, Any]:
    """RayCluster ``demo`` (uid :data:`RAYCLUSTER_UID`): each group at ``replicas``, 0 to 50."""
    specs = [
        {
            "groupName": name,
            "replicas": replicas,
            "minReplicas": 0,
            "maxReplicas": 50,
            "rayStartParams": {"num-cpus": "10"},
            "template": {"spec": {"containers": [{"name": "ray-worker"}]}},
        }
        for name in groups
    ]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": NS, "uid": RAYCLUSTER_UID},
        "spec": {"headGroupSpec": {"rayStartParams": {}}, "workerGroupSpecs": specs},
    }


def rayworkergroup(
    name: str, group: str, replicas: int | None, *, created: str = "2026-11-22T09:00:00Z"
) -> dict[str, Any]:
    """A RayWorkerGroup naming RayCluster ``demo``'s ``group``, ``spec.replicas`` as KEDA's HPA
    wrote it (None: unset), created at ``created``."""
    spec: dict[str, Any] = {"rayCluster": "demo", "groupName": group}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "keda-ray-scaler.io/v1alpha1",
        "kind": "RayWorkerGroup",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
        },
        "spec": spec,
    }


@pytest.fixture
async def emulator() -> AsyncIterator[KubeRayEmulator]:
    """The emulator serving pods and KubeRay mode's objects on 127.0.0.1 (a random port)."""
    async with KubeRayEmulator() as handler, kmock.Server(handler):
        handler.resources["v1/pods"] = kmock.ResourceInfo(kind="Pod", namespaced=True)
        handler.resources["ray.io/v1/rayclusters"] = kmock.ResourceInfo(
            kind="RayCluster", namespaced=True
        )
        handler.resources["keda-ray-scaler.io/v1alpha1/rayworkergroups"] = kmock.ResourceInfo(
            kind="RayWorkerGroup", namespaced=True, subresources={"status", "scale"}
        )
        handler.resources["keda.sh/v1alpha1/scaledobjects"] = kmock.ResourceInfo(
            kind="ScaledObject", namespaced=True
        )
        yield handler


@pytest.fixture
def cache(api: k8s.CoreV1Api, registry: CollectorRegistry) -> PodCache:
    """KubeRay mode's pod cache: RayCluster ``demo``'s pods are its workers (any uid until told
    one), no wait between retries."""
    owner = raycluster_owner("demo")
    return PodCache(api, settings(owner=owner), registry, wait=tenacity.wait_none())


def kuberay_api(emulator: KubeRayEmulator, errors: KubeApiErrors) -> KubeRayApi:
    """The applier's calls through a real CustomObjectsApi talking HTTP to ``emulator``, failed
    ones counted in ``errors`` (the pod cache's: one per registry)."""
    configuration = k8s.Configuration(host=str(emulator.url).rstrip("/"))
    api_client = k8s.ApiClient(configuration)
    api_client.user_agent = f"{USER_AGENT}/test"
    return KubeRayApi(
        k8s.CustomObjectsApi(api_client),
        KubeRaySettings(namespace=NS, raycluster="demo", retry_attempts=1),
        errors,
        wait=tenacity.wait_none(),
    )


def applier_on(
    emulator: KubeRayEmulator,
    cache: PodCache,
    registry: CollectorRegistry,
    watches: Watches | None = None,
) -> KubeRayApplier:
    """RayCluster demo's applier on ``emulator`` and the pod cache, with no victims, no lead;
    reading from ``watches`` (None: by GET)."""
    return KubeRayApplier(
        kuberay_api(emulator, cache.api_errors),
        cache,
        lambda: cache.synced,
        dict,
        FakeClock(1_790_000_000.0, advance_on_sleep=False),
        registry,
        ApplierSettings(cluster="demo"),
        watches=watches,
    )
