"""One RayCluster's round on a dict-backed store: what is read, written and told, and the outcome
counted; a refused cluster is told once per generation (again after a while) and nothing of it is
touched; an object of another's is never written; a write refused or stale does not stop the
others."""

from __future__ import annotations

from typing import Any

import pytest
from controller_input import raycluster, worker
from controller_store import FakeStore, conflict
from prometheus_client import CollectorRegistry

from keda_ray_scaler.clock import Now
from keda_ray_scaler.controller import notices
from keda_ray_scaler.controller.desired import DesiredObjects
from keda_ray_scaler.controller.kube_calls import CallFailed
from keda_ray_scaler.controller.metrics import ControllerMetrics
from keda_ray_scaler.controller.objects import Kind
from keda_ray_scaler.controller.optin import OPT_IN_ANNOTATION
from keda_ray_scaler.controller.reconcile import Outcome, Reconciler, RoundResult, decide
from keda_ray_scaler.controller.template import ControllerTemplate

IDENTITY = [("apply", k, "ray-demo-agent") for k in ("ServiceAccount", "Role", "RoleBinding")]


def cluster(*groups: dict[str, Any], version: str = "1", **kw: Any) -> dict[str, Any]:
    """RayCluster demo in namespace ray at ``version``."""
    rc = raycluster(*groups, **kw)
    rc["metadata"]["resourceVersion"] = version
    return rc


def reconciler(
    store: FakeStore, now: Now = lambda: 1_790_000_000.0
) -> tuple[Reconciler, CollectorRegistry]:
    """A reconciler on ``store`` with a fresh registry, at ``now``."""
    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry)
    return Reconciler(store, ControllerTemplate(), metrics, now), registry


def rounds(registry: CollectorRegistry, outcome: Outcome) -> float:
    """Rounds counted with ``outcome``."""
    value = registry.get_sample_value(
        "ray_scaler_controller_rounds_total", {"outcome": outcome.value}
    )
    return value or 0.0


def test_a_new_cluster_gets_its_objects_then_a_second_round_writes_nothing() -> None:
    """Identity first, each group's RayWorkerGroup before its ScaledObject; then unchanged."""
    store = FakeStore(cluster(worker("cpu")))
    rec, registry = reconciler(store)
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.CHANGED, 5)
    cpu = [("apply", "RayWorkerGroup", "ray-demo-cpu"), ("apply", "ScaledObject", "ray-demo-cpu")]
    assert store.writes == IDENTITY + cpu
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.UNCHANGED)
    assert len(store.writes) == 5
    assert (rounds(registry, Outcome.CHANGED), rounds(registry, Outcome.UNCHANGED)) == (1, 1)


def test_a_group_appended_updates_the_role_before_its_rayworkergroup_is_made() -> None:
    """The Role names each group's RayWorkerGroup: updated before that RayWorkerGroup is
    created, so the agent never sees a group whose status it may not yet write."""
    store = FakeStore(cluster(worker("cpu")))
    rec, _ = reconciler(store)
    rec.cluster("ray", "demo")
    store.clusters["ray", "demo"]["spec"]["workerGroupSpecs"].append(worker("small"))
    store.writes.clear()
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.CHANGED, 3)
    assert store.writes == [
        ("apply", "Role", "ray-demo-agent"),
        ("apply", "RayWorkerGroup", "ray-demo-small"),
        ("apply", "ScaledObject", "ray-demo-small"),
    ]


def test_a_cluster_opted_out_loses_everything_of_ours_and_nothing_else() -> None:
    """Annotation disabled: our objects deleted, ScaledObjects first; a user's object stays."""
    store = FakeStore(cluster(worker("cpu")))
    rec, _ = reconciler(store)
    rec.cluster("ray", "demo")
    store.put(Kind.SCALED_OBJECT, {"metadata": {"name": "mine", "namespace": "ray"}})
    store.clusters["ray", "demo"]["metadata"]["annotations"] = {OPT_IN_ANNOTATION: "disabled"}
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.CHANGED, 5)
    deleted = [w for w in store.writes if w[0] == "delete"]
    assert deleted[0] == ("delete", "ScaledObject", "ray-demo-cpu")
    assert {(k, n) for k, _, n in store.objects} == {(Kind.SCALED_OBJECT, "mine")}
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.LEFT_ALONE)


def test_a_refused_cluster_is_told_once_per_generation_and_keeps_its_objects() -> None:
    """A typo in the annotation: one event and one count, not repeated by resyncs, by the
    controller's own condition write or KubeRay's status writes (new resourceVersions), nor by a
    spec change while it stands; again once the re-show period is past; no write."""
    store = FakeStore(cluster(worker("cpu")))
    clock = [1_790_000_000.0]
    rec, registry = reconciler(store, lambda: clock[0])
    rec.cluster("ray", "demo")
    written, conditions = list(store.writes), len(store.status_writes)
    meta = store.clusters["ray", "demo"]["metadata"]
    meta["annotations"] = {OPT_IN_ANNOTATION: "yes"}
    meta["generation"] = 1
    for step in range(3):
        meta["resourceVersion"] = str(100 + step)  # KubeRay's status writes
        clock[0] += 30
        assert rec.cluster("ray", "demo") == RoundResult(Outcome.REFUSED)
    assert len(store.status_writes) == conditions + 1
    meta["generation"] = 2
    rec.cluster("ray", "demo")
    assert len(store.events) == 1
    clock[0] += notices.RESHOW_S
    rec.cluster("ray", "demo")
    assert [n.reason for _, n in store.events] == [notices.CLUSTER_REFUSED] * 2
    assert OPT_IN_ANNOTATION in store.events[0][1].message
    assert store.writes == written
    refusals = {"reason": "unknown_value"}
    assert registry.get_sample_value("ray_scaler_controller_refusals_total", refusals) == 2


def test_a_foreign_scaledobject_is_told_left_alone_and_blocks_only_its_group() -> None:
    """A user's ScaledObject ray-demo-cpu: an ObjectConflict event; the cpu group's objects not
    made, the gpu group's made."""
    store = FakeStore(cluster(worker("cpu"), worker("gpu")))
    hand = store.put(Kind.SCALED_OBJECT, {"metadata": {"name": "ray-demo-cpu", "namespace": "ray"}})
    rec, _ = reconciler(store)
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.CONFLICT, 5)
    assert ("apply", "RayWorkerGroup", "ray-demo-cpu") not in store.writes
    assert store.objects[Kind.SCALED_OBJECT, "ray", "ray-demo-cpu"] is hand
    ((name, notice),) = store.events
    assert (name, notice.reason, notice.label) == ("demo", "ObjectConflict", "not_managed")


def test_a_field_another_manager_holds_is_told_and_the_other_writes_go_on() -> None:
    """A bound changed while a user holds maxReplicaCount: a field_conflict notice naming the
    field; the other group's update still written."""
    store = FakeStore(cluster(worker("cpu"), worker("gpu")))
    rec, _ = reconciler(store)
    rec.cluster("ray", "demo")
    groups = store.clusters["ray", "demo"]["spec"]["workerGroupSpecs"]
    groups[0]["maxReplicas"], groups[1]["maxReplicas"] = 20, 30
    store.fail["apply", "ScaledObject", "ray-demo-cpu"] = conflict(".spec.maxReplicaCount")
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.CONFLICT, 1)
    assert store.writes[-1] == ("apply", "ScaledObject", "ray-demo-gpu")
    ((_, notice),) = store.events
    assert notice.label == notices.FIELD_CONFLICT
    assert ".spec.maxReplicaCount" in notice.message


@pytest.mark.parametrize(
    ("failure", "outcome"),
    [
        (CallFailed("apply", 409, "the object has been modified", ()), Outcome.STALE),
        (CallFailed("apply", 404, "not found", ()), Outcome.STALE),
        (CallFailed("apply", 403, "forbidden", ()), Outcome.FAILED),
    ],
    ids=["changed-since-read", "gone-since-read", "forbidden"],
)
def test_a_write_refused_ends_the_round_stale_or_failed(
    failure: CallFailed, outcome: Outcome
) -> None:
    """A 409 or 404 is stale (decided again soon); anything else failed; the rest is written."""
    store = FakeStore(cluster(worker("cpu")))
    store.fail["apply", "Role", "ray-demo-agent"] = failure
    rec, _ = reconciler(store)
    assert rec.cluster("ray", "demo") == RoundResult(outcome, 4)


def test_an_object_being_deleted_is_not_written_and_the_round_is_stale() -> None:
    """Our ScaledObject with a deletionTimestamp (KEDA's finalizer): no write onto it; made
    again by a later round, once it is gone."""
    store = FakeStore(cluster(worker("cpu")))
    rec, _ = reconciler(store)
    rec.cluster("ray", "demo")
    store.objects[Kind.SCALED_OBJECT, "ray", "ray-demo-cpu"]["metadata"]["deletionTimestamp"] = "t"
    store.clusters["ray", "demo"]["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 7
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.STALE, 0)


def test_a_namespace_pass_lists_each_kind_once_and_rounds_every_cluster() -> None:
    """Two clusters, one refused: each its own outcome."""
    typo = cluster(name="other", uid="uid-other", annotations={OPT_IN_ANNOTATION: "on"})
    store = FakeStore(cluster(worker("cpu")), typo)
    rec, _ = reconciler(store)
    assert rec.namespace("ray") == {
        "demo": RoundResult(Outcome.CHANGED, 5),
        "other": RoundResult(Outcome.REFUSED),
    }
    assert rec.namespace("ray")["demo"] == RoundResult(Outcome.UNCHANGED)


def test_an_event_that_cannot_be_created_is_still_counted_and_the_round_goes_on() -> None:
    """The events API refusing: the refusal logged and counted, the round's outcome kept."""
    store = FakeStore(cluster(worker("cpu"), in_tree=True))
    store.fail["emit", "Event", "demo"] = CallFailed("create event", 403, "forbidden", ())
    rec, registry = reconciler(store)
    assert rec.cluster("ray", "demo") == RoundResult(Outcome.REFUSED)
    labels = {"reason": "in_tree_autoscaler"}
    assert registry.get_sample_value("ray_scaler_controller_refusals_total", labels) == 1


def test_decide_leaves_a_cluster_being_deleted_and_one_never_served() -> None:
    """Being deleted, or not opted in under a name we cannot use: nothing to do (None); opted
    in under such a name: refused, naming the field."""
    going = cluster(worker("cpu"))
    going["metadata"]["deletionTimestamp"] = "2026-11-28T10:00:00Z"
    assert decide(going, ControllerTemplate()) is None
    dotted = cluster(worker("cpu"), name="a.b", annotations={})
    assert decide(dotted, ControllerTemplate()) is None
    refused = decide(cluster(worker("cpu"), name="a.b"), ControllerTemplate())
    assert isinstance(refused, notices.Notice)
    assert (refused.label, "metadata.name" in refused.message) == (notices.BAD_CLUSTER_NAME, True)
    assert isinstance(decide(cluster(annotations={}), ControllerTemplate()), DesiredObjects)
