"""One group's round, the pure part: the filter that holds a group back, the lead the settings
allow, and the verdict's labels (a Prometheus contract)."""

from __future__ import annotations

import pytest

from keda_ray_scaler.agent.kuberay.group_round import (
    RECONCILED,
    ApplierSettings,
    GroupRead,
    GroupVerdict,
    Held,
    Ready,
    Undecided,
    lead_for,
    screen,
)
from keda_ray_scaler.agent.kuberay.raycluster_scale import Action, GroupState, Lead
from keda_ray_scaler.agent.kuberay.scaledobject import parse_scaled_object

STATE = GroupState("cpu", 0, replicas=3, min_replicas=0, max_replicas=10)


def read(**fields: object) -> GroupRead:
    """A synced group ``cpu`` with 3 replicas in the RayCluster, the HPA asking 5."""
    base: dict[str, object] = {
        "group": "cpu",
        "name": "ray-demo-cpu",
        "replicas": 5,
        "pods": ("p0", "p1", "p2"),
        "state": STATE,
        "synced": True,
    }
    return GroupRead(**{**base, **fields})  # type: ignore[arg-type]


def test_a_group_to_scale_passes_the_filter_with_the_hpas_replicas() -> None:
    assert screen(read(), "", "demo") == 5


@pytest.mark.parametrize(
    ("fields", "refused", "held"),
    [
        (
            {"state": None, "synced": False},
            "in-tree autoscaling is on",
            Held(
                GroupVerdict("cpu", Undecided.REFUSED, "in-tree autoscaling is on"),
                Ready(False, "InTreeAutoscaling"),
            ),
        ),
        (
            {"claimed_by": "ray-demo-cpu-old", "state": None, "synced": False},
            "",
            Held(
                GroupVerdict(
                    "cpu",
                    Undecided.CLAIMED,
                    "group cpu is claimed by RayWorkerGroup ray-demo-cpu-old (the oldest)",
                ),
                Ready(False, "GroupClaimedByAnother"),
            ),
        ),
        (
            {"state": None, "synced": False},
            "",
            Held(
                GroupVerdict("cpu", Undecided.NO_GROUP, "RayCluster demo has no group cpu"),
                Ready(False, "GroupNotFound"),
            ),
        ),
        (
            {"synced": False, "replicas": None},
            "",
            Held(
                GroupVerdict("cpu", Undecided.NOT_SYNCED, "pod cache not synced"),
                Ready(False, "PodsNotSynced"),
            ),
        ),
        (
            {"replicas": None},
            "",
            Held(GroupVerdict("cpu", Undecided.UNSET, "spec.replicas unset", 3), RECONCILED),
        ),
    ],
)
def test_the_filter_holds_refused_missing_unsynced_and_unset_groups_in_that_order(
    fields: dict[str, object], refused: str, held: Held
) -> None:
    assert screen(read(**fields), refused, "demo") == held


def test_verdict_labels_are_the_strings_the_decisions_counter_always_had() -> None:
    """``ray_scaler_kuberay_decisions_total``'s ``action`` label values are a contract."""
    assert [u.value for u in Undecided] == [
        "refused",
        "no_group",
        "not_synced",
        "unset",
        "kube_error",
        "claimed",
    ]
    assert GroupVerdict("cpu", Action.SCALE_UP, "").action == "scale_up"


FAST = parse_scaled_object(
    {
        "metadata": {"name": "ray-demo-cpu"},
        "spec": {
            "scaleTargetRef": {"kind": "RayWorkerGroup", "name": "ray-demo-cpu"},
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleUp": {"policies": [{"type": "Pods", "value": 50}]},
                        "scaleDown": {"stabilizationWindowSeconds": 0},
                    }
                }
            },
        },
    }
)


@pytest.mark.parametrize(
    ("desired", "planned", "settings", "replicas"),
    [
        (2, 9, ApplierSettings("demo"), 9),
        (2, 9, ApplierSettings("demo", lead_up=False), 2),
        (9, 2, ApplierSettings("demo"), 2),
        (9, 2, ApplierSettings("demo", lead_down=False), 9),
        (2, None, ApplierSettings("demo"), 2),
    ],
)
def test_the_lead_goes_only_the_ways_the_settings_allow(
    desired: int, planned: int | None, settings: ApplierSettings, replicas: int
) -> None:
    """Up and down each on by default; without a fresh plan the HPA's replicas stand."""
    lead = lead_for(desired, planned, 600.0, [FAST], settings)
    assert lead.replicas == replicas
    assert lead.leads is (replicas != desired)


def test_without_a_scaled_object_nothing_leads() -> None:
    assert lead_for(2, 9, 0.0, [], ApplierSettings("demo")) == Lead(
        2, "held: no ScaledObject targets the group"
    )
