"""The scale-down lead: the agent's own plan deletes drained victims ahead of the HPA, only
where the ScaledObject's HPA would lower the group at once, never below its floor, to zero only
after its cooldown, never while it is paused."""

from __future__ import annotations

from typing import Any

import pytest

from keda_ray_scaler.agent.kuberay.scale_down_lead import (
    lead_down,
    scale_down_limit,
    scale_in_held,
)
from keda_ray_scaler.agent.kuberay.scaledobject import (
    PAUSED,
    PAUSED_REPLICAS,
    PAUSED_SCALE_IN,
    PAUSED_SCALE_OUT,
    ScaledObject,
    parse_scaled_object,
)

NO_WINDOW = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def scaled_object(
    *,
    scale_down: dict[str, Any] | None = NO_WINDOW,
    annotations: dict[str, str] | None = None,
    min_replicas: int | None = 0,
    cooldown: int | None = 5,
) -> ScaledObject:
    spec: dict[str, Any] = {"scaleTargetRef": {"kind": "RayWorkerGroup", "name": "ray-demo-cpu"}}
    if min_replicas is not None:
        spec["minReplicaCount"] = min_replicas
    if cooldown is not None:
        spec["cooldownPeriod"] = cooldown
    if scale_down is not None:
        behavior = {"scaleDown": scale_down}
        spec["advanced"] = {"horizontalPodAutoscalerConfig": {"behavior": behavior}}
    meta = {"name": "ray-demo-cpu", "annotations": annotations or {}}
    return parse_scaled_object({"metadata": meta, "spec": spec})


def test_the_plan_lowers_the_group_ahead_of_the_hpa() -> None:
    lead = lead_down(10, 8, [scaled_object()], zero_for_s=0.0)
    assert (lead.replicas, lead.leads) == (8, True)
    assert "planned 8" in lead.reason


@pytest.mark.parametrize("planned", [None, 10, 12])
def test_no_plan_or_a_plan_at_or_above_the_hpa_changes_nothing(planned: int | None) -> None:
    lead = lead_down(10, planned, [scaled_object()], zero_for_s=0.0)
    assert (lead.replicas, lead.reason, lead.leads) == (10, "", False)


def test_no_scaled_object_no_lead() -> None:
    lead = lead_down(10, 8, [], zero_for_s=0.0)
    assert (lead.replicas, lead.leads) == (10, False)
    assert "no ScaledObject" in lead.reason


@pytest.mark.parametrize(
    ("annotations", "why"),
    [
        ({PAUSED: "true"}, "is paused"),
        ({PAUSED_REPLICAS: "3"}, "is paused"),
        ({PAUSED_SCALE_IN: "true"}, "scale-in paused"),
    ],
)
def test_a_paused_scaled_object_holds_the_lead(annotations: dict[str, str], why: str) -> None:
    lead = lead_down(10, 8, [scaled_object(annotations=annotations)], zero_for_s=0.0)
    assert (lead.replicas, lead.leads) == (10, False)
    assert why in lead.reason


def test_paused_scale_out_does_not_hold_a_scale_down() -> None:
    assert lead_down(10, 8, [scaled_object(annotations={PAUSED_SCALE_OUT: "true"})], 0.0).leads


@pytest.mark.parametrize(
    ("scale_down", "why"),
    [
        (None, "300 s scale-down window"),  # Kubernetes' default when behavior is unset
        ({**NO_WINDOW, "stabilizationWindowSeconds": 60}, "60 s scale-down window"),
        ({"selectPolicy": "Max"}, "300 s scale-down window"),
        ({**NO_WINDOW, "selectPolicy": "Disabled"}, "scale-down disabled"),
    ],
)
def test_a_window_or_disabled_scale_down_is_the_hpas_to_keep(
    scale_down: dict[str, Any] | None, why: str
) -> None:
    so = scaled_object(scale_down=scale_down)
    assert why in scale_in_held(so)
    lead = lead_down(10, 8, [so], zero_for_s=0.0)
    assert (lead.replicas, lead.leads) == (10, False)


def test_never_below_min_replica_count() -> None:
    lead = lead_down(10, 2, [scaled_object(min_replicas=4)], zero_for_s=0.0)
    assert (lead.replicas, lead.leads) == (4, True)
    held = lead_down(4, 2, [scaled_object(min_replicas=4)], zero_for_s=0.0)
    assert (held.replicas, held.leads) == (4, False)


def test_to_zero_only_after_the_cooldown_period() -> None:
    so = scaled_object(cooldown=30)
    assert lead_down(3, 0, [so], zero_for_s=10.0).replicas == 1
    assert lead_down(3, 0, [so], zero_for_s=30.0).replicas == 0
    default = scaled_object(cooldown=None)  # KEDA's 300 s
    assert lead_down(1, 0, [default], zero_for_s=299.0).leads is False
    assert lead_down(1, 0, [default], zero_for_s=300.0).replicas == 0


def test_one_period_of_the_scale_down_policies_bounds_the_lead() -> None:
    """Pods 2 or Percent 50, Max: from 10 the HPA may go to 5 in one period; Min: to 8."""
    policies = [{"type": "Pods", "value": 2}, {"type": "Percent", "value": 50}]
    fast = {**NO_WINDOW, "policies": policies}
    assert scale_down_limit(10, scaled_object(scale_down=fast)) == 5
    assert scale_down_limit(10, scaled_object(scale_down={**fast, "selectPolicy": "Min"})) == 8
    assert lead_down(10, 1, [scaled_object(scale_down=fast)], zero_for_s=0.0).replicas == 5
    assert scale_down_limit(10, scaled_object(scale_down={"stabilizationWindowSeconds": 0})) == 0


def test_the_most_careful_of_several_scaled_objects_wins() -> None:
    both = [scaled_object(), scaled_object(min_replicas=6)]
    assert lead_down(10, 2, both, zero_for_s=0.0).replicas == 6
