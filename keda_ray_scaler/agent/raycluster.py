"""A KubeRay ``RayCluster`` read as worker groups, and the scale decision for one group; pure.

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

:func:`decide` is the KubeRay half of "how a decision is applied": it turns a
``RayWorkerGroup``'s ``spec.replicas`` (set by KEDA's HPA through ``/scale``) into the group's
new ``replicas`` and ``scaleStrategy.workersToDelete``. KubeRay's ``reconcilePods`` always
deletes the pods named in ``workersToDelete`` and, when the group still has more pods than
``replicas`` and in-tree autoscaling is off, deletes others at random; so ``replicas`` is only
ever lowered by the number of drained victims named in the same patch.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_UP, InvalidOperation
from typing import Any

from keda_ray_scaler.config import parse_quantity
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.model import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_UPSCALING_SPEED,
    INT32_MAX,
    ClusterSpec,
    Resources,
    WorkerGroup,
)

#: KubeRay's API group, version and plural of ``RayCluster``.
RAYCLUSTER_API = ("ray.io", "v1", "rayclusters")
#: This project's scale target: one ``RayWorkerGroup`` per worker group.
WORKER_GROUP_API = ("keda-ray-scaler.io", "v1alpha1", "rayworkergroups")
#: Ray's default when ``replicas`` is absent (``node_provider._worker_group_replicas``).
DEFAULT_REPLICAS = 1
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


def group_resources(group: Mapping[str, Any], where: str, field: str) -> Resources:
    """One pod's Ray logical resources, as Ray's KubeRay autoscaling config computes them."""
    top: Mapping[str, Any] = group.get("resources") or {}
    params: Mapping[str, Any] = group.get("rayStartParams") or {}
    containers = ((group.get("template") or {}).get("spec") or {}).get("containers") or []
    if not containers:
        raise ConfigError(where, f"{field}.template.spec.containers", "no Ray container")
    k8s: Mapping[str, Any] = containers[0].get("resources") or {}
    limits: Mapping[str, Any] = k8s.get("limits") or {}
    requests: Mapping[str, Any] = k8s.get("requests") or {}
    container = f"{field}.template.spec.containers[0].resources"
    out: dict[str, int] = {}
    if "CPU" in top:
        out["CPU"] = _round_up(top["CPU"], where, f"{field}.resources.CPU")
    elif "num-cpus" in params:
        out["CPU"] = _int_param(params, "num-cpus", where, f"{field}.rayStartParams")
    elif "cpu" in limits:
        out["CPU"] = _round_up(limits["cpu"], where, f"{container}.limits.cpu")
    elif "cpu" in requests:
        out["CPU"] = _round_up(requests["cpu"], where, f"{container}.requests.cpu")
    else:
        raise ConfigError(
            where, field, "no CPU: set rayStartParams num-cpus or the Ray container's cpu limit"
        )
    if "GPU" in top:
        out["GPU"] = _round_up(top["GPU"], where, f"{field}.resources.GPU")
    elif "num-gpus" in params:
        out["GPU"] = _int_param(params, "num-gpus", where, f"{field}.rayStartParams")
    else:
        for key, value in [*limits.items(), *requests.items()]:
            if key.endswith("gpu") and (gpus := _round_up(value, where, f"{container}.{key}")):
                out["GPU"] = gpus
                break
    if "memory" in top:
        out["memory"] = _round_up(top["memory"], where, f"{field}.resources.memory")
    elif "memory" in params:
        out["memory"] = _int_param(params, "memory", where, f"{field}.rayStartParams")
    elif "memory" in limits:
        out["memory"] = _round_up(limits["memory"], where, f"{container}.limits.memory")
    elif "memory" in requests:
        out["memory"] = _round_up(requests["memory"], where, f"{container}.requests.memory")
    if top:
        for key, value in top.items():
            if key not in ("CPU", "GPU", "TPU", "memory"):
                out[key] = _round_up(value, where, f"{field}.resources.{key}")
    elif "resources" in params:
        out.update(_custom(params, where, f"{field}.rayStartParams"))
    return Resources.of(out)


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
        groups.append(WorkerGroup(group_name, resources, low, min(high, INT32_MAX), idle))
    if not groups:
        raise ConfigError(where, "spec.workerGroupSpecs", "no worker group")
    return ClusterSpec(name, tuple(groups), upscaling_speed=speed)


@dataclass(frozen=True, slots=True)
class GroupState:
    """One worker group of a RayCluster as read (``index`` into ``workerGroupSpecs``)."""

    name: str
    index: int
    replicas: int
    min_replicas: int
    max_replicas: int
    workers_to_delete: tuple[str, ...] = ()


def group_state(raycluster: Mapping[str, Any], group: str) -> GroupState | None:
    """The named worker group's scaling fields, or None when the RayCluster has no such group."""
    for i, g in enumerate((raycluster.get("spec") or {}).get("workerGroupSpecs") or ()):
        if g.get("groupName") == group:
            strategy = g.get("scaleStrategy") or {}
            return GroupState(
                name=group,
                index=i,
                replicas=int(g.get("replicas", DEFAULT_REPLICAS)),
                min_replicas=int(g.get("minReplicas") or 0),
                max_replicas=int(g.get("maxReplicas") if "maxReplicas" in g else INT32_MAX),
                workers_to_delete=tuple(strategy.get("workersToDelete") or ()),
            )
    return None


class Action(enum.StrEnum):
    """What :func:`decide` asks for (a metric label and a log field)."""

    NONE = "none"  # replicas already as desired
    SCALE_UP = "scale_up"  # replicas raised (bounded by min/max)
    SCALE_DOWN = "scale_down"  # replicas lowered by exactly the victims named
    CLEAR = "clear"  # only processed workersToDelete entries removed
    WAIT_VICTIMS = "wait_victims"  # fewer wanted, but no drained victim to name
    WAIT_OPERATOR = "wait_operator"  # KubeRay has not yet applied the last change
    SYNC = "sync"  # replicas written as KubeRay keeps them (clamped to min/max by an edit)


@dataclass(frozen=True, slots=True)
class ScaleDecision:
    """The group's new ``replicas`` and ``workersToDelete``, and why."""

    action: Action
    replicas: int
    workers_to_delete: tuple[str, ...]
    reason: str

    @property
    def changes(self) -> bool:
        """A patch is needed."""
        return self.action in (Action.SCALE_UP, Action.SCALE_DOWN, Action.CLEAR, Action.SYNC)


def kept_by_kuberay(state: GroupState) -> int:
    """The replicas KubeRay's operator keeps for the group: ``replicas`` clamped to min/max
    (``GetWorkerGroupDesiredReplicas``; min above max: max). It creates or deletes (at random)
    pods toward this number without writing it to ``replicas``."""
    if state.min_replicas > state.max_replicas:
        return state.max_replicas
    return min(max(state.replicas, state.min_replicas), state.max_replicas)


def decide(
    state: GroupState, desired: int, pods: Sequence[str], victims: Sequence[str]
) -> ScaleDecision:
    """The change that brings ``state`` toward ``desired`` replicas; pure.

    ``pods`` are the group's active pods (a synced cache); ``victims`` the group's published
    victims (drained by Ray, confirmed). The group's replicas are what KubeRay keeps
    (:func:`kept_by_kuberay`: an edited min/max moves them without writing ``replicas``).
    Rules, in order:

    1. a name in ``workersToDelete`` that is still an active pod: KubeRay has not processed the
       list yet; wait (Ray's ``safe_to_scale``);
    2. more pods than the replicas: KubeRay is about to delete some at random; wait;
    3. ``desired`` (clamped to min/max) above the replicas: raise ``replicas``;
    4. below: lower ``replicas`` by the number of victims it can name (at most the difference),
       naming them; with no victim, change nothing but 6;
    5. processed ``workersToDelete`` entries are cleared with any change (or alone);
    6. ``replicas`` unlike the replicas KubeRay keeps (a min raised above it, a max lowered
       below it): written as kept, so that a later edit of min or max never makes KubeRay
       delete pods at random toward a stale ``replicas``.
    """
    kept = kept_by_kuberay(state)
    if kept != state.replicas:
        state = replace(state, replicas=kept)
        synced = ScaleDecision(Action.SYNC, kept, (), f"replicas kept by KubeRay: {kept}")
    else:
        synced = None
    decision = _decide(state, desired, pods, victims)
    if synced is not None and not decision.changes and decision.action != Action.WAIT_OPERATOR:
        return synced
    return decision


def _decide(
    state: GroupState, desired: int, pods: Sequence[str], victims: Sequence[str]
) -> ScaleDecision:
    active = set(pods)
    pending = [p for p in state.workers_to_delete if p in active]
    if pending:
        return ScaleDecision(
            Action.WAIT_OPERATOR,
            state.replicas,
            state.workers_to_delete,
            f"KubeRay has not deleted {pending} yet",
        )
    if len(active) > state.replicas:
        return ScaleDecision(
            Action.WAIT_OPERATOR,
            state.replicas,
            state.workers_to_delete,
            f"{len(active)} pods above replicas {state.replicas}",
        )
    target = min(max(desired, state.min_replicas), state.max_replicas)
    if target > state.replicas:
        return ScaleDecision(
            Action.SCALE_UP,
            target,
            (),
            f"replicas {state.replicas} -> {target} (desired {desired})",
        )
    if target < state.replicas:
        named = sorted(v for v in set(victims) if v in active)[: state.replicas - target]
        if named:
            new = state.replicas - len(named)
            return ScaleDecision(
                Action.SCALE_DOWN, new, tuple(named), f"replicas {state.replicas} -> {new}"
            )
        if state.workers_to_delete:
            return ScaleDecision(Action.CLEAR, state.replicas, (), "no drained victim to name")
        return ScaleDecision(
            Action.WAIT_VICTIMS,
            state.replicas,
            (),
            f"desired {target} < replicas {state.replicas}, no drained victim to name",
        )
    if state.workers_to_delete:
        return ScaleDecision(Action.CLEAR, state.replicas, (), "workersToDelete processed")
    return ScaleDecision(Action.NONE, state.replicas, (), "replicas as desired")


def scale_patch(resource_version: str, state: GroupState, decision: ScaleDecision) -> list[Any]:
    """One JSON patch: the RayCluster's version and the group's name at its index are
    preconditions (409/422 when either changed), then ``replicas`` and ``workersToDelete``."""
    base = f"/spec/workerGroupSpecs/{state.index}"
    return [
        {"op": "test", "path": f"{base}/groupName", "value": state.name},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": resource_version},
        {"op": "add", "path": f"{base}/replicas", "value": decision.replicas},
        {
            "op": "add",
            "path": f"{base}/scaleStrategy",
            "value": {"workersToDelete": list(decision.workers_to_delete)},
        },
    ]
