"""The writes from what exists to what one RayCluster should have: a group added, removed or
rebounded gives exactly its changes; what the API server or KEDA add never causes a write; an
object that is not the controller's own for this cluster is a collision, never written or
deleted, and blocks the rest of its unit."""

from __future__ import annotations

import copy
from typing import Any

from controller_input import foreign, raycluster, stored, worker

from keda_ray_scaler.controller.changes import (
    Changes,
    Deletion,
    Ownership,
    plan_changes,
)
from keda_ray_scaler.controller.desired import DesiredObjects, desired_objects, nothing_desired
from keda_ray_scaler.controller.objects import MANAGED_BY_LABEL, Kind, Manifest
from keda_ray_scaler.controller.optin import OptIn
from keda_ray_scaler.controller.template import ControllerTemplate


def want(*groups: dict[str, Any], uid: str = "uid-demo-1") -> DesiredObjects:
    """The desired objects of cluster demo (namespace ray) with these groups."""
    return desired_objects(raycluster(*groups, uid=uid), OptIn(), ControllerTemplate())


def made(desired: DesiredObjects) -> list[dict[str, Any]]:
    """Every desired object as the API server returns it once made."""
    return [stored(m) for m in desired.manifests]


def names(manifests: tuple[Manifest, ...]) -> set[tuple[Kind, str]]:
    """(kind, name) of each."""
    return {(m.kind, m.name) for m in manifests}


def test_nothing_there_creates_everything_in_order() -> None:
    """A new cluster: every object created, identity first."""
    desired = want(worker("cpu"), worker("gpu"))
    changes = plan_changes(desired, [])
    assert changes == Changes(create=desired.manifests)


def test_objects_as_the_api_returns_them_need_no_write() -> None:
    """uid, resourceVersion, managed fields, another label, the HPA's replicas, KEDA's
    finalizer and status: none is a field the controller writes."""
    desired = want(worker("cpu"), worker("gpu"))
    changes = plan_changes(desired, made(desired))
    assert changes.writes == 0 and changes.conflicts == ()
    assert changes.unchanged == desired.manifests


def test_a_group_added_creates_its_two_objects_and_widens_the_role() -> None:
    """New group gpu: its RayWorkerGroup and ScaledObject created, the Role updated."""
    before, after = want(worker("cpu")), want(worker("cpu"), worker("gpu"))
    changes = plan_changes(after, made(before))
    assert names(changes.create) == {
        (Kind.RAY_WORKER_GROUP, "ray-demo-gpu"),
        (Kind.SCALED_OBJECT, "ray-demo-gpu"),
    }
    (update,) = changes.update
    assert (update.manifest.kind, update.fields) == (Kind.ROLE, ("rules",))
    assert (update.uid, update.resource_version) == ("uid-role-ray-demo-agent", "7")
    assert changes.delete == changes.replace == changes.conflicts == ()


def test_a_group_removed_deletes_its_two_objects_and_narrows_the_role() -> None:
    """Group gpu gone: its objects deleted (uid preconditions), the Role updated."""
    before, after = want(worker("cpu"), worker("gpu")), want(worker("cpu"))
    changes = plan_changes(after, made(before))
    assert set(changes.delete) == {
        Deletion(Kind.RAY_WORKER_GROUP, "ray-demo-gpu", "uid-rayworkergroup-ray-demo-gpu"),
        Deletion(Kind.SCALED_OBJECT, "ray-demo-gpu", "uid-scaledobject-ray-demo-gpu"),
    }
    assert [u.manifest.kind for u in changes.update] == [Kind.ROLE]
    assert changes.create == changes.replace == ()


def test_bounds_changed_update_only_that_scaled_object() -> None:
    """maxReplicas 10 -> 20 of cpu: its ScaledObject's spec, nothing else."""
    before = want(worker("cpu", max=10), worker("gpu"))
    after = want(worker("cpu", max=20), worker("gpu"))
    changes = plan_changes(after, made(before))
    (update,) = changes.update
    assert (update.manifest.kind, update.manifest.name, update.fields) == (
        Kind.SCALED_OBJECT,
        "ray-demo-cpu",
        ("spec",),
    )
    assert update.manifest.body["spec"]["maxReplicaCount"] == 20
    assert changes.writes == 1


def test_a_fallback_an_earlier_controller_wrote_is_a_difference_so_the_apply_drops_it() -> None:
    """A ScaledObject made before the controller stopped writing ``spec.fallback`` (KEDA 2.19+
    starts a pod at zero under any fallback): updated, naming the field; nothing else written."""
    desired = want(worker("cpu"), worker("gpu"))
    existing = made(desired)
    (old,) = [
        o
        for o in existing
        if o["kind"] == "ScaledObject" and o["metadata"]["name"] == "ray-demo-gpu"
    ]
    old["spec"]["fallback"] = {"failureThreshold": 3, "replicas": 1, "behavior": "currentReplicas"}
    changes = plan_changes(desired, existing)
    (update,) = changes.update
    assert (update.manifest.name, update.fields) == ("ray-demo-gpu", ("spec.fallback",))
    assert "fallback" not in update.manifest.body["spec"]
    assert changes.writes == 1


def test_a_label_or_owner_reference_removed_by_hand_is_restored() -> None:
    """Another's edit of our marks (the managed-by label stays): written back."""
    desired = want(worker("cpu"))
    existing = made(desired)
    (account,) = (o for o in existing if o["kind"] == "ServiceAccount")
    del account["metadata"]["labels"]["ray.io/cluster"]
    account["metadata"]["ownerReferences"].append({"kind": "Other", "uid": "x"})
    account["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = False
    account["automountServiceAccountToken"] = True
    (update,) = plan_changes(desired, existing).update
    assert update.fields == (
        "metadata.labels",
        "metadata.ownerReferences",
        "automountServiceAccountToken",
    )


def test_an_immutable_field_that_differs_means_replace() -> None:
    """A RoleBinding's roleRef or a RayWorkerGroup's spec cannot be updated: replaced."""
    desired = want(worker("cpu"))
    existing = made(desired)
    for obj in existing:
        if obj["kind"] == "RoleBinding":
            obj["roleRef"]["name"] = "old-role"
        if obj["kind"] == "RayWorkerGroup":
            obj["spec"]["groupName"] = "gpu"
    changes = plan_changes(desired, existing)
    assert {(u.manifest.kind, u.fields) for u in changes.replace} == {
        (Kind.ROLE_BINDING, ("roleRef",)),
        (Kind.RAY_WORKER_GROUP, ("spec",)),
    }
    assert changes.update == ()


def test_a_foreign_object_of_the_same_name_is_a_conflict_never_written() -> None:
    """The hand-written example's ScaledObject ray-demo-cpu: a collision; neither it nor its
    RayWorkerGroup is made or written, the other group goes on."""
    desired = want(worker("cpu"), worker("gpu"))
    hand = foreign(Kind.SCALED_OBJECT, "ray-demo-cpu")
    changes = plan_changes(desired, [hand])
    (conflict,) = changes.conflicts
    assert (conflict.kind, conflict.name, conflict.ownership) == (
        Kind.SCALED_OBJECT,
        "ray-demo-cpu",
        Ownership.NOT_MANAGED,
    )
    assert "ScaledObject ray/ray-demo-cpu is not managed by" in conflict.message
    assert names(changes.blocked) == {
        (Kind.RAY_WORKER_GROUP, "ray-demo-cpu"),
        (Kind.SCALED_OBJECT, "ray-demo-cpu"),
    }
    assert all(m.group != "cpu" for m in changes.create)
    assert changes.update == changes.replace == changes.delete == ()


def test_a_foreign_object_is_never_deleted_even_when_no_longer_desired() -> None:
    """A group removed: the hand-written objects of its name stay; only ours go."""
    desired = want(worker("cpu"))
    existing = [foreign(Kind.SCALED_OBJECT, "ray-demo-gpu"), foreign(Kind.ROLE, "other")]
    assert plan_changes(desired, existing).delete == ()
    assert plan_changes(nothing_desired(raycluster()), existing).delete == ()


def test_an_object_marked_ours_but_of_another_cluster_uid_is_left_alone() -> None:
    """The same name made for a RayCluster since deleted (another uid): a collision; not deleted
    when undesired either."""
    old = want(worker("cpu"), uid="uid-demo-0")
    desired = want(worker("cpu"))
    changes = plan_changes(desired, made(old))
    assert {c.ownership for c in changes.conflicts} == {Ownership.OTHER_OWNER}
    assert len(changes.conflicts) == len(desired.manifests)
    assert changes.writes == 0
    assert plan_changes(nothing_desired(raycluster()), made(old)).delete == ()


def test_an_identity_collision_blocks_the_whole_identity() -> None:
    """A hand-written ServiceAccount ray-demo-agent: no Role is bound to it; groups go on."""
    desired = want(worker("cpu"))
    changes = plan_changes(desired, [foreign(Kind.SERVICE_ACCOUNT, "ray-demo-agent")])
    assert {m.kind for m in changes.blocked} == {
        Kind.SERVICE_ACCOUNT,
        Kind.ROLE,
        Kind.ROLE_BINDING,
    }
    assert {m.kind for m in changes.create} == {Kind.RAY_WORKER_GROUP, Kind.SCALED_OBJECT}


def test_the_managed_by_label_alone_is_not_ownership() -> None:
    """A foreign object with our label but no owner reference: a collision (other owner)."""
    desired = want(worker("cpu"))
    impostor = foreign(Kind.RAY_WORKER_GROUP, "ray-demo-cpu")
    impostor["metadata"]["labels"] = {MANAGED_BY_LABEL: "keda-ray-scaler-controller"}
    (conflict,) = plan_changes(desired, [impostor]).conflicts
    assert conflict.ownership is Ownership.OTHER_OWNER


def test_nothing_desired_deletes_every_owned_object() -> None:
    """Opted out (or refused): each object the controller made for this uid goes."""
    desired = want(worker("cpu"))
    changes = plan_changes(nothing_desired(raycluster()), made(desired))
    assert {(d.kind, d.name) for d in changes.delete} == names(desired.manifests)
    assert changes.create == changes.update == ()


def test_a_held_group_keeps_its_objects() -> None:
    """Group gpu refused for its bounds: its objects neither deleted nor updated."""
    before = want(worker("cpu"), worker("gpu"))
    after = want(worker("cpu"), worker("gpu", min=5, max=1))
    changes = plan_changes(after, made(before))
    assert changes.delete == ()
    assert changes.writes == 0


def test_objects_of_other_namespaces_and_kinds_are_ignored() -> None:
    """The same name in another namespace, or a kind the controller does not make: no effect."""
    desired = want(worker("cpu"))
    elsewhere = foreign(Kind.SCALED_OBJECT, "ray-demo-cpu", namespace="other")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ray-demo-cpu"}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ray-demo-agent"}}
    assert plan_changes(desired, [elsewhere, pod, service]) == plan_changes(desired, [])


def test_planning_changes_nothing_it_is_given() -> None:
    """Pure: the desired manifests and the existing objects are as they were."""
    desired = want(worker("cpu"))
    existing = made(want(worker("cpu", max=3), worker("gpu")))
    before = (copy.deepcopy([dict(m.body) for m in desired.manifests]), copy.deepcopy(existing))
    plan_changes(desired, existing)
    assert ([dict(m.body) for m in desired.manifests], existing) == before
