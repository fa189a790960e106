"""A KubeRay ``RayCluster`` read as worker groups; pure.

The worker groups' Ray logical resources are computed as Ray's own KubeRay integration computes
them (``ray/autoscaler/_private/kuberay/autoscaling_config.py``
``_get_ray_resources_from_group_spec``), so no separate cluster spec file is needed:

- CPU: the group's top-level ``resources.CPU``, else ``rayStartParams.num-cpus``, else the Ray
  container's (the first container's) ``limits.cpu``, else ``requests.cpu``; rounded up;
- GPU: ``resources.GPU``, else ``num-gpus``, else the first ``limits``/``requests`` key ending
  in ``gpu`` (``nvidia.com/gpu``); rounded up; absent when zero;
- memory: ``resources.memory``, else ``rayStartParams.memory``, else ``limits.memory``, else
  ``requests.memory``; bytes, rounded up;
- custom: the top-level ``resources`` (other keys), else the ``rayStartParams.resources`` JSON.

Min and max come from ``minReplicas``/``maxReplicas`` times ``numOfHosts``; idle timeout from
the group's ``idleTimeoutSeconds``, else ``autoscalerOptions.idleTimeoutSeconds``, else 60 s.

A group's Ray node labels (:func:`group_labels`): ``rayStartParams.labels`` (``"k1=v1,k2=v2"``,
or Ray's older JSON form), the group's top-level ``labels`` (KubeRay 1.5+) over them; Ray's own
``ray.io/node-group`` (the group's name) the planner adds to every group. Ray's own autoscaler
reads only the top-level field (it ignores ``rayStartParams`` labels with a warning); the pods'
raylets get both, so both are read. Its ``priority`` (KubeRay 1.7, an int32, default 0).
A label or priority breaking Ray's rules is a ConfigError naming the field, as Ray's autoscaler
refuses it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_UP, InvalidOperation
from typing import Any

from keda_ray_scaler.config_fields import parse_quantity
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.labels import LabelError, Labels
from keda_ray_scaler.model import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_UPSCALING_SPEED,
    INT32_MAX,
    INT32_MIN,
    ClusterSpec,
    Resources,
    WorkerGroup,
)

#: KubeRay's API group, version and plural of ``RayCluster``.
RAYCLUSTER_API = ("ray.io", "v1", "rayclusters")
#: This project's scale target: one ``RayWorkerGroup`` per worker group.
WORKER_GROUP_API = ("keda-ray-scaler.io", "v1alpha1", "rayworkergroups")
#: The fix named when a RayCluster runs Ray's own autoscaler too.
IN_TREE_FIX = (
    "set spec.enableInTreeAutoscaling: false on the RayCluster (and remove the autoscaler "
    "sidecar): two autoscalers would fight over replicas and workersToDelete"
)


def _round_up(value: object, where: str, field: str) -> int:
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError(type(value).__name__)
        amount = parse_quantity(value)
    except (ValueError, InvalidOperation, TypeError) as exc:
        raise ConfigError(where, field, f"{value!r} is not a Kubernetes quantity") from exc
    if not amount.is_finite() or amount < 0:
        raise ConfigError(where, field, f"must be a finite non-negative amount, got {value!r}")
    return int(amount.to_integral_value(rounding=ROUND_UP))


def _int_param(params: Mapping[str, Any], key: str, where: str, field: str) -> int:
    try:
        return int(str(params[key]).strip('"'))
    except ValueError as exc:
        raise ConfigError(where, f"{field}.{key}", f"not an integer: {params[key]!r}") from exc


def _custom(params: Mapping[str, Any], where: str, field: str) -> dict[str, int]:
    """``rayStartParams.resources``: ``'"{\\"Custom1\\": 1}"'`` as Ray's parser reads it."""
    text = str(params["resources"])
    if text[:1] in "\"'" and text[-1:] == text[:1]:
        text = text[1:-1]
    try:
        loaded = json.loads(text.replace("\\", ""))
    except json.JSONDecodeError as exc:
        raise ConfigError(where, f"{field}.resources", f"not a JSON object: {exc.msg}") from exc
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in loaded.items()
    ):
        raise ConfigError(where, f"{field}.resources", "expected {name: integer, ...}")
    return dict(loaded)


@dataclass(frozen=True, slots=True)
class _Declared:
    """Where one group declares a pod's resources: its ``resources``, its ``rayStartParams``
    and its Ray container's (the first container's) ``limits`` and ``requests``."""

    top: Mapping[str, Any]
    params: Mapping[str, Any]
    limits: Mapping[str, Any]
    requests: Mapping[str, Any]
    where: str
    field: str

    @property
    def container(self) -> str:
        """The field path of the Ray container's resources."""
        return f"{self.field}.template.spec.containers[0].resources"

    def amount(self, name: str, param: str, k8s: str | None) -> int | None:
        """``resources[name]``, else ``rayStartParams[param]``, else (unless ``k8s`` is None)
        the container's ``limits[k8s]``, else its ``requests[k8s]``; None when none is set."""
        where, field = self.where, self.field
        if name in self.top:
            return _round_up(self.top[name], where, f"{field}.resources.{name}")
        if param in self.params:
            return _int_param(self.params, param, where, f"{field}.rayStartParams")
        if k8s is not None:
            for kind, values in (("limits", self.limits), ("requests", self.requests)):
                if k8s in values:
                    return _round_up(values[k8s], where, f"{self.container}.{kind}.{k8s}")
        return None


def _declared(group: Mapping[str, Any], where: str, field: str) -> _Declared:
    """The places ``group`` declares resources in; raises ConfigError without a container."""
    containers = ((group.get("template") or {}).get("spec") or {}).get("containers") or []
    if not containers:
        raise ConfigError(where, f"{field}.template.spec.containers", "no Ray container")
    k8s: Mapping[str, Any] = containers[0].get("resources") or {}
    return _Declared(
        top=group.get("resources") or {},
        params=group.get("rayStartParams") or {},
        limits=k8s.get("limits") or {},
        requests=k8s.get("requests") or {},
        where=where,
        field=field,
    )


def group_resources(group: Mapping[str, Any], where: str, field: str) -> Resources:
    """One pod's Ray logical resources, as Ray's KubeRay autoscaling config computes them."""
    declared = _declared(group, where, field)
    top, params = declared.top, declared.params
    out: dict[str, int] = {}
    cpus = declared.amount("CPU", "num-cpus", "cpu")
    if cpus is None:
        raise ConfigError(
            where, field, "no CPU: set rayStartParams num-cpus or the Ray container's cpu limit"
        )
    out["CPU"] = cpus
    gpus = declared.amount("GPU", "num-gpus", None)
    if gpus is not None:
        out["GPU"] = gpus
    else:
        for key, value in [*declared.limits.items(), *declared.requests.items()]:
            if key.endswith("gpu") and (
                found := _round_up(value, where, f"{declared.container}.{key}")
            ):
                out["GPU"] = found
                break
    memory = declared.amount("memory", "memory", "memory")
    if memory is not None:
        out["memory"] = memory
    if top:
        for key, value in top.items():
            if key not in ("CPU", "GPU", "TPU", "memory"):
                out[key] = _round_up(value, where, f"{field}.resources.{key}")
    elif "resources" in params:
        out.update(_custom(params, where, f"{field}.rayStartParams"))
    return Resources.of(out)


def group_labels(group: Mapping[str, Any], where: str, field: str) -> Labels:
    """A group's Ray node labels (the module docstring); ConfigError names the bad field."""
    out: dict[str, str] = {}
    params = group.get("rayStartParams") or {}
    if "labels" in params:
        text = str(params["labels"]).strip().strip("'")
        at = f"{field}.rayStartParams.labels"
        try:
            if text.startswith("{"):
                out.update(Labels.checked(_string_map(json.loads(text), where, at)))
            else:
                out.update(Labels.parse(text))
        except (LabelError, json.JSONDecodeError) as exc:
            raise ConfigError(where, at, str(exc)) from exc
    if group.get("labels") is not None:
        top = _string_map(group["labels"], where, f"{field}.labels")
        try:
            out.update(Labels.checked(top))
        except LabelError as exc:
            raise ConfigError(where, f"{field}.labels", str(exc)) from exc
    return Labels(out)


def _string_map(data: object, where: str, field: str) -> dict[str, str]:
    if not isinstance(data, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ConfigError(where, field, "expected a map of label keys to string values")
    return dict(data)


def group_priority(group: Mapping[str, Any], where: str, field: str) -> int:
    """A group's ``priority`` (KubeRay 1.7): an int32, 0 when absent."""
    raw = group.get("priority")
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int) or not INT32_MIN <= raw <= INT32_MAX:
        raise ConfigError(where, f"{field}.priority", f"expected an int32, got {raw!r}")
    return raw


def in_tree_autoscaling(raycluster: Mapping[str, Any]) -> bool:
    """``spec.enableInTreeAutoscaling`` is true: Ray's own autoscaler manages this cluster."""
    return bool((raycluster.get("spec") or {}).get("enableInTreeAutoscaling"))


def cluster_spec(raycluster: Mapping[str, Any]) -> ClusterSpec:
    """The worker groups of a RayCluster (a JSON dict); ConfigError names the field."""
    meta = raycluster.get("metadata") or {}
    name = str(meta.get("name") or "")
    where = f"RayCluster {meta.get('namespace', '')}/{name}"
    spec = raycluster.get("spec") or {}
    options = spec.get("autoscalerOptions") or {}
    idle_default = float(options.get("idleTimeoutSeconds", DEFAULT_IDLE_TIMEOUT_S))
    speed = 1.0 if options.get("upscalingMode") == "Conservative" else DEFAULT_UPSCALING_SPEED
    groups: list[WorkerGroup] = []
    for i, group in enumerate(spec.get("workerGroupSpecs") or ()):
        field = f"spec.workerGroupSpecs[{i}]"
        group_name = group.get("groupName")
        if not isinstance(group_name, str) or not group_name:
            raise ConfigError(where, f"{field}.groupName", "required")
        hosts = max(int(group.get("numOfHosts") or 1), 1)
        low = int(group.get("minReplicas") or 0) * hosts
        high = int(group.get("maxReplicas") if "maxReplicas" in group else INT32_MAX) * hosts
        if high < low:
            raise ConfigError(where, f"{field}.maxReplicas", f"{high} is below minReplicas {low}")
        idle = float(group.get("idleTimeoutSeconds", idle_default))
        if not math.isfinite(idle) or idle < 0:
            raise ConfigError(where, f"{field}.idleTimeoutSeconds", f"must be >= 0, got {idle}")
        resources = group_resources(group, where, field)
        groups.append(
            WorkerGroup(
                group_name,
                resources,
                low,
                min(high, INT32_MAX),
                idle,
                labels=group_labels(group, where, field),
                priority=group_priority(group, where, field),
            )
        )
    if not groups:
        raise ConfigError(where, "spec.workerGroupSpecs", "no worker group")
    return ClusterSpec(name, tuple(groups), upscaling_speed=speed)
