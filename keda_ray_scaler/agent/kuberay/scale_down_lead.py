"""KubeRay mode's scale-down lead: drained victims leave at the agent's poll, not the HPA's sync.

A victim is a pod Ray has drained idle (:mod:`~keda_ray_scaler.agent.victims.controller`); the
agent's plan
of the input that publishes it already leaves it out, and the scaler's answer, KEDA and the HPA
bring ``spec.replicas`` down to the same number one to four hops later (scrape, refresh, KEDA,
an HPA sync of up to 15 s). With the lead the applier lowers the RayCluster to the planned target
at once, still only by the drained victims it names
(:func:`~keda_ray_scaler.agent.kuberay.raycluster_scale.decide`), and only where the ScaledObject
would
let its HPA do the same without waiting:

- a ScaledObject targets the group and none is paused (``paused``, ``paused-replicas``,
  ``paused-scale-in``);
- its HPA ``scaleDown`` has ``stabilizationWindowSeconds: 0`` set (Kubernetes' default is 300 s:
  a window the user did not turn off is the HPA's to keep) and is not ``Disabled``;
- never below ``minReplicaCount``, nor below one period of its ``scaleDown`` policies from the
  HPA's replicas (:func:`scale_down_limit`);
- to zero only once the plan has asked zero for ``cooldownPeriod`` (KEDA's default 300 s), as
  KEDA itself scales a group to zero.

Cost: until the HPA syncs, the RayCluster has fewer replicas than the RayWorkerGroup's
``spec.replicas``; should the plan go stale in between (a failing poll), the applier follows the
HPA again and creates the pods back (Ray then drains them idle).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from keda_ray_scaler.agent.kuberay.scale_up_lead import Lead, name_and_notes, paused_both_ways

#: KEDA's pause annotation for scale-in only (``paused`` and ``paused-replicas`` hold both ways)
PAUSED_SCALE_IN = "autoscaling.keda.sh/paused-scale-in"
#: KEDA's ``cooldownPeriod`` when the ScaledObject sets none
KEDA_DEFAULT_COOLDOWN_S = 300.0
#: Kubernetes' HPA scale-down policy when the ScaledObject sets none (100 % per 15 s)
DEFAULT_SCALE_DOWN: tuple[Mapping[str, Any], ...] = (
    {"type": "Percent", "value": 100, "periodSeconds": 15},
)


def scale_in_held(scaled_object: Mapping[str, Any]) -> str:
    """Why the ScaledObject's own HPA would not lower the group at once ("" when it would)."""
    paused = paused_both_ways(scaled_object)
    if paused:
        return paused
    name, notes = name_and_notes(scaled_object)
    if str(notes.get(PAUSED_SCALE_IN, "")).lower() == "true":
        return f"ScaledObject {name} has scale-in paused"
    down = _scale_down(scaled_object)
    window = down.get("stabilizationWindowSeconds")
    if window is None or int(window) != 0:
        shown = 300 if window is None else int(window)
        return f"ScaledObject {name} has a {shown} s scale-down window"
    if down.get("selectPolicy") == "Disabled":
        return f"ScaledObject {name} has scale-down disabled"
    return ""


def scale_down_limit(current: int, scaled_object: Mapping[str, Any]) -> int:
    """The fewest replicas the ScaledObject's HPA would allow in one period from ``current``
    (``selectPolicy`` Max by default: the policy that removes most; Min: the least), as the
    HPA's ``calculateScaleDownLimitWithBehaviors`` does."""
    down = _scale_down(scaled_object)
    limits = [_policy_floor(current, p) for p in (down.get("policies") or DEFAULT_SCALE_DOWN)]
    return max(limits) if down.get("selectPolicy") == "Min" else min(limits)


def _scale_down(scaled_object: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = scaled_object.get("spec") or {}
    advanced = (spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}
    return (advanced.get("behavior") or {}).get("scaleDown") or {}


def _policy_floor(current: int, policy: Mapping[str, Any]) -> int:
    value = int(policy.get("value") or 0)
    if policy.get("type") == "Percent":
        return max(current - math.floor(current * value / 100), 0)
    return max(current - value, 0)


def lead_down(
    desired: int,
    planned: int | None,
    scaled_objects: Sequence[Mapping[str, Any]],
    zero_for_s: float,
) -> Lead:
    """``desired`` (the HPA's ``spec.replicas``) lowered to ``planned`` where the ScaledObjects
    targeting the group allow it (module doc); ``zero_for_s``: how long the plan has asked 0.
    Pure."""
    if planned is None or planned >= desired:
        return Lead(desired)
    if not scaled_objects:
        return Lead(desired, "held: no ScaledObject targets the group")
    floor = planned
    for so in scaled_objects:
        held = scale_in_held(so)
        if held:
            return Lead(desired, f"held: {held}")
        spec = so.get("spec") or {}
        cooldown = float(spec.get("cooldownPeriod", KEDA_DEFAULT_COOLDOWN_S))
        least = int(spec.get("minReplicaCount") or 0)
        if least == 0 and zero_for_s < cooldown:
            least = 1
        floor = max(floor, least, scale_down_limit(desired, so))
    if floor >= desired:
        return Lead(desired, f"held: the ScaledObject keeps {desired} (planned {planned})")
    return Lead(floor, f"planned {planned}, the HPA asks {desired}", leads=True)
