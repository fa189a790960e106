"""The shipped KubeRay manifests read as dicts: the example RayCluster KubeRay tests build on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
KUBERAY = REPO / "manifests" / "kuberay"


def yaml_docs(path: Path) -> list[dict[str, Any]]:
    """The YAML documents of a file, the empty ones left out."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def example() -> dict[str, Any]:
    """The shipped example RayCluster, with the namespace kustomize gives it."""
    (rc,) = yaml_docs(KUBERAY / "example" / "raycluster.yaml")
    rc["metadata"]["namespace"] = "ray"
    return rc


def example_without_agent() -> dict[str, Any]:
    """The example RayCluster as a user (or a RayJob's or RayService's controller) writes it
    for the controller to serve: opted in by its label, its head without the agent container,
    volumes and ServiceAccount (the webhook adds them)."""
    from keda_ray_scaler.controller.optin import OPT_IN_LABEL

    cluster = example()
    cluster["metadata"].setdefault("labels", {})[OPT_IN_LABEL] = "enabled"
    pod = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    pod["containers"] = [c for c in pod["containers"] if c["name"] != "agent"]
    pod["volumes"] = [v for v in pod.get("volumes", []) if not v["name"].startswith("agent-")]
    pod.pop("serviceAccountName")
    pod.pop("automountServiceAccountToken")
    return cluster
