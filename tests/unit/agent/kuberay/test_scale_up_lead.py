"""The scale-up lead: the agent's own target raises a group ahead of the HPA, never past what
the ScaledObject allows, never while it is paused, never from a stale plan."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from keda_ray_scaler.agent.kuberay.scale_up_lead import (
    PlannedTargets,
    lead_replicas,
    scale_up_limit,
)
from keda_ray_scaler.agent.kuberay.scaledobject import (
    PAUSED,
    PAUSED_REPLICAS,
    PAUSED_SCALE_OUT,
    ScaledObject,
    parse_scaled_object,
    targeting,
)
from keda_ray_scaler.decisions import GroupPlan, Plan
from keda_ray_scaler.model import ClusterSpec, NodeStatus, PlanningInput, Resources, WorkerNode


def scaled_object(
    *,
    name: str = "ray-demo-cpu",
    max_replicas: int | None = 50,
    annotations: dict[str, str] | None = None,
    scale_up: dict[str, Any] | None = None,
) -> ScaledObject:
    spec: dict[str, Any] = {"scaleTargetRef": {"kind": "RayWorkerGroup", "name": name}}
    if max_replicas is not None:
        spec["maxReplicaCount"] = max_replicas
    if scale_up is not None:
        spec["advanced"] = {"horizontalPodAutoscalerConfig": {"behavior": {"scaleUp": scale_up}}}
    meta = {"name": name, "annotations": annotations or {}}
    return parse_scaled_object({"metadata": meta, "spec": spec})


FAST = {
    "selectPolicy": "Max",
    "policies": [
        {"type": "Percent", "value": 1000, "periodSeconds": 15},
        {"type": "Pods", "value": 50, "periodSeconds": 15},
    ],
}


def test_the_plan_leads_the_hpa_up_to_the_planned_target() -> None:
    lead = lead_replicas(1, 10, [scaled_object(scale_up=FAST)])
    assert (lead.replicas, lead.leads) == (10, True)
    assert "planned 10" in lead.reason


@pytest.mark.parametrize("planned", [None, 1, 0])
def test_no_plan_or_a_plan_at_or_below_the_hpa_changes_nothing(planned: int | None) -> None:
    lead = lead_replicas(1, planned, [scaled_object(scale_up=FAST)])
    assert (lead.replicas, lead.reason, lead.leads) == (1, "", False)


def test_a_plan_below_the_hpa_never_lowers_it() -> None:
    assert lead_replicas(8, 3, [scaled_object(scale_up=FAST)]).replicas == 8


def test_no_scaled_object_no_lead() -> None:
    """A RayWorkerGroup that KEDA does not scale is not ours to scale."""
    lead = lead_replicas(1, 10, [])
    assert (lead.replicas, lead.leads) == (1, False)
    assert "no ScaledObject" in lead.reason


@pytest.mark.parametrize(
    ("annotations", "why"),
    [
        ({PAUSED: "true"}, "is paused"),
        ({PAUSED_REPLICAS: "3"}, "paused at 3 replicas"),
        ({PAUSED_SCALE_OUT: "true"}, "scale-out paused"),
    ],
)
def test_a_paused_scaled_object_holds_the_lead(annotations: dict[str, str], why: str) -> None:
    lead = lead_replicas(1, 10, [scaled_object(annotations=annotations, scale_up=FAST)])
    assert (lead.replicas, lead.leads) == (1, False)
    assert why in lead.reason


@pytest.mark.parametrize(
    "annotations",
    [{PAUSED: "false"}, {"autoscaling.keda.sh/paused-scale-in": "true"}, {PAUSED_SCALE_OUT: "no"}],
)
def test_what_does_not_pause_scale_out_lets_the_lead_through(annotations: dict[str, str]) -> None:
    assert lead_replicas(1, 10, [scaled_object(annotations=annotations, scale_up=FAST)]).leads


def test_the_lead_is_capped_by_max_replica_count_and_keda_default_100() -> None:
    assert lead_replicas(1, 70, [scaled_object(max_replicas=50, scale_up=FAST)]).replicas == 50
    assert lead_replicas(10, 170, [scaled_object(max_replicas=None, scale_up=FAST)]).replicas == 100


def test_the_lead_is_capped_by_one_period_of_the_hpa_scale_up_policies() -> None:
    """The gpu example (Percent 1000 or Pods 8, Max): from 1 the HPA allows 11; Min takes 9."""
    gpu = {
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 1000}, {"type": "Pods", "value": 8}],
    }
    assert lead_replicas(1, 30, [scaled_object(scale_up=gpu)]).replicas == 11
    assert (
        lead_replicas(1, 30, [scaled_object(scale_up={**gpu, "selectPolicy": "Min"})]).replicas == 9
    )
    disabled = lead_replicas(1, 30, [scaled_object(scale_up={**gpu, "selectPolicy": "Disabled"})])
    assert (disabled.replicas, disabled.leads) == (1, False)
    assert disabled.reason.startswith("held")


def test_kubernetes_default_policies_apply_when_the_scaled_object_sets_none() -> None:
    """Pods 4 or Percent 100 per 15 s, Max: from 1 that is 5, from 10 it is 20."""
    assert scale_up_limit(1, scaled_object()) == 5
    assert scale_up_limit(10, scaled_object()) == 20
    assert scale_up_limit(0, scaled_object()) == 5  # KEDA activates to 1 first


def test_the_strictest_of_several_scaled_objects_wins() -> None:
    both = [scaled_object(max_replicas=50, scale_up=FAST), scaled_object(max_replicas=6)]
    assert lead_replicas(2, 30, both).replicas == 6


def test_targeting_picks_the_scaled_objects_of_that_rayworkergroup_only() -> None:
    mine, other = scaled_object(name="ray-demo-cpu"), scaled_object(name="ray-demo-gpu")
    deployment = parse_scaled_object(
        {"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "ray-demo-cpu"}}}
    )
    assert targeting([mine, other, deployment], "ray-demo-cpu") == [mine]


class FixedPlanner:
    """Plans whatever targets the test sets."""

    def __init__(self) -> None:
        self.targets: dict[str, int] = {}

    def __call__(self, inp: PlanningInput) -> Plan:
        return Plan(
            {g: GroupPlan(g, target=t, desired=t, floor=0, current=0, busy=0, new=t)
             for g, t in self.targets.items()}
        )  # fmt: skip


def test_planned_targets_wake_the_applier_when_a_target_moves() -> None:
    async def scenario() -> list[bool]:
        planner = FixedPlanner()
        planned = PlannedTargets(planner, max_age_s=10.0)
        inp = PlanningInput(ClusterSpec("demo", ()))
        woke = []
        for targets in ({"cpu": 3}, {"cpu": 3}, {"cpu": 2}, {"cpu": 5}, {"cpu": 5, "gpu": 1}):
            planner.targets = targets
            planned.wake.clear()
            planned.observe(inp, 100.0)
            woke.append(planned.wake.is_set())
        return woke

    assert asyncio.run(scenario()) == [True, False, True, True, True]


def test_planned_targets_know_how_long_a_group_has_planned_zero() -> None:
    planner = FixedPlanner()
    planned = PlannedTargets(planner, max_age_s=10.0, wake=asyncio.Event())
    inp = PlanningInput(ClusterSpec("demo", ()))
    for at, target in ((100.0, 2), (105.0, 0), (110.0, 0)):
        planner.targets = {"cpu": target}
        planned.observe(inp, at)
    assert planned.zero_for("cpu", 112.0) == 7.0  # zero since 105, not since 110
    planner.targets = {"cpu": 1}
    planned.observe(inp, 115.0)
    assert planned.zero_for("cpu", 116.0) == 0.0
    planner.targets = {"cpu": 0}
    planned.observe(inp, 120.0)
    planned.clear()
    assert planned.zero_for("cpu", 130.0) == 0.0


def test_a_stale_or_cleared_plan_leads_nothing() -> None:
    planner = FixedPlanner()
    planner.targets = {"cpu": 7}
    planned = PlannedTargets(planner, max_age_s=10.0, wake=asyncio.Event())
    planned.observe(PlanningInput(ClusterSpec("demo", ())), 100.0)
    assert planned.get("cpu", 105.0) == 7
    assert planned.get("gpu", 105.0) is None
    assert planned.get("cpu", 111.0) is None  # older than max_age_s
    planned.clear()
    assert planned.get("cpu", 100.0) is None


def joining(group: str, pods: int) -> PlanningInput:
    """An input whose ``group`` has ``pods`` pods not yet in Ray."""
    nodes = tuple(
        WorkerNode(f"{group}-{i}", group, Resources(), Resources(), status=NodeStatus.PENDING)
        for i in range(pods)
    )
    return PlanningInput(ClusterSpec("demo", ()), nodes=nodes)


def test_while_pods_join_a_rise_leads_only_once_two_polls_agree() -> None:
    """A node's free capacity and the tasks about to land on it can be read one poll apart:
    with pods still joining, one poll's 11 leads nothing until the next poll says 11 too."""
    planner = FixedPlanner()
    planned = PlannedTargets(planner, max_age_s=10.0, wake=asyncio.Event())
    seen = []
    for at, target in ((100.0, 10), (101.0, 11), (102.0, 10), (103.0, 12), (104.0, 12)):
        planner.targets = {"cpu": target}
        planned.observe(joining("cpu", 5), at)
        seen.append(planned.get("cpu", at))
    assert seen == [10, 10, 10, 10, 12]
    planner.targets = {"cpu": 12}
    planned.observe(joining("cpu", 5), 104.0)  # the same poll published again: no second poll
    planner.targets = {"cpu": 15}
    planned.observe(joining("cpu", 5), 104.0)
    assert planned.get("cpu", 104.0) == 12


def test_a_rise_held_for_a_second_poll_is_rising_until_a_poll_confirms_or_drops_it() -> None:
    """The loop asks ``rising()`` to poll again at its next look: true only while a held rise
    waits; a confirming poll leads it, a lower one drops it, a failed poll clears it."""
    planner = FixedPlanner()
    planned = PlannedTargets(planner, max_age_s=10.0, wake=asyncio.Event())
    seen = []
    for at, target in ((100.0, 10), (100.5, 11), (101.0, 11), (101.5, 13), (102.0, 12)):
        planner.targets = {"cpu": target}
        planned.observe(joining("cpu", 5), at)
        seen.append((planned.get("cpu", at), planned.rising()))
    assert seen == [(10, False), (10, True), (11, False), (11, True), (12, False)]
    planner.targets = {"cpu": 14}
    planned.observe(joining("cpu", 5), 102.5)
    assert planned.rising()
    planned.clear()
    assert not planned.rising()


def test_with_no_pod_joining_a_rise_leads_at_once_and_a_fall_always_does() -> None:
    planner = FixedPlanner()
    planned = PlannedTargets(planner, max_age_s=10.0, wake=asyncio.Event())
    planner.targets = {"cpu": 2}
    planned.observe(PlanningInput(ClusterSpec("demo", ())), 100.0)
    planner.targets = {"cpu": 10}
    planned.observe(PlanningInput(ClusterSpec("demo", ())), 101.0)
    assert planned.get("cpu", 101.0) == 10
    planner.targets = {"cpu": 4}
    planned.observe(joining("cpu", 3), 102.0)
    assert planned.get("cpu", 102.0) == 4
