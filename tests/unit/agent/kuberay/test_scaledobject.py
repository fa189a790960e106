"""The ScaledObject view: one parse of KEDA's JSON into the bounds, the pause annotations and the
HPA behaviour both leads and the RayWorkerGroup status read, with KEDA's and the HPA's
defaults filled in."""

from __future__ import annotations

from typing import Any

import pytest

from keda_ray_scaler.agent.kuberay.scaledobject import (
    HPA_DEFAULT_SCALE_DOWN,
    HPA_DEFAULT_SCALE_DOWN_WINDOW_S,
    HPA_DEFAULT_SCALE_UP,
    KEDA_DEFAULT_COOLDOWN_S,
    KEDA_DEFAULT_MAX,
    PAUSED,
    PAUSED_REPLICAS,
    PAUSED_SCALE_IN,
    PAUSED_SCALE_OUT,
    HpaPolicy,
    Pause,
    ScaledObject,
    ScalingRules,
    SelectPolicy,
    parse_scaled_object,
)


def behavior(**directions: dict[str, Any]) -> dict[str, Any]:
    """A ScaledObject whose HPA ``behavior`` is ``directions`` (scaleUp=..., scaleDown=...)."""
    hpa = {"horizontalPodAutoscalerConfig": {"behavior": directions}}
    return {"metadata": {"name": "so"}, "spec": {"advanced": hpa}}


def annotated(**notes: str) -> ScaledObject:
    """The view of a ScaledObject named ``so`` with these annotations."""
    return parse_scaled_object({"metadata": {"name": "so", "annotations": notes}})


def test_a_full_scaled_object_is_read_field_by_field() -> None:
    """Name, target, bounds, cooldown, pause and both directions of the HPA behaviour."""
    obj = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "ray-demo-gpu", "annotations": {PAUSED_SCALE_IN: "true"}},
        "spec": {
            "scaleTargetRef": {"kind": "RayWorkerGroup", "name": "ray-demo-gpu"},
            "minReplicaCount": 1,
            "maxReplicaCount": 20,
            "cooldownPeriod": 60,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleUp": {
                            "stabilizationWindowSeconds": 5,
                            "selectPolicy": "Min",
                            "policies": [
                                {"type": "Percent", "value": 1000, "periodSeconds": 15},
                                {"type": "Pods", "value": 8, "periodSeconds": 15},
                            ],
                        },
                        "scaleDown": {
                            "stabilizationWindowSeconds": 0,
                            "selectPolicy": "Disabled",
                            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 30}],
                        },
                    }
                }
            },
            "triggers": [{"type": "external-push", "metadata": {}}],
        },
    }
    assert parse_scaled_object(obj) == ScaledObject(
        name="ray-demo-gpu",
        target_kind="RayWorkerGroup",
        target_name="ray-demo-gpu",
        min_replicas=1,
        max_replicas=20,
        cooldown_s=60.0,
        pause=Pause(scale_in=True),
        scale_up=ScalingRules(
            5, SelectPolicy.MIN, (HpaPolicy(percent=True, value=1000), HpaPolicy(False, 8))
        ),
        scale_down=ScalingRules(0, SelectPolicy.DISABLED, (HpaPolicy(percent=False, value=2),)),
    )


def test_what_the_scaled_object_leaves_out_takes_kedas_and_the_hpas_defaults() -> None:
    """min 0, max 100, cooldown 300 s, no pause; the HPA: up 4 pods or 100 % (Max, no
    window), down 100 % behind a 300 s window."""
    so = parse_scaled_object({})
    assert (so.name, so.target_kind, so.target_name) == ("", "", "")
    assert (so.min_replicas, so.max_replicas, so.cooldown_s) == (0, KEDA_DEFAULT_MAX, 300.0)
    assert KEDA_DEFAULT_COOLDOWN_S == 300.0 and KEDA_DEFAULT_MAX == 100
    assert so.pause == Pause()
    assert (
        so.scale_up
        == HPA_DEFAULT_SCALE_UP
        == ScalingRules(0, SelectPolicy.MAX, (HpaPolicy(False, 4), HpaPolicy(True, 100)))
    )
    assert (
        so.scale_down
        == HPA_DEFAULT_SCALE_DOWN
        == ScalingRules(300, SelectPolicy.MAX, (HpaPolicy(True, 100),))
    )
    assert HPA_DEFAULT_SCALE_DOWN_WINDOW_S == 300
    assert so == ScaledObject()


def test_a_zero_max_or_cooldown_is_kept_and_a_null_is_unset() -> None:
    """Only an absent (or null) count takes the default; 0 is a value."""
    spec = {"maxReplicaCount": 0, "cooldownPeriod": 0, "minReplicaCount": None}
    so = parse_scaled_object({"spec": spec})
    assert (so.min_replicas, so.max_replicas, so.cooldown_s) == (0, 0, 0.0)


@pytest.mark.parametrize(
    ("notes", "pause"),
    [
        ({PAUSED: "true"}, Pause(paused=True)),
        ({PAUSED: "TRUE"}, Pause(paused=True)),
        ({PAUSED: "false"}, Pause()),
        ({PAUSED_REPLICAS: "3"}, Pause(replicas="3")),
        ({PAUSED_REPLICAS: ""}, Pause(replicas="")),
        ({PAUSED_SCALE_OUT: "true"}, Pause(scale_out=True)),
        ({PAUSED_SCALE_OUT: "no"}, Pause()),
        ({PAUSED_SCALE_IN: "True"}, Pause(scale_in=True)),
        ({"autoscaling.keda.sh/other": "true"}, Pause()),
    ],
)
def test_the_pause_annotations_are_read_as_keda_reads_them(
    notes: dict[str, str], pause: Pause
) -> None:
    """ "true" in any case pauses; ``paused-replicas`` pauses whatever its value."""
    assert annotated(**notes).pause == pause


def test_pause_says_which_direction_it_holds() -> None:
    """``paused`` and ``paused-replicas`` hold both ways; ``-scale-out`` and ``-scale-in`` one."""
    both = annotated(**{PAUSED: "true"})
    assert both.holds_scale_out() == both.holds_scale_in() == "ScaledObject so is paused"
    at = annotated(**{PAUSED_REPLICAS: "3"})
    assert at.holds_scale_in() == "ScaledObject so is paused at 3 replicas"
    out = annotated(**{PAUSED_SCALE_OUT: "true"})
    assert (out.holds_scale_out(), out.holds_scale_in()) == (
        "ScaledObject so has scale-out paused",
        "",
    )
    in_ = annotated(**{PAUSED_SCALE_IN: "true"})
    assert (in_.holds_scale_out(), in_.holds_scale_in()) == (
        "",
        "ScaledObject so has scale-in paused",
    )
    assert annotated().holds_both_ways() == ""


def test_each_direction_of_the_behaviour_fills_only_what_it_leaves_out() -> None:
    """A scaleDown with only a window keeps the HPA's policy; a scaleUp with only policies
    keeps its window 0 and Max."""
    so = parse_scaled_object(
        behavior(
            scaleUp={"policies": [{"type": "Pods", "value": 50, "periodSeconds": 15}]},
            scaleDown={"stabilizationWindowSeconds": 0},
        )
    )
    assert so.scale_up == ScalingRules(0, SelectPolicy.MAX, (HpaPolicy(False, 50),))
    assert so.scale_down == ScalingRules(0, SelectPolicy.MAX, HPA_DEFAULT_SCALE_DOWN.policies)


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ({"selectPolicy": "Sideways"}, SelectPolicy.MAX),  # unknown: as Max, as before
        ({"selectPolicy": ""}, SelectPolicy.MAX),
        ({"selectPolicy": "Min"}, SelectPolicy.MIN),
        ({"selectPolicy": "Disabled"}, SelectPolicy.DISABLED),
    ],
)
def test_select_policy_is_max_unless_min_or_disabled(
    rules: dict[str, Any], expected: SelectPolicy
) -> None:
    """Only the HPA's two other names change the choice."""
    assert parse_scaled_object(behavior(scaleDown=rules)).scale_down.select_policy is expected


def test_an_empty_policy_list_takes_the_defaults_and_an_unknown_type_counts_pods() -> None:
    """``policies: []`` is no policy set; a type other than Percent counts pods."""
    up = parse_scaled_object(behavior(scaleUp={"policies": []})).scale_up
    assert up.policies == HPA_DEFAULT_SCALE_UP.policies
    odd = parse_scaled_object(behavior(scaleUp={"policies": [{"type": "Nodes", "value": 3}]}))
    assert odd.scale_up.policies == (HpaPolicy(percent=False, value=3),)


def test_a_malformed_count_fails_the_parse_as_it_failed_the_read() -> None:
    """KEDA's CRD refuses a non-integer count; should one get through, int() raises as before."""
    with pytest.raises(ValueError):
        parse_scaled_object({"spec": {"maxReplicaCount": "many"}})
