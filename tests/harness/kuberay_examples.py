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
