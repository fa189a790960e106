"""The ReplicaSet's deletion ranking, rule by rule, as ``controller_utils.go`` orders pods."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keda_ray_scaler.agent.pod import DELETION_COST, PodInfo, parse_deletion_cost
from keda_ray_scaler.agent.victims.ranking import (
    DETERMINISTIC_RULES,
    Rule,
    check_takes_first,
    colocated_ranks,
    compare,
    deletion_order,
)

NOW = 1_000_000.0


def pod(name: str, cost: int | None = None, **kw: object) -> PodInfo:
    """A running, ready, scheduled pod (node ``n-<name>``) unless told otherwise."""
    annotations = {DELETION_COST: str(cost)} if cost is not None else {}
    fields: dict[str, object] = {
        "uid": f"uid-{name}",
        "node_name": f"n-{name}",
        "ready_since_s": NOW - 1000,
        "created_s": NOW - 2000,
        "annotations": annotations,
    }
    fields.update(kw)
    return PodInfo(name, **fields)  # type: ignore[arg-type]


def order(*pods: PodInfo, now_s: float | None = NOW) -> list[str]:
    """Pod names in deletion order."""
    return [p.name for p in deletion_order(pods, now_s)]


def decide(a: PodInfo, b: PodInfo, now_s: float | None = NOW) -> tuple[int, Rule]:
    """compare() with both pods alone on their nodes."""
    return compare(a, b, 1, 1, now_s)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, 0),
        ("", 0),
        ("0", 0),
        ("-2147483648", -2147483648),
        ("2147483647", 2147483647),
        ("2147483648", 0),
        ("+5", 0),
        ("007", 0),
        ("-", 0),
        ("1.5", 0),
        ("abc", 0),
        ("12", 12),
    ],
)
def test_deletion_cost_parses_like_kubernetes(text: str | None, expected: int) -> None:
    """Only a plain int32 counts; a plus sign, leading zeros or overflow read as 0."""
    assert parse_deletion_cost(text) == expected


def test_unassigned_pod_goes_before_assigned() -> None:
    """Rule 1: a pod without a node is deleted first, whatever its cost."""
    assert decide(pod("a", node_name=""), pod("b", cost=-5)) == (-1, Rule.UNASSIGNED)
    assert order(pod("b", cost=-5), pod("a", node_name="")) == ["a", "b"]


def test_pending_before_unknown_before_running() -> None:
    """Rule 2: phase ordinal Pending < Unknown < Running."""
    running, unknown, pending = pod("r"), pod("u", phase="Unknown"), pod("p", phase="Pending")
    assert order(running, unknown, pending) == ["p", "u", "r"]
    assert decide(pending, running) == (-1, Rule.PHASE)


def test_not_ready_before_ready_even_with_lowest_cost_on_the_ready_one() -> None:
    """Rule 3 comes before the deletion cost: a not-ready pod beats cost -2147483648."""
    victim = pod("victim", cost=-2147483648)
    assert decide(pod("sick", ready=False), victim) == (-1, Rule.READY)


def test_lower_deletion_cost_first() -> None:
    """Rule 4: lower cost first; absent counts as 0."""
    assert order(pod("a", cost=10), pod("b"), pod("c", cost=-1)) == ["c", "b", "a"]
    assert decide(pod("c", cost=-1), pod("b")) == (-1, Rule.DELETION_COST)


def test_more_colocated_pods_first() -> None:
    """Rule 5: the pod sharing its node with more active pods goes first."""
    a, b, c = pod("a", node_name="x"), pod("b", node_name="x"), pod("c", node_name="y")
    assert colocated_ranks([a, b, c]) == {"a": 2, "b": 2, "c": 1}
    assert order(c, a, b)[-1] == "c"
    assert compare(a, c, 2, 1, NOW) == (-1, Rule.COLOCATED)


def test_ready_more_recently_first_without_log_scale() -> None:
    """Rule 6 with LogarithmicScaleDown off: the later ready time goes first."""
    older, newer = pod("old", ready_since_s=NOW - 100), pod("new", ready_since_s=NOW - 99)
    assert decide(newer, older, now_s=None) == (-1, Rule.READY_TIME)


def test_ready_times_in_one_log_bucket_fall_to_uid() -> None:
    """Rule 6 with LogarithmicScaleDown: 100 s and 99 s ago share a log2 bucket, so UID decides."""
    older = pod("old", ready_since_s=NOW - 100, uid="a")
    newer = pod("new", ready_since_s=NOW - 99, uid="b")
    assert decide(older, newer) == (-1, Rule.UID)
    far = pod("far", ready_since_s=NOW - 1000, uid="a")
    assert decide(newer, far) == (-1, Rule.READY_TIME)


def test_more_restarts_first_then_sidecar_restarts() -> None:
    """Rule 7: the higher max container restart count goes first, sidecars break ties."""
    assert decide(pod("a", restarts=3), pod("b", restarts=1)) == (-1, Rule.RESTARTS)
    assert decide(pod("a", sidecar_restarts=0), pod("b", sidecar_restarts=2)) == (1, Rule.RESTARTS)


def test_newer_creation_first_and_missing_creation_time_first() -> None:
    """Rule 8: created more recently goes first; a zero creation time goes before any."""
    young, old = pod("y", created_s=NOW - 10), pod("o", created_s=NOW - 5000)
    assert decide(young, old) == (-1, Rule.CREATION)
    assert decide(old, pod("z", created_s=None)) == (1, Rule.CREATION)


def test_identical_pods_tie() -> None:
    """No rule tells two identical pods apart."""
    assert decide(pod("a", uid="u"), pod("b", uid="u")) == (0, Rule.TIE)


def test_inactive_pods_are_not_ranked() -> None:
    """Terminating, Succeeded and Failed pods are outside the ReplicaSet's count."""
    pods = (
        pod("a", deleting=True),
        pod("b", phase="Succeeded"),
        pod("c", phase="Failed"),
        pod("d"),
    )
    assert order(*pods) == ["d"]


def test_victims_with_lowest_cost_are_taken_first() -> None:
    """Two ready victims at -2147483648 before ready busy pods: confirmed."""
    pods = [
        pod("v1", cost=-2147483648),
        pod("busy", cost=2147483647),
        pod("v2", cost=-2147483648),
        pod("idle"),
    ]
    assert check_takes_first(pods, {"v1", "v2"}).ok


def test_a_pending_non_victim_blocks_confirmation() -> None:
    """A pending pod would be deleted before the victim: not confirmed, and it is named."""
    pods = [pod("v1", cost=-2147483648), pod("new", phase="Pending", node_name="", ready=False)]
    check = check_takes_first(pods, {"v1"})
    assert (check.ok, check.blocker, check.rule) == (False, "new", Rule.UNASSIGNED)
    assert check.reason == "pod new ranks before or with victim v1 by unassigned"


def test_a_not_ready_non_victim_blocks_confirmation() -> None:
    """A running but not-ready pod goes before a ready victim."""
    check = check_takes_first([pod("v1", cost=-2147483648), pod("slow", ready=False)], {"v1"})
    assert (check.ok, check.rule) == (False, Rule.READY)


def test_a_user_cost_equal_to_the_victim_cost_blocks_confirmation() -> None:
    """A tie on cost leaves the choice to clock-dependent rules: not confirmed."""
    pods = [pod("v1", cost=-2147483648, created_s=NOW - 10), pod("u", cost=-2147483648)]
    check = check_takes_first(pods, {"v1"})
    assert (check.ok, check.rule) == (False, Rule.CREATION)
    assert check.reason == "victim v1 ranks before u only by creation"


def test_deleting_every_pod_needs_no_ranking() -> None:
    """When every active pod is a victim the controller deletes them all."""
    assert check_takes_first([pod("v1"), pod("v2", deleting=True)], {"v1"}).ok


def test_a_victim_that_is_not_active_fails() -> None:
    """A terminating victim is not counted by the ReplicaSet, so the count would be off."""
    check = check_takes_first([pod("v1", deleting=True), pod("b")], {"v1"})
    assert (check.ok, check.reason) == (False, "victim v1 is not an active pod")


def brute_force_takes_first(pods: list[PodInfo], victims: set[str]) -> bool:
    """The definition: every victim before every other active pod by rules 1-4, pair by pair."""
    active = [p for p in pods if p.active]
    if len(victims) >= len(active):
        return True
    ranks = colocated_ranks(active)
    return all(
        compare(v, o, ranks[v.name], ranks[o.name], NOW)[0] < 0
        and compare(v, o, ranks[v.name], ranks[o.name], NOW)[1] in DETERMINISTIC_RULES
        for v in active
        if v.name in victims
        for o in active
        if o.name not in victims
    )


pod_fields = st.fixed_dictionaries(
    {
        "node_name": st.sampled_from(["", "a", "b"]),
        "phase": st.sampled_from(["Pending", "Unknown", "Running", "Succeeded"]),
        "ready": st.booleans(),
        "cost": st.sampled_from([None, "-2147483648", "0", "5", "2147483647", "+1"]),
        "deleting": st.booleans(),
        "created_s": st.sampled_from([None, NOW - 10, NOW - 1000]),
    }
)


@settings(max_examples=300, deadline=None)
@given(st.lists(pod_fields, min_size=1, max_size=8), st.data())
def test_the_fast_check_agrees_with_the_pairwise_definition(
    fields: list[dict[str, Any]], data: st.DataObject
) -> None:
    """check_takes_first (a key comparison) equals the pair-by-pair rule check."""
    pods = []
    for i, f in enumerate(fields):
        cost = f.pop("cost")
        pods.append(pod(f"p{i}", **f, annotations={DELETION_COST: cost} if cost else {}))
    active = [p.name for p in pods if p.active]
    victims = set(data.draw(st.lists(st.sampled_from(active), unique=True))) if active else set()
    if not victims:
        return
    assert check_takes_first(pods, victims, NOW).ok == brute_force_takes_first(pods, victims)
