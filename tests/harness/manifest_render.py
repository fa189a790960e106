"""The kustomize manifests rendered, and KEDA's CRD schemas to validate them: for the tests of
the manifests, the chart and least privilege.

:func:`render` is ``kubectl kustomize`` (cached per path); :func:`schema_errors` is jsonschema's
verdict plus the fields a structural schema would prune, against :func:`crd_schema`, read from
the reference copy of KEDA's CRDs (:mod:`shared_ref`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from shared_ref import KEDA, missing

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "manifests/examples/ray-cluster"
KEDA_CRDS = {
    "ScaledObject": "keda.sh_scaledobjects.yaml",
    "TriggerAuthentication": "keda.sh_triggerauthentications.yaml",
    "ClusterTriggerAuthentication": "keda.sh_clustertriggerauthentications.yaml",
}

Obj = dict[str, Any]


@cache
def render(path: str) -> tuple[Obj, ...]:
    """The objects ``kubectl kustomize <path>`` prints."""
    out = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)


def of_kind(objs: tuple[Obj, ...], kind: str) -> list[Obj]:
    """The objects of one kind."""
    return [o for o in objs if o["kind"] == kind]


def named(objs: tuple[Obj, ...], kind: str, name: str) -> Obj:
    """The one object of ``kind`` called ``name``."""
    found = [o for o in of_kind(objs, kind) if o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: found {len(found)}"
    return found[0]


@cache
def crd_schema(kind: str) -> Obj:
    """The openAPIV3Schema of KEDA's CRD for ``kind`` (served version v1alpha1)."""
    if not (KEDA / "crds").is_dir():
        missing("KEDA's CRDs", KEDA / "crds")
    crd = yaml.safe_load((KEDA / "crds" / KEDA_CRDS[kind]).read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema: Obj = version["schema"]["openAPIV3Schema"]
    return schema


def schema_errors(obj: Obj, schema: Obj) -> list[str]:
    """jsonschema errors plus fields a structural schema would prune (typos vanish silently)."""
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft7Validator(schema)
    errors = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)
    ]
    return errors + [
        f"{p}: unknown field (pruned by the API server)" for p in unknown_fields(obj, schema, "")
    ]


def unknown_fields(value: Any, schema: Obj, where: str) -> Iterator[str]:
    """Paths in ``value`` that ``schema`` does not declare (metadata is free-form here)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict) and "properties" in schema:
        props: Obj = schema["properties"]
        for key, sub in value.items():
            path = f"{where}.{key}" if where else key
            if path == "metadata":
                continue
            if key in props:
                yield from unknown_fields(sub, props[key], path)
            elif not schema.get("additionalProperties"):
                yield path
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, sub in value.items():
            yield from unknown_fields(sub, schema["additionalProperties"], f"{where}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from unknown_fields(item, schema["items"], f"{where}[{i}]")


def cli_args(container: Obj) -> Any:
    """The container's args parsed by the real ``keda-ray-scaler`` parser."""
    from keda_ray_scaler.cli import build_parser

    return build_parser().parse_args(container["args"])
