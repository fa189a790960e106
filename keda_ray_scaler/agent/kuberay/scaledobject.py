"""A KEDA ScaledObject as KubeRay mode reads it: parsed once, where it is read from the API.

:func:`parse_scaled_object` is the one reader of a ScaledObject's JSON
(:meth:`~keda_ray_scaler.agent.kuberay.kuberay_api.KubeRayApi.scaled_objects` reads the namespace's
with :func:`read_scaled_objects`); the leads (:mod:`~keda_ray_scaler.agent.kuberay.scale_up_lead`,
:mod:`~keda_ray_scaler.agent.kuberay.scale_down_lead`) and the RayWorkerGroup status
(:mod:`~keda_ray_scaler.agent.kuberay.rwg_status`) read only the :class:`ScaledObject` view: its
target, its bounds, its pause annotations and its HPA ``behavior``, each default filled in.

A malformed object is refused whole (:class:`ScaledObjectRefused`, naming the object, the field
and what is wrong): an object where an object is expected, a string for a name, and for the
counts, the cooldown, the windows and the policies' values a non-negative integer (the
cooldown: a non-negative number), as KEDA's CRD types them. :func:`read_scaled_objects` leaves
it out, and with it every ScaledObject targeting the same RayWorkerGroup: that group reads as
one no ScaledObject targets, so no lead moves it and the HPA's replicas are carried as they
are. An unknown ``selectPolicy`` counts as ``Max`` and a policy ``type`` other than ``Percent``
as ``Pods``, as before; an empty ``policies`` list takes the HPA's defaults.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from keda_ray_scaler.errors import Malformed, ScaledObjectRefused

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
#: the ``scaleTargetRef.kind`` of the ScaledObjects KubeRay mode reads
WORKER_GROUP_KIND = "RayWorkerGroup"
#: where a ScaledObject keeps its HPA ``behavior`` (a refused field's name starts with it)
BEHAVIOR = "spec.advanced.horizontalPodAutoscalerConfig.behavior"


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


def parse_scaled_object(obj: object) -> ScaledObject:
    """The view of one ScaledObject's JSON; :class:`ScaledObjectRefused` when malformed (module
    doc: defaults and what is refused)."""
    if not isinstance(obj, Mapping):
        raise ScaledObjectRefused("", "(the object)", Malformed.NOT_AN_OBJECT, got=obj)
    read = _Reader()
    meta = read.mapping(obj, "metadata", "metadata")
    read.version = str(meta.get("resourceVersion") or "")
    read.name = read.text(meta, "name", "metadata.name")
    spec = read.mapping(obj, "spec", "spec")
    ref = read.mapping(spec, "scaleTargetRef", "spec.scaleTargetRef")
    kind = read.text(ref, "kind", "spec.scaleTargetRef.kind")
    target = read.text(ref, "name", "spec.scaleTargetRef.name")
    read.target = target if kind == WORKER_GROUP_KIND else ""
    advanced = read.mapping(spec, "advanced", "spec.advanced")
    hpa = read.mapping(advanced, "horizontalPodAutoscalerConfig", BEHAVIOR.rsplit(".", 1)[0])
    behavior = read.mapping(hpa, "behavior", BEHAVIOR)
    return ScaledObject(
        name=read.name,
        target_kind=kind,
        target_name=target,
        min_replicas=read.count(spec, "minReplicaCount", "spec", KEDA_DEFAULT_MIN),
        max_replicas=read.count(spec, "maxReplicaCount", "spec", KEDA_DEFAULT_MAX),
        cooldown_s=read.number(
            spec, "cooldownPeriod", "spec", KEDA_DEFAULT_COOLDOWN_S, whole=False
        ),
        pause=_pause(read.mapping(meta, "annotations", "metadata.annotations")),
        scale_up=read.rules(behavior, "scaleUp", HPA_DEFAULT_SCALE_UP),
        scale_down=read.rules(behavior, "scaleDown", HPA_DEFAULT_SCALE_DOWN),
    )


def read_scaled_objects(
    items: Sequence[object],
) -> tuple[list[ScaledObject], list[ScaledObjectRefused]]:
    """The views of a namespace's ScaledObjects, and the ones refused; a RayWorkerGroup a refused
    ScaledObject targets keeps none of its views (module doc). Never raises."""
    views: list[ScaledObject] = []
    refused: list[ScaledObjectRefused] = []
    for item in items:
        try:
            views.append(parse_scaled_object(item))
        except ScaledObjectRefused as exc:
            refused.append(exc)
    withheld = targeting(views, *(exc.target for exc in refused if exc.target))
    return [so for so in views if so not in withheld], refused


def targeting(scaled: Sequence[ScaledObject], *names: str) -> list[ScaledObject]:
    """The ScaledObjects whose ``scaleTargetRef`` is the RayWorkerGroup ``name`` (any of
    ``names``)."""
    return [so for so in scaled if so.target_kind == WORKER_GROUP_KIND and so.target_name in names]


def bounds_problem(scaled_object: ScaledObject, low: int, high: int) -> str:
    """Empty when the ScaledObject's min/max equal the group's; else what differs."""
    problems = []
    if scaled_object.min_replicas != low:
        problems.append(f"minReplicaCount {scaled_object.min_replicas} != group minReplicas {low}")
    if scaled_object.max_replicas != high:
        problems.append(f"maxReplicaCount {scaled_object.max_replicas} != group maxReplicas {high}")
    return f"ScaledObject {scaled_object.name}: " + "; ".join(problems) if problems else ""


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


@dataclass(slots=True)
class _Reader:
    """Reads one ScaledObject's fields; refuses the first malformed one, naming the object."""

    name: str = ""
    version: str = ""
    target: str = ""

    def refuse(self, field: str, reason: Malformed, got: object) -> NoReturn:
        raise ScaledObjectRefused(
            self.name, field, reason, got=got, version=self.version, target=self.target
        )

    def mapping(self, parent: Mapping[str, Any], key: str, field: str) -> Mapping[str, Any]:
        """``parent[key]``: an object; absent or null reads as empty."""
        value = parent.get(key)
        if value is not None and not isinstance(value, Mapping):
            self.refuse(field, Malformed.NOT_AN_OBJECT, value)
        return value or {}

    def text(self, parent: Mapping[str, Any], key: str, field: str) -> str:
        """``parent[key]``: a string; absent or null reads as ""."""
        value = parent.get(key)
        if value is not None and not isinstance(value, str):
            self.refuse(field, Malformed.NOT_A_STRING, value)
        return value or ""

    def count(self, parent: Mapping[str, Any], key: str, where: str, default: int) -> int:
        """``parent[key]``: a non-negative integer (an integral float counts); absent or null
        reads as ``default``."""
        return int(self.number(parent, key, where, default, whole=True))

    def number(
        self, parent: Mapping[str, Any], key: str, where: str, default: float, *, whole: bool
    ) -> float:
        """``parent[key]``: a finite non-negative number, an integral one when ``whole``; absent
        or null reads as ``default``."""
        value = parent.get(key)
        if value is None:
            return default
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or (whole and not float(value).is_integer()):
            reason = Malformed.NOT_AN_INTEGER if whole else Malformed.NOT_A_NUMBER
            self.refuse(f"{where}.{key}", reason, value)
        if value < 0:
            self.refuse(f"{where}.{key}", Malformed.NEGATIVE, value)
        return float(value)

    def rules(self, behavior: Mapping[str, Any], key: str, default: ScalingRules) -> ScalingRules:
        """One direction of ``behavior``; unset fields take ``default``'s."""
        where = f"{BEHAVIOR}.{key}"
        rules = self.mapping(behavior, key, where)
        policies = rules.get("policies")
        if policies is not None and not isinstance(policies, list):
            self.refuse(f"{where}.policies", Malformed.NOT_A_LIST, policies)
        window = default.stabilization_window_s
        return ScalingRules(
            stabilization_window_s=self.count(rules, "stabilizationWindowSeconds", where, window),
            select_policy=_select(rules.get("selectPolicy")),
            policies=tuple(
                self.policy(p, f"{where}.policies[{i}]") for i, p in enumerate(policies or ())
            )
            or default.policies,
        )

    def policy(self, policy: object, where: str) -> HpaPolicy:
        """One policy: ``value`` (absent: 0) pods, or percent when its type is Percent."""
        if not isinstance(policy, Mapping):
            self.refuse(where, Malformed.NOT_AN_OBJECT, policy)
        value = self.count(policy, "value", where, 0)
        return HpaPolicy(percent=policy.get("type") == "Percent", value=value)


def _select(value: object) -> SelectPolicy:
    """``selectPolicy``: Max when unset or unknown."""
    try:
        return SelectPolicy(value) if isinstance(value, str) and value else SelectPolicy.MAX
    except ValueError:
        return SelectPolicy.MAX
