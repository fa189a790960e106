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
- its HPA ``scaleDown`` has ``stabilizationWindowSeconds: 0`` set (Kubernetes' default is 300 s,
  :data:`~keda_ray_scaler.agent.kuberay.scaledobject.HPA_DEFAULT_SCALE_DOWN_WINDOW_S`: a window
  the user did not turn off is the HPA's to keep) and is not ``Disabled``;
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
from collections.abc import Sequence

from keda_ray_scaler.agent.kuberay.raycluster_scale import Lead
from keda_ray_scaler.agent.kuberay.scaledobject import HpaPolicy, ScaledObject, SelectPolicy


def scale_in_held(scaled_object: ScaledObject) -> str:
    """Why the ScaledObject's own HPA would not lower the group at once ("" when it would)."""
    if held := scaled_object.holds_scale_in():
        return held
    name, down = scaled_object.name, scaled_object.scale_down
    if down.stabilization_window_s != 0:
        return f"ScaledObject {name} has a {down.stabilization_window_s} s scale-down window"
    if down.select_policy is SelectPolicy.DISABLED:
        return f"ScaledObject {name} has scale-down disabled"
    return ""


def scale_down_limit(current: int, scaled_object: ScaledObject) -> int:
    """The fewest replicas the ScaledObject's HPA would allow in one period from ``current``
    (``selectPolicy`` Max by default: the policy that removes most; Min: the least), as the
    HPA's ``calculateScaleDownLimitWithBehaviors`` does."""
    down = scaled_object.scale_down
    limits = [_policy_floor(current, p) for p in down.policies]
    return max(limits) if down.select_policy is SelectPolicy.MIN else min(limits)


def _policy_floor(current: int, policy: HpaPolicy) -> int:
    if policy.percent:
        return max(current - math.floor(current * policy.value / 100), 0)
    return max(current - policy.value, 0)


def lead_down(
    desired: int,
    planned: int | None,
    scaled_objects: Sequence[ScaledObject],
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
        least = so.min_replicas
        if least == 0 and zero_for_s < so.cooldown_s:
            least = 1
        floor = max(floor, least, scale_down_limit(desired, so))
    if floor >= desired:
        return Lead(desired, f"held: the ScaledObject keeps {desired} (planned {planned})")
    return Lead(floor, f"planned {planned}, the HPA asks {desired}", leads=True)
