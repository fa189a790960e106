"""Small builders for the controller's core: ``raycluster(worker("cpu", max=50))``, and objects
as the API server would return what the controller made (``stored(manifest)``)."""

from __future__ import annotations

import copy
from typing import Any

from keda_ray_scaler.controller.objects import Kind, Manifest
from keda_ray_scaler.controller.optin import OPT_IN_ANNOTATION


def worker(name: str = "cpu", *, min: int = 0, max: int = 10, replicas: int = 0) -> dict[str, Any]:
    """One ``workerGroupSpecs`` entry (its template left out: the controller does not read it)."""
    return {"groupName": name, "minReplicas": min, "maxReplicas": max, "replicas": replicas}


def raycluster(
    *groups: dict[str, Any],
    name: str = "demo",
    namespace: str = "ray",
    uid: str = "uid-demo-1",
    annotations: dict[str, str] | None = None,
    in_tree: bool = False,
) -> dict[str, Any]:
    """A RayCluster as the API returns it, opted in unless ``annotations`` says otherwise."""
    notes = {OPT_IN_ANNOTATION: "enabled"} if annotations is None else annotations
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "annotations": notes},
        "spec": {"enableInTreeAutoscaling": in_tree, "workerGroupSpecs": list(groups)},
    }


def stored(manifest: Manifest, *, uid: str | None = None, version: str = "7") -> dict[str, Any]:
    """``manifest`` as the API server returns it once made: uid, resourceVersion, timestamps and
    managed fields added, a label of another tool's, the HPA's replicas and a status."""
    obj = copy.deepcopy(dict(manifest.body))
    meta = obj["metadata"]
    meta["uid"] = uid or f"uid-{manifest.kind.kind.lower()}-{manifest.name}"
    meta["resourceVersion"] = version
    meta["creationTimestamp"] = "2026-11-28T10:00:00Z"
    meta["managedFields"] = [{"manager": "keda-ray-scaler-controller", "operation": "Apply"}]
    meta["labels"]["team"] = "ml"
    if manifest.kind is Kind.RAY_WORKER_GROUP:
        obj["spec"]["replicas"] = 3  # the HPA's, through /scale
        obj["status"] = {"replicas": 3, "selector": "ray.io/group=cpu"}
    if manifest.kind is Kind.SCALED_OBJECT:
        meta["finalizers"] = ["finalizer.keda.sh"]
        obj["status"] = {"hpaName": f"keda-hpa-{manifest.name}"}
    return obj


def foreign(kind: Kind, name: str, namespace: str = "ray") -> dict[str, Any]:
    """An object of ``kind`` named ``name`` that a user wrote by hand (no mark of ours)."""
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-hand-{name}"},
    }
