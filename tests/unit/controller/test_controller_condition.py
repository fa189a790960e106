"""The condition keda-ray-scaler.io/Autoscaled: decided from a round (each reason, messages
escaped, groups named), written only when the cluster as read shows another, its transition time
kept while the status holds; in a round on a dict-backed store: refused, served, opted out, a
failed write retried, and the controller's own status write repeating no event."""

from __future__ import annotations

from typing import Any

from controller_input import raycluster, worker
from controller_store import FakeStore
from prometheus_client import CollectorRegistry

from keda_ray_scaler.controller import condition, notices
from keda_ray_scaler.controller.condition import AUTOSCALED, Condition, Reason, Unsaid
from keda_ray_scaler.controller.desired import desired_objects
from keda_ray_scaler.controller.kube_calls import CallFailed
from keda_ray_scaler.controller.metrics import ControllerMetrics
from keda_ray_scaler.controller.notices import Notice
from keda_ray_scaler.controller.optin import OPT_IN_ANNOTATION, OptIn, Refusal, read_cluster
from keda_ray_scaler.controller.reconcile import Outcome, Reconciler, RoundResult
from keda_ray_scaler.controller.template import ControllerTemplate

NOW_S = 1_790_000_000.0
NOW = "2026-09-21T14:13:20Z"
CONFLICT = Notice(notices.OBJECT_CONFLICT, "not_managed", "ScaledObject ray/ray-demo-cpu: ...")


def desired(*groups: dict[str, Any]) -> Any:
    """The desired objects of RayCluster demo with ``groups``."""
    rc = raycluster(*groups)
    opt_in = read_cluster(rc)
    assert isinstance(opt_in, OptIn)
    return desired_objects(rc, opt_in, ControllerTemplate())


def shown_as(entry: dict[str, Any], generation: int = 3) -> dict[str, Any]:
    """RayCluster demo at ``generation`` whose status holds KubeRay's condition and ``entry``."""
    rc = raycluster(worker("cpu"))
    rc["metadata"]["generation"] = generation
    kuberay = {"type": "HeadPodReady", "status": "True", "reason": "HeadPodRunningAndReady"}
    rc["status"] = {"conditions": [kuberay, entry]}
    return rc


def test_a_served_round_with_nothing_refused_is_objects_ready() -> None:
    """Every object in place: True, ObjectsReady, counting the groups served."""
    got = condition.of_round(desired(worker("cpu"), worker("gpu")), [], settled=True)
    assert got == Condition(
        True, Reason.OBJECTS_READY, "2 worker groups autoscaled: every object in place"
    )


def test_a_refused_cluster_is_autoscaling_refused_with_the_refusal_s_message() -> None:
    """The notice's message as the core escaped it, cut at MESSAGE_MAX."""
    rc = raycluster(worker("cpu"), annotations={OPT_IN_ANNOTATION: "yes\n\x1b[31m"})
    refusal = read_cluster(rc)
    assert isinstance(refusal, Refusal)
    got = condition.of_refusal(notices.cluster_refused(refusal))
    assert (got.ready, got.reason) == (False, Reason.AUTOSCALING_REFUSED)
    assert "yes" in got.message and "\n" not in got.message and "\x1b" not in got.message
    long = Notice(notices.CLUSTER_REFUSED, "x", "m" * 10_000)
    assert len(condition.of_refusal(long).message) == condition.MESSAGE_MAX


def test_a_refused_group_is_named_escaped_and_the_others_counted() -> None:
    """A group with a bad name among two good: WorkerGroupRefused naming it escaped."""
    plan = desired(worker("cpu"), worker("Bad\x1bName"), worker("gpu"))
    told = [notices.group_refused(r) for r in plan.refused]
    got = condition.of_round(plan, told, settled=True)
    assert isinstance(got, Condition)
    assert (got.ready, got.reason) == (False, Reason.WORKER_GROUP_REFUSED)
    assert got.message.startswith("worker groups refused: 'Bad\\\\x1bName' (")
    assert got.message.endswith("; 2 others autoscaled") and "\x1b" not in got.message


def test_an_object_in_the_way_is_object_conflict_and_a_group_refusal_comes_first() -> None:
    """A conflict alone: ObjectConflict; with a refused group: WorkerGroupRefused, both said."""
    plan = desired(worker("cpu"))
    got = condition.of_round(plan, [CONFLICT], settled=True)
    assert got == Condition(False, Reason.OBJECT_CONFLICT, CONFLICT.message)
    both = desired(worker("cpu"), worker("cpu"))
    told = [CONFLICT, *(notices.group_refused(r) for r in both.refused)]
    mixed = condition.of_round(both, told, settled=False)
    assert isinstance(mixed, Condition) and mixed.reason is Reason.WORKER_GROUP_REFUSED
    assert mixed.message.endswith(f"; {CONFLICT.message}); 1 others autoscaled")


def test_an_unsettled_round_keeps_the_condition_and_an_opted_out_one_removes_it() -> None:
    """Stale or failed and nothing told: KEEP; nothing desired: REMOVE."""
    assert condition.of_round(desired(worker("cpu")), [], settled=False) is Unsaid.KEEP
    nothing = desired(worker("cpu"))
    empty = type(nothing)(nothing.owner)
    assert condition.of_round(empty, [], settled=True) is Unsaid.REMOVE


def test_nothing_is_written_when_the_cluster_shows_the_condition_already() -> None:
    """Same status, reason, message and generation: no write; KEEP never writes."""
    ready = Condition(
        True, Reason.OBJECTS_READY, "1 worker groups autoscaled: every object in place"
    )
    entry = {
        "type": AUTOSCALED,
        "status": "True",
        "reason": "ObjectsReady",
        "message": ready.message,
        "observedGeneration": 3,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    assert condition.to_write(shown_as(entry), ready, NOW_S) is None
    assert condition.to_write(shown_as(entry), Unsaid.KEEP, NOW_S) is None
    assert condition.to_write(raycluster(), Unsaid.REMOVE, NOW_S) is None
    assert condition.to_write(shown_as(entry), Unsaid.REMOVE, NOW_S) == ()


def test_the_transition_time_moves_only_when_the_status_flips() -> None:
    """A new reason at the same status keeps lastTransitionTime; a flip takes now; a new
    generation alone is written (observedGeneration)."""
    entry = {
        "type": AUTOSCALED,
        "status": "False",
        "reason": "ObjectConflict",
        "message": "m",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    group = Condition(False, Reason.WORKER_GROUP_REFUSED, "g")
    (same,) = condition.to_write(shown_as(entry), group, NOW_S) or ()
    assert (same["reason"], same["lastTransitionTime"]) == (
        "WorkerGroupRefused",
        entry["lastTransitionTime"],
    )
    ready = Condition(True, Reason.OBJECTS_READY, "r")
    (flipped,) = condition.to_write(shown_as(entry), ready, NOW_S) or ()
    assert flipped == {
        "type": AUTOSCALED,
        "status": "True",
        "reason": "ObjectsReady",
        "message": "r",
        "observedGeneration": 3,
        "lastTransitionTime": NOW,
    }
    conflict = Condition(False, Reason.OBJECT_CONFLICT, "m")
    assert condition.to_write(shown_as(entry), conflict, NOW_S) is None
    (edited,) = condition.to_write(shown_as(entry, generation=4), conflict, NOW_S) or ()
    assert edited["observedGeneration"] == 4


def reconciler(store: FakeStore) -> tuple[Reconciler, CollectorRegistry]:
    """A reconciler on ``store``, a fresh registry, a fixed clock."""
    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry)
    return Reconciler(store, ControllerTemplate(), metrics, lambda: NOW_S), registry


def ours(store: FakeStore) -> list[tuple[str, str]]:
    """(status, reason) of each condition of ours on demo."""
    found = store.clusters["ray", "demo"].get("status", {}).get("conditions", ())
    return [(c["status"], c["reason"]) for c in found if c["type"] == AUTOSCALED]


def test_a_refused_cluster_gets_the_condition_once_and_one_event_however_many_rounds() -> None:
    """enableInTreeAutoscaling: the condition written once; neither the controller's own status
    write nor KubeRay's (new resourceVersions) repeats the event, nor a spec edit that leaves the
    refusal standing (the condition shows it; the event repeats only after a while)."""
    store = FakeStore(raycluster(worker("cpu"), in_tree=True))
    store.clusters["ray", "demo"]["metadata"]["resourceVersion"] = "1"
    rec, _ = reconciler(store)
    for _ in range(3):
        assert rec.cluster("ray", "demo") == RoundResult(Outcome.REFUSED)
    assert ours(store) == [("False", "AutoscalingRefused")]
    ((_, (entry,)),) = store.status_writes
    assert "spec.enableInTreeAutoscaling" in entry["message"]
    assert len(store.events) == 1
    store.clusters["ray", "demo"]["metadata"]["resourceVersion"] = "2"  # KubeRay's status write
    rec.cluster("ray", "demo")
    assert (len(store.events), len(store.status_writes)) == (1, 1)
    store.clusters["ray", "demo"]["metadata"]["generation"] = 2  # an edit, still in-tree
    rec.cluster("ray", "demo")  # the condition written again: its observedGeneration
    assert (len(store.events), len(store.status_writes)) == (1, 2)


def test_a_served_cluster_is_ready_then_its_opt_out_removes_the_condition() -> None:
    """True once its objects are made, not written again; opted out: ours gone, KubeRay's kept."""
    store = FakeStore(raycluster(worker("cpu")))
    store.clusters["ray", "demo"]["status"] = {"conditions": [{"type": "HeadPodReady"}]}
    rec, _ = reconciler(store)
    rec.cluster("ray", "demo")
    rec.cluster("ray", "demo")
    assert ours(store) == [("True", "ObjectsReady")] and len(store.status_writes) == 1
    store.clusters["ray", "demo"]["metadata"]["annotations"] = {OPT_IN_ANNOTATION: "disabled"}
    rec.cluster("ray", "demo")
    assert ours(store) == [] and store.status_writes[-1] == ("demo", ())
    assert store.clusters["ray", "demo"]["status"]["conditions"] == [{"type": "HeadPodReady"}]


def test_a_failed_condition_write_is_logged_and_written_again_next_round() -> None:
    """The status write refused: the round's outcome as it was; the next round writes it."""
    store = FakeStore(raycluster(worker("cpu"), in_tree=True))
    store.fail["apply", "RayCluster/status", "demo"] = CallFailed("apply", 403, "forbidden", ())
    rec, _ = reconciler(store)
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.REFUSED)
    assert ours(store) == []
    del store.fail["apply", "RayCluster/status", "demo"]
    rec.cluster("ray", "demo")
    assert ours(store) == [("False", "AutoscalingRefused")]
