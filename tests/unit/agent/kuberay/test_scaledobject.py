"""The ScaledObject view: one parse of KEDA's JSON into the bounds, the pause annotations and the
HPA behaviour both leads and the RayWorkerGroup status read, with KEDA's and the HPA's
defaults filled in; a malformed ScaledObject refused at the read, counted and logged once,
never failing the round."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler.agent.kube.kube_retry import KubeApiErrors
from keda_ray_scaler.agent.kuberay.kuberay_api import (
    KubeRayApi,
    KubeRaySettings,
    ScaledObjectRefusals,
)
from keda_ray_scaler.agent.kuberay.raycluster_scale import GroupState
from keda_ray_scaler.agent.kuberay.rwg_status import GroupStatus, StatusWriter
from keda_ray_scaler.agent.kuberay.scaledobject import (
    BEHAVIOR,
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
    read_scaled_objects,
    targeting,
)
from keda_ray_scaler.agent.metric_names import SCALED_OBJECTS_REFUSED
from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.errors import Malformed, ScaledObjectRefused


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
    """KEDA's CRD refuses a non-integer count; should one get through, the parse refuses it (a
    ValueError, as int() raised before), naming the field."""
    with pytest.raises(ValueError, match=r"spec\.maxReplicaCount: not an integer"):
        parse_scaled_object({"spec": {"maxReplicaCount": "many"}})


def so(name: str, target: str = "gpu", version: str = "1", **spec: Any) -> dict[str, Any]:
    """A ScaledObject's JSON named ``name`` targeting the RayWorkerGroup ``target``."""
    ref = {"kind": "RayWorkerGroup", "name": target}
    meta = {"name": name, "resourceVersion": version}
    return {"metadata": meta, "spec": {"scaleTargetRef": ref, **spec}}


def with_behavior(direction: str, rules: Any) -> dict[str, Any]:
    """A ScaledObject ``bad`` whose HPA behaviour sets ``direction`` to ``rules``."""
    return so("bad", advanced={"horizontalPodAutoscalerConfig": {"behavior": {direction: rules}}})


@pytest.mark.parametrize(
    ("obj", "field", "reason"),
    [
        (so("bad", minReplicaCount="abc"), "spec.minReplicaCount", Malformed.NOT_AN_INTEGER),
        (so("bad", minReplicaCount=-1), "spec.minReplicaCount", Malformed.NEGATIVE),
        (so("bad", maxReplicaCount=2.5), "spec.maxReplicaCount", Malformed.NOT_AN_INTEGER),
        (so("bad", maxReplicaCount=True), "spec.maxReplicaCount", Malformed.NOT_AN_INTEGER),
        (so("bad", cooldownPeriod="5m"), "spec.cooldownPeriod", Malformed.NOT_A_NUMBER),
        (so("bad", cooldownPeriod=float("nan")), "spec.cooldownPeriod", Malformed.NOT_A_NUMBER),
        (so("bad", cooldownPeriod=-5), "spec.cooldownPeriod", Malformed.NEGATIVE),
        (so("bad", scaleTargetRef="gpu"), "spec.scaleTargetRef", Malformed.NOT_AN_OBJECT),
        (so("bad", scaleTargetRef={"name": 7}), "spec.scaleTargetRef.name", Malformed.NOT_A_STRING),
        (so("bad", advanced=[]), "spec.advanced", Malformed.NOT_AN_OBJECT),
        (
            so("bad", advanced={"horizontalPodAutoscalerConfig": {"behavior": "fast"}}),
            BEHAVIOR,
            Malformed.NOT_AN_OBJECT,
        ),
        (with_behavior("scaleUp", 5), f"{BEHAVIOR}.scaleUp", Malformed.NOT_AN_OBJECT),
        (
            with_behavior("scaleDown", {"stabilizationWindowSeconds": "300"}),
            f"{BEHAVIOR}.scaleDown.stabilizationWindowSeconds",
            Malformed.NOT_AN_INTEGER,
        ),
        (
            with_behavior("scaleUp", {"policies": {"type": "Pods"}}),
            f"{BEHAVIOR}.scaleUp.policies",
            Malformed.NOT_A_LIST,
        ),
        (
            with_behavior("scaleUp", {"policies": [{"value": 4}, "Pods"]}),
            f"{BEHAVIOR}.scaleUp.policies[1]",
            Malformed.NOT_AN_OBJECT,
        ),
        (
            with_behavior("scaleDown", {"policies": [{"type": "Percent", "value": "all"}]}),
            f"{BEHAVIOR}.scaleDown.policies[0].value",
            Malformed.NOT_AN_INTEGER,
        ),
        (
            {"metadata": {"name": "bad", "annotations": ["paused"]}},
            "metadata.annotations",
            Malformed.NOT_AN_OBJECT,
        ),
        ({"metadata": {"name": "bad"}, "spec": "x"}, "spec", Malformed.NOT_AN_OBJECT),
    ],
)
def test_each_malformed_field_is_refused_naming_the_object_and_the_field(
    obj: dict[str, Any], field: str, reason: Malformed
) -> None:
    """A ScaledObjectRefused with the object's name, the field's path and a fixed reason."""
    with pytest.raises(ScaledObjectRefused) as refused:
        parse_scaled_object(obj)
    assert (refused.value.name, refused.value.field, refused.value.reason) == ("bad", field, reason)
    assert str(refused.value).startswith(f"ScaledObject bad: {field}: ")


def test_an_object_that_is_not_one_or_unnamed_is_refused_too() -> None:
    """Not a JSON object, or metadata.name not a string: refused, the name shown as unnamed."""
    with pytest.raises(ScaledObjectRefused, match="<unnamed>: \\(the object\\): not an object"):
        parse_scaled_object("ScaledObject")
    with pytest.raises(ScaledObjectRefused) as refused:
        parse_scaled_object({"metadata": {"name": 5}})
    assert (refused.value.name, refused.value.field) == ("", "metadata.name")


def test_a_refusal_names_the_rayworkergroup_once_its_target_has_parsed() -> None:
    """The target is read first: a later field's refusal says which group it concerns; a
    ScaledObject of a Deployment names none."""
    with pytest.raises(ScaledObjectRefused) as ours:
        parse_scaled_object(so("bad", target="gpu", version="7", minReplicaCount="abc"))
    assert (ours.value.target, ours.value.version) == ("gpu", "7")
    deployment = so("web", minReplicaCount="abc")
    deployment["spec"]["scaleTargetRef"] = {"kind": "Deployment", "name": "gpu"}
    with pytest.raises(ScaledObjectRefused) as theirs:
        parse_scaled_object(deployment)
    assert theirs.value.target == ""


def test_a_namespace_read_keeps_the_good_and_leaves_the_refused_group_with_none() -> None:
    """One malformed ScaledObject is left out, with every one targeting its RayWorkerGroup; the
    other groups and a malformed ScaledObject of a Deployment change nothing else."""
    cpu, gpu_good = so("cpu", target="cpu"), so("gpu-good", target="gpu")
    deployment = so("web", minReplicaCount={"x": 1})
    deployment["spec"]["scaleTargetRef"] = {"kind": "Deployment", "name": "cpu"}
    items = [cpu, gpu_good, so("gpu-bad", target="gpu", maxReplicaCount="abc"), deployment, 42]
    views, refused = read_scaled_objects(items)
    assert [v.name for v in views] == ["cpu"]
    assert [(r.name, r.field) for r in refused] == [
        ("gpu-bad", "spec.maxReplicaCount"),
        ("web", "spec.minReplicaCount"),
        ("", "(the object)"),
    ]
    assert targeting(views, "gpu") == []


class ScaledObjectList:
    """A custom-objects client whose ScaledObject list answers ``items`` (changeable)."""

    def __init__(self, *items: Any) -> None:
        self.items = list(items)

    def list_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"items": self.items}


def refused_count(registry: CollectorRegistry, reason: str) -> float:
    """``ray_scaler_kuberay_scaled_objects_refused_total{cluster="demo", reason}``."""
    labels = {"cluster": "demo", "reason": reason}
    return registry.get_sample_value(SCALED_OBJECTS_REFUSED, labels) or 0.0


def kuberay_api(client: ScaledObjectList, registry: CollectorRegistry) -> KubeRayApi:
    """KubeRay mode's calls on ``client``, refusals counted in ``registry`` (as the CLI)."""
    return KubeRayApi(
        client,  # type: ignore[arg-type]
        KubeRaySettings(namespace="ray", raycluster="demo"),
        KubeApiErrors(CollectorRegistry()),
        refusals=ScaledObjectRefusals(registry, cluster="demo"),
    )


async def test_one_malformed_scaled_object_is_counted_and_logged_once_and_fails_nothing() -> None:
    """A namespace with one good and one malformed ScaledObject reads as the good one, round
    after round; the malformed one is counted and logged once per resourceVersion."""
    registry = CollectorRegistry()
    client = ScaledObjectList(
        so("cpu", target="cpu"), so("gpu", version="1", minReplicaCount="abc")
    )
    api = kuberay_api(client, registry)
    with capture_logs() as logs:
        first = await api.scaled_objects()
        second = await api.scaled_objects()
    assert [v.name for v in first] == [v.name for v in second] == ["cpu"]
    assert refused_count(registry, "not_an_integer") == 1.0
    refusals = [e for e in logs if e["event"] == "ScaledObject refused"]
    assert [(e["scaled_object"], e["field"], e["rayworkergroup"]) for e in refusals] == [
        ("gpu", "spec.minReplicaCount", "gpu")
    ]
    assert api.refused_scaled_objects("gpu") == [
        "ScaledObject gpu: spec.minReplicaCount: not an integer (got 'abc')"
    ]
    assert api.refused_scaled_objects("cpu") == []
    client.items[1] = so("gpu", version="2", minReplicaCount=-1)  # edited, still malformed
    await api.scaled_objects()
    assert refused_count(registry, "negative") == 1.0
    client.items[1] = so("gpu", version="3", minReplicaCount=1)  # fixed
    assert [v.name for v in await api.scaled_objects()] == ["cpu", "gpu"]
    assert api.refused_scaled_objects("gpu") == []


def test_the_group_a_refused_scaled_object_targets_shows_it_in_bounds_match() -> None:
    """BoundsMatch False, reason ScaledObjectRefused, the refusal in its message."""

    class Refusing:
        def refused_scaled_objects(self, rayworkergroup: str) -> list[str]:
            return ["ScaledObject gpu: spec.minReplicaCount: negative (got -1)"]

    writer = StatusWriter(Refusing(), SystemClock(), cluster="demo")  # type: ignore[arg-type]
    status = GroupStatus(replicas=1, selector="s")
    writer.bounds(status, "gpu", GroupState("gpu", 0, 1, 0, 4), [])
    assert [(c["type"], c["status"], c["reason"]) for c in status.conditions] == [
        ("BoundsMatch", "False", "ScaledObjectRefused")
    ]
    assert status.conditions[0]["message"].startswith("ScaledObject gpu: spec.minReplicaCount")
