"""What a user is told: each message once per RayCluster version, again after an edit; a bounded
memory; the core's refusals mapped to an event reason and a fixed counter label."""

from __future__ import annotations

from keda_ray_scaler.controller import notices
from keda_ray_scaler.controller.changes import Collision, Ownership
from keda_ray_scaler.controller.desired import GroupProblem, GroupRefused
from keda_ray_scaler.controller.notices import Notice, NoticeMemo
from keda_ray_scaler.controller.objects import Kind
from keda_ray_scaler.controller.optin import Conflict, Refusal

A = Notice("AutoscalingRefused", "unknown_value", "annotation says 'yes'")
B = Notice("WorkerGroupRefused", "bad_bounds", "group cpu: bounds")


def test_each_message_is_told_once_per_version() -> None:
    """Resyncs at one version repeat nothing; a new message at that version is told."""
    memo = NoticeMemo()
    assert memo.fresh("uid-1", "7", [A]) == [A]
    assert memo.fresh("uid-1", "7", [A]) == []
    assert memo.fresh("uid-1", "7", [A, B]) == [B]


def test_a_new_version_tells_what_still_stands() -> None:
    """The cluster edited: its refusals are told again."""
    memo = NoticeMemo()
    memo.fresh("uid-1", "7", [A, B])
    assert memo.fresh("uid-1", "8", [A]) == [A]


def test_the_controller_s_own_status_write_is_no_edit() -> None:
    """moved(): what was told at the version read stays told at the one the write made; a
    move from a version the memo does not hold changes nothing."""
    memo = NoticeMemo()
    memo.fresh("uid-1", "7", [A])
    memo.moved("uid-1", "7", "9")
    assert memo.fresh("uid-1", "9", [A]) == []
    memo.moved("uid-1", "7", "12")
    assert memo.fresh("uid-1", "12", [A]) == [A]


def test_clusters_are_told_apart_and_the_memory_is_bounded() -> None:
    """Two uids, each their own; past the limit the oldest is forgotten (told again)."""
    memo = NoticeMemo(limit=2)
    for uid in ("a", "b", "c"):
        assert memo.fresh(uid, "1", [A]) == [A]
    assert memo.fresh("c", "1", [A]) == []
    assert memo.fresh("a", "1", [A]) == [A]
    memo.forget("a")
    assert memo.fresh("a", "1", [A]) == [A]


def test_the_core_s_refusals_become_events_with_fixed_labels() -> None:
    """Reason per scope, label from the core's enum, message as the core wrote it."""
    refusal = Refusal(Conflict.IN_TREE_AUTOSCALER, "spec.enableInTreeAutoscaling", "true", "m")
    assert notices.cluster_refused(refusal) == Notice(
        "AutoscalingRefused", "in_tree_autoscaler", "m"
    )
    group = GroupRefused("cpu", GroupProblem.DUPLICATE, "a second group 'cpu'")
    assert notices.group_refused(group).reason == "WorkerGroupRefused"
    found = Collision(Kind.ROLE, "ray-demo-agent", Ownership.OTHER_OWNER, "Role ray/x is another's")
    told = notices.collision(found)
    assert (told.reason, told.label) == ("ObjectConflict", "other_owner")


def test_a_field_conflict_names_the_fields_escaped_and_at_most_five() -> None:
    """Field paths come from the API server; shown escaped, the sixth on elided."""
    fields = [f".spec.f{i}" for i in range(6)]
    fields[0] = ".metadata.labels.x\n"
    told = notices.field_conflict(Kind.SCALED_OBJECT, "ray/ray-demo-cpu", fields)
    assert told.label == "field_conflict"
    assert "\\n" in told.message and "\n" not in told.message
    assert ".spec.f4" in told.message and ".spec.f5" not in told.message
