"""A KEDA ScaledObject as KubeRay mode reads it: parsed once, where it is read from the API.

:func:`parse_scaled_object` is the one reader of a ScaledObject's JSON
(:meth:`~keda_ray_scaler.agent.kuberay.kuberay_api.KubeRayApi.scaled_objects` calls it); the
leads (:mod:`~keda_ray_scaler.agent.kuberay.scale_up_lead`,
:mod:`~keda_ray_scaler.agent.kuberay.scale_down_lead`) and the RayWorkerGroup status
(:mod:`~keda_ray_scaler.agent.kuberay.rwg_status`) read only the :class:`ScaledObject` view: its
target, its bounds, its pause annotations and its HPA ``behavior``, each default filled in.

Malformed values are read as they always were: KEDA's CRD types the counts and the policies'
values as integers (the API server refuses anything else, and prunes nulls), so the view
applies the same ``int()``/``float()`` the readers did; a value that fails them raises
``ValueError`` or ``TypeError``, which ends the applier's round (logged by
:func:`~keda_ray_scaler.agent.modes.run_applier`), now at the read rather than at first use.
An unknown ``selectPolicy`` counts as ``Max`` and a policy ``type`` other than ``Percent`` as
``Pods``, as before; an empty ``policies`` list takes the HPA's defaults.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: KEDA's pause annotations: ``paused`` and ``paused-replicas`` hold both directions
PAUSED = "autoscaling.keda.sh/paused"
PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas"
#: KEDA's pause annotations of one direction
PAUSED_SCALE_OUT = "autoscaling.keda.sh/paused-scale-out"
PAUSED_SCALE_IN = "autoscaling.keda.sh/paused-scale-in"

#: KEDA's ``minReplicaCount`` when the ScaledObject sets none
KEDA_DEFAULT_MIN = 0
#: KEDA's ``maxReplicaCount`` when the ScaledObject sets none
KEDA_DEFAULT_MAX = 100
#: KEDA's ``cooldownPeriod`` when the ScaledObject sets none
KEDA_DEFAULT_COOLDOWN_S = 300.0


class SelectPolicy(enum.StrEnum):
    """Which of an HPA direction's policies wins (``selectPolicy``; Max when unset)."""

    MAX = "Max"
    MIN = "Min"
    DISABLED = "Disabled"


@dataclass(frozen=True, slots=True)
class HpaPolicy:
    """One HPA scaling policy: ``value`` pods, or ``value`` percent, per period (its
    ``periodSeconds`` is not read: the leads look one period ahead)."""

    percent: bool  # type "Percent"; any other type counts pods
    value: int


@dataclass(frozen=True, slots=True)
class ScalingRules:
    """One direction of the HPA's ``behavior`` (scaleUp or scaleDown), the defaults filled in."""

    stabilization_window_s: int
    select_policy: SelectPolicy = SelectPolicy.MAX
    policies: tuple[HpaPolicy, ...] = ()


#: Kubernetes' HPA scale-up when the ScaledObject sets none (autoscaling/v2
#: HPAScalingRules, as KEDA's CRD documents it): no window, 4 pods or 100 % per 15 s, Max
HPA_DEFAULT_SCALE_UP = ScalingRules(
    stabilization_window_s=0,
    policies=(HpaPolicy(percent=False, value=4), HpaPolicy(percent=True, value=100)),
)
#: Kubernetes' HPA scale-down window when the ScaledObject sets none (the same source)
HPA_DEFAULT_SCALE_DOWN_WINDOW_S = 300
#: Kubernetes' HPA scale-down when the ScaledObject sets none: a 300 s window, 100 % per 15 s
HPA_DEFAULT_SCALE_DOWN = ScalingRules(
    stabilization_window_s=HPA_DEFAULT_SCALE_DOWN_WINDOW_S,
    policies=(HpaPolicy(percent=True, value=100),),
)


@dataclass(frozen=True, slots=True)
class Pause:
    """KEDA's pause annotations on a ScaledObject (``"true"`` in any case pauses)."""

    paused: bool = False
    replicas: str | None = None  # ``paused-replicas`` as written (shown, never counted)
    scale_out: bool = False
    scale_in: bool = False


@dataclass(frozen=True, slots=True)
class ScaledObject:
    """What KubeRay mode reads of one ScaledObject; :func:`parse_scaled_object` builds it."""

    name: str = ""
    target_kind: str = ""  # ``scaleTargetRef.kind``
    target_name: str = ""  # ``scaleTargetRef.name``
    min_replicas: int = KEDA_DEFAULT_MIN
    max_replicas: int = KEDA_DEFAULT_MAX
    cooldown_s: float = KEDA_DEFAULT_COOLDOWN_S
    pause: Pause = field(default_factory=Pause)
    scale_up: ScalingRules = HPA_DEFAULT_SCALE_UP
    scale_down: ScalingRules = HPA_DEFAULT_SCALE_DOWN

    def holds_both_ways(self) -> str:
        """Why KEDA holds this ScaledObject in both directions ("" when it does not)."""
        if self.pause.paused:
            return f"ScaledObject {self.name} is paused"
        if self.pause.replicas is not None:
            return f"ScaledObject {self.name} is paused at {self.pause.replicas} replicas"
        return ""

    def holds_scale_out(self) -> str:
        """Why KEDA holds this ScaledObject's scale-up ("" when it does not)."""
        if both := self.holds_both_ways():
            return both
        return f"ScaledObject {self.name} has scale-out paused" if self.pause.scale_out else ""

    def holds_scale_in(self) -> str:
        """Why KEDA holds this ScaledObject's scale-down ("" when it does not)."""
        if both := self.holds_both_ways():
            return both
        return f"ScaledObject {self.name} has scale-in paused" if self.pause.scale_in else ""


def parse_scaled_object(obj: Mapping[str, Any]) -> ScaledObject:
    """The view of one ScaledObject's JSON (module doc: defaults and malformed values)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    advanced = (spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}
    behavior = advanced.get("behavior") or {}
    return ScaledObject(
        name=meta.get("name", ""),
        target_kind=ref.get("kind", ""),
        target_name=ref.get("name", ""),
        min_replicas=int(_set(spec, "minReplicaCount", KEDA_DEFAULT_MIN)),
        max_replicas=int(_set(spec, "maxReplicaCount", KEDA_DEFAULT_MAX)),
        cooldown_s=float(_set(spec, "cooldownPeriod", KEDA_DEFAULT_COOLDOWN_S)),
        pause=_pause(meta.get("annotations") or {}),
        scale_up=_rules(behavior.get("scaleUp") or {}, HPA_DEFAULT_SCALE_UP),
        scale_down=_rules(behavior.get("scaleDown") or {}, HPA_DEFAULT_SCALE_DOWN),
    )


def targeting(scaled: Sequence[ScaledObject], name: str) -> list[ScaledObject]:
    """The ScaledObjects whose ``scaleTargetRef`` is the RayWorkerGroup ``name``."""
    return [so for so in scaled if so.target_kind == "RayWorkerGroup" and so.target_name == name]


def bounds_problem(scaled_object: ScaledObject, low: int, high: int) -> str:
    """Empty when the ScaledObject's min/max equal the group's; else what differs."""
    problems = []
    if scaled_object.min_replicas != low:
        problems.append(f"minReplicaCount {scaled_object.min_replicas} != group minReplicas {low}")
    if scaled_object.max_replicas != high:
        problems.append(f"maxReplicaCount {scaled_object.max_replicas} != group maxReplicas {high}")
    return f"ScaledObject {scaled_object.name}: " + "; ".join(problems) if problems else ""


def _set(spec: Mapping[str, Any], key: str, default: object) -> Any:
    """``spec[key]``, or ``default`` when it is absent or null."""
    value = spec.get(key)
    return default if value is None else value


def _pause(notes: Mapping[str, Any]) -> Pause:
    def true(key: str) -> bool:
        return str(notes.get(key, "")).lower() == "true"

    replicas = notes.get(PAUSED_REPLICAS)
    return Pause(
        paused=true(PAUSED),
        replicas=None if PAUSED_REPLICAS not in notes else str(replicas),
        scale_out=true(PAUSED_SCALE_OUT),
        scale_in=true(PAUSED_SCALE_IN),
    )


def _rules(rules: Mapping[str, Any], default: ScalingRules) -> ScalingRules:
    """One direction of ``behavior``; unset fields take ``default``'s."""
    window = rules.get("stabilizationWindowSeconds")
    return ScalingRules(
        stabilization_window_s=default.stabilization_window_s if window is None else int(window),
        select_policy=_select(rules.get("selectPolicy")),
        policies=tuple(_policy(p) for p in rules.get("policies") or ()) or default.policies,
    )


def _policy(policy: Mapping[str, Any]) -> HpaPolicy:
    return HpaPolicy(percent=policy.get("type") == "Percent", value=int(policy.get("value") or 0))


def _select(value: object) -> SelectPolicy:
    """``selectPolicy``: Max when unset or unknown."""
    try:
        return SelectPolicy(value) if isinstance(value, str) and value else SelectPolicy.MAX
    except ValueError:
        return SelectPolicy.MAX
