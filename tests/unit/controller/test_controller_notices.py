"""What a user is told: each message once per RayCluster generation, whatever its resourceVersion;
again after the re-show period; a bounded memory; the core's refusals mapped to an event reason
and a fixed counter label."""

from __future__ import annotations

from keda_ray_scaler.controller import notices
from keda_ray_scaler.controller.changes import Collision, Ownership
from keda_ray_scaler.controller.desired import GroupProblem, GroupRefused
from keda_ray_scaler.controller.notices import Notice, NoticeMemo
from keda_ray_scaler.controller.objects import Kind
from keda_ray_scaler.controller.optin import Conflict, Refusal

A = Notice("AutoscalingRefused", "unknown_value", "annotation says 'yes'")
B = Notice("WorkerGroupRefused", "bad_bounds", "group cpu: bounds")


T0 = 1_790_000_000.0
LATER = T0 + notices.RESHOW_S


def test_each_message_is_told_once_per_generation_whatever_the_resource_version() -> None:
    """Resyncs repeat nothing; nor does a status write (KubeRay's, or the controller's own
    condition): the memo is given the generation, never the resourceVersion. A new message at
    that generation is told."""
    memo = NoticeMemo()
    assert memo.fresh("uid-1", "3", [A], T0) == [A]
    assert memo.fresh("uid-1", "3", [A], T0 + 30) == []
    assert memo.fresh("uid-1", "3", [A, B], T0 + 60) == [B]
    assert memo.fresh("uid-1", "3", [A, A, B], T0 + 90) == []


def test_a_new_generation_tells_only_what_is_new() -> None:
    """A spec change (the agent's replicas at each scale step, or a user's edit) repeats no
    notice that still stands; what the new generation tells first is told."""
    memo = NoticeMemo()
    memo.fresh("uid-1", "3", [A], T0)
    assert memo.fresh("uid-1", "4", [A], T0 + 1) == []
    assert memo.fresh("uid-1", "5", [A, B], T0 + 2) == [B]


def test_a_new_generation_forgets_what_it_no_longer_tells() -> None:
    """An edit mended B; a later edit brings it back: told at once. At one generation a round
    that tells less (cut short) forgets nothing."""
    memo = NoticeMemo()
    memo.fresh("uid-1", "3", [A, B], T0)
    assert memo.fresh("uid-1", "3", [A], T0 + 1) == []
    assert memo.fresh("uid-1", "3", [A, B], T0 + 2) == []
    assert memo.fresh("uid-1", "4", [A], T0 + 3) == []
    assert memo.fresh("uid-1", "5", [A, B], T0 + 4) == [B]


def test_a_notice_that_persists_is_told_again_after_the_reshow_period() -> None:
    """Shown again RESHOW_S after it was last shown, at any generation; timed from then."""
    memo = NoticeMemo()
    memo.fresh("uid-1", "3", [A], T0)
    memo.fresh("uid-1", "3", [B], T0 + 100)
    assert memo.fresh("uid-1", "3", [A, B], LATER - 1) == []
    assert memo.fresh("uid-1", "4", [A, B], LATER) == [A]
    assert memo.fresh("uid-1", "4", [A, B], LATER + 100) == [B]
    assert memo.fresh("uid-1", "4", [A, B], LATER + 101) == []
    short = NoticeMemo(reshow_s=60)
    short.fresh("uid-1", "3", [A], T0)
    assert (short.fresh("uid-1", "3", [A], T0 + 59), short.fresh("uid-1", "3", [A], T0 + 60)) == (
        [],
        [A],
    )


def test_clusters_are_told_apart_and_the_memory_is_bounded() -> None:
    """Two uids, each their own; past the limit the oldest is forgotten (told again)."""
    memo = NoticeMemo(limit=2)
    for uid in ("a", "b", "c"):
        assert memo.fresh(uid, "1", [A], T0) == [A]
    assert memo.fresh("c", "1", [A], T0) == []
    assert memo.fresh("a", "1", [A], T0) == [A]
    memo.forget("a")
    assert memo.fresh("a", "1", [A], T0) == [A]


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
