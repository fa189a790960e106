"""The controller on a real control plane: kube-apiserver, kube-controller-manager (its garbage
collector), KEDA's operator and KubeRay's CRDs (no KubeRay operator, no nodes: nothing here runs
Ray). ``keda-ray-scaler controller`` runs as a process of its own, as a user holding only the
controller's rules (``real_controller.CONTROLLER_RULES``), with a resync every 2 s. Each test
has a namespace of its own; every wait polls the API with a bound, never a fixed sleep.

Alone::

    KRS_E2E_BIN="$(bash e2e/build.sh)" .venv/bin/pytest -q -n 0 \\
        tests/real/control_plane/test_controller.py
"""

from __future__ import annotations

import concurrent.futures
import copy
import functools
import itertools
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tenacity
import yaml
from bed import install_crds
from control_plane import ControlPlane, wait_until
from kuberay_examples import example
from kubernetes import config
from manifest_render import named, render
from prometheus_client import CollectorRegistry
from real_controller import (
    CONTROLLER_USER,
    RunningController,
    controller,
    events,
    grant,
    ours,
)

from keda_ray_scaler.controller.kube_calls import KubeCalls
from keda_ray_scaler.controller.kube_io import KubeObjects
from keda_ray_scaler.controller.metrics import ControllerMetrics
from keda_ray_scaler.controller.objects import MANAGED_BY
from keda_ray_scaler.controller.reconcile import Outcome, Reconciler, RoundResult
from keda_ray_scaler.controller.template import ControllerTemplate

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

AUTOSCALED = "keda-ray-scaler.io/Autoscaled"
#: a condition of KubeRay's own, as its status Update sets it
KUBERAY_CONDITION = {
    "type": "HeadPodReady",
    "status": "True",
    "reason": "HeadPodRunningAndReady",
    "message": "",
    "lastTransitionTime": "2026-11-28T10:00:00Z",
}

OPT_IN = "keda-ray-scaler.io/autoscaling"
EXAMPLE = "manifests/kuberay/example"
_names = itertools.count()
#: each kind the controller makes for the example, by name
EXAMPLE_OBJECTS = {
    ("ServiceAccount", "ray-demo-agent"),
    ("Role", "ray-demo-agent"),
    ("RoleBinding", "ray-demo-agent"),
    ("RayWorkerGroup", "ray-demo-cpu"),
    ("RayWorkerGroup", "ray-demo-gpu"),
    ("ScaledObject", "ray-demo-cpu"),
    ("ScaledObject", "ray-demo-gpu"),
}


def enforce_owner_references(cp: ControlPlane) -> None:
    """The API server again with the admission plugin OwnerReferencesPermissionEnforcement (on
    in OpenShift and hardened clusters): an owner reference with blockOwnerDeletion needs
    ``update`` on the owner's ``finalizers``, which the controller's rules must hold."""
    old = cp.processes["kube-apiserver"]
    old.stop()
    plugins = "--enable-admission-plugins="
    args = [
        a + ",OwnerReferencesPermissionEnforcement" if a.startswith(plugins) else a
        for a in old.args
    ]
    cp._wait_apiserver_ready(cp._spawn("kube-apiserver", args, old.env))


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The control plane with KEDA (no kwok), KubeRay's and the RayWorkerGroup CRDs, owner
    references enforced."""
    bin_dir = os.environ.get("KRS_E2E_BIN")
    if not bin_dir or not (Path(bin_dir) / "bin" / "controlplane").exists():
        pytest.skip("no e2e build set: run with KRS_E2E_BIN=$(bash e2e/build.sh)")
    with ControlPlane.start(tmp_path_factory.mktemp("cp"), Path(bin_dir), kwok=False) as started:
        enforce_owner_references(started)
        install_crds(started, Path(bin_dir))
        yield started


@pytest.fixture
def ns(cp: ControlPlane) -> str:
    """A namespace of the test's own, the controller's rules bound in it."""
    name = f"c{next(_names)}"
    cp.kubectl("create", "namespace", name)
    grant(cp, name)
    return name


def raycluster(namespace: str, name: str = "demo", **annotations: str) -> dict[str, Any]:
    """The example RayCluster, opted in unless ``annotations`` say otherwise."""
    rc = example()
    rc["metadata"] = {
        "name": name,
        "namespace": namespace,
        "annotations": {OPT_IN: "enabled", **annotations},
    }
    return rc


def create(cp: ControlPlane, obj: dict[str, Any]) -> None:
    """``kubectl create`` one object."""
    cp.kubectl("create", "-f", "-", input=yaml.safe_dump(obj))


def patch(cp: ControlPlane, namespace: str, ops: list[dict[str, Any]], name: str = "demo") -> None:
    """A JSON patch of RayCluster ``name``, as a user edits it."""
    cp.kubectl("patch", "raycluster", name, "-n", namespace, "--type=json", "-p", json.dumps(ops))


def annotate(cp: ControlPlane, namespace: str, value: str) -> None:
    """Set RayCluster demo's opt-in annotation to ``value``."""
    path = "/metadata/annotations/" + OPT_IN.replace("/", "~1")
    patch(cp, namespace, [{"op": "replace", "path": path, "value": value}])


def wait_max(cp: ControlPlane, namespace: str, name: str, high: int) -> dict[str, Any]:
    """Wait until ScaledObject ``name`` has maxReplicaCount ``high``; its spec."""

    def spec() -> dict[str, Any] | None:
        found = dict(cp.get_json("scaledobject", name, "-n", namespace)["spec"])
        return found if found["maxReplicaCount"] == high else None

    return dict(wait_until(spec, timeout_s=60, what=f"ScaledObject {name} at max {high}"))


def wait_objects(
    cp: ControlPlane,
    namespace: str,
    want: set[tuple[str, str]],
    status_names: list[str] | None = None,
) -> dict[Any, Any]:
    """Wait until the controller's objects in ``namespace`` are exactly ``want`` (and, given
    ``status_names``, the agent's Role names exactly those RayWorkerGroups: one listing reads
    each kind in turn, so the Role read may predate the RayWorkerGroups read beside it)."""

    def done() -> dict[Any, Any] | None:
        found = ours(cp, namespace)
        if set(found) != want:
            return None
        role = found.get(("Role", "ray-demo-agent"))
        if status_names is not None and (role is None or status_rule(role) != status_names):
            return None
        return found

    return dict(
        wait_until(done, timeout_s=60, what=f"exactly {sorted(want)}, Role naming {status_names}")
    )


def passes(*controllers: RunningController, count: int = 3) -> None:
    """Wait until each controller has done ``count`` more rounds (resyncs, every 2 s)."""
    start = [c.rounds() for c in controllers]
    wait_until(
        lambda: all(c.rounds() >= s + count for c, s in zip(controllers, start, strict=True)),
        timeout_s=60,
        what=f"{count} more rounds",
    )


def versions(objs: dict[Any, Any]) -> dict[Any, str]:
    """Each object's content as the controller writes it: not its resourceVersion, which KEDA's
    own writes move whenever it gets to them (status, a finalizer, a label,
    ``advanced.scalingModifiers: {}``, the HPA's ``spec.replicas`` through ``/scale``); on a busy
    machine KEDA first reconciles a new ScaledObject seconds after the controller made it."""
    out = {}
    for key, obj in objs.items():
        body = {k: copy.deepcopy(v) for k, v in obj.items() if k not in ("metadata", "status")}
        if key[0] == "ScaledObject":
            body["spec"] = without_keda_defaults(body["spec"])
        if key[0] == "RayWorkerGroup":
            body["spec"].pop("replicas", None)  # the HPA's, through /scale
        meta = obj["metadata"]
        mine = {k: v for k, v in (meta.get("labels") or {}).items() if "keda.sh" not in k}
        body["ours"] = {"labels": mine, "owners": meta.get("ownerReferences")}
        out[key] = json.dumps(body, sort_keys=True)
    return out


def without_keda_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """A ScaledObject's spec less what KEDA's operator adds (``advanced.scalingModifiers: {}``)."""
    spec = copy.deepcopy(spec)
    if spec.get("advanced", {}).get("scalingModifiers") == {}:
        del spec["advanced"]["scalingModifiers"]
    return spec


def test_the_example_gets_the_hand_written_objects_owned_by_it(cp: ControlPlane, ns: str) -> None:
    """The example RayCluster, annotated: its RayWorkerGroups, ScaledObjects, ServiceAccount,
    Role and RoleBinding, each owned by it (controller), equal to the example's hand-written
    ones in spec, rules, roleRef and labels; then resyncs write nothing."""
    create(cp, raycluster(ns))
    uid = cp.get_json("raycluster", "demo", "-n", ns)["metadata"]["uid"]
    with controller(cp, [ns], name="controller-example") as ctl:
        made = wait_objects(cp, ns, EXAMPLE_OBJECTS)
        hand = {(o["kind"], o["metadata"]["name"]): o for o in render(EXAMPLE)}
        for key, obj in made.items():
            (ref,) = obj["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
                "RayCluster",
                "demo",
                uid,
                True,
            ), key
            written = hand[key]
            labels = {k: v for k, v in written["metadata"].get("labels", {}).items()}
            labels.pop("app.kubernetes.io/part-of")  # the kustomization's, not the object's
            assert labels.items() <= obj["metadata"]["labels"].items(), key
        for name in ("ray-demo-cpu", "ray-demo-gpu"):
            rwg = dict(made["RayWorkerGroup", name]["spec"])
            rwg.pop("replicas", None)  # KEDA's, through /scale (0: the scaler is not there)
            assert rwg == hand["RayWorkerGroup", name]["spec"]
            so = made["ScaledObject", name]["spec"]
            assert without_keda_defaults(so) == hand["ScaledObject", name]["spec"]
        assert made["Role", "ray-demo-agent"]["rules"] == hand["Role", "ray-demo-agent"]["rules"]
        binding, hand_binding = (
            made["RoleBinding", "ray-demo-agent"],
            named(render(EXAMPLE), "RoleBinding", "ray-demo-agent"),
        )
        assert binding["roleRef"] == hand_binding["roleRef"]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "ray-demo-agent", "namespace": ns}
        ]
        assert made["ServiceAccount", "ray-demo-agent"]["automountServiceAccountToken"] is False
        settled, writes = versions(made), ctl.writes()
        assert writes == len(EXAMPLE_OBJECTS)
        passes(ctl)
        assert versions(ours(cp, ns)) == settled
        assert ctl.writes() == writes
        assert ctl.total("ray_scaler_controller_rounds_total", outcome="unchanged") >= 3


def small_group() -> dict[str, Any]:
    """A third worker group, ``small``: the cpu group's template, bounds 1..4."""
    group = copy.deepcopy(example()["spec"]["workerGroupSpecs"][0])
    group.update(groupName="small", minReplicas=1, maxReplicas=4, replicas=1)
    return group


def status_rule(role: dict[str, Any]) -> list[str]:
    """The RayWorkerGroups whose status the agent's Role lets it patch."""
    (rule,) = [r for r in role["rules"] if r["resources"] == ["rayworkergroups/status"]]
    return list(rule["resourceNames"])


def test_groups_appended_removed_and_rebounded_then_the_opt_out(cp: ControlPlane, ns: str) -> None:
    """A group appended: its RayWorkerGroup and ScaledObject appear, the Role names it; a group
    removed: its two objects go, the Role forgets it; bounds changed: the ScaledObject follows
    (min, max, the scale-up Pods policy), nothing else is written; the annotation set to
    disabled: everything the controller made goes."""
    create(cp, raycluster(ns))
    with controller(cp, [ns], name="controller-groups") as ctl:
        wait_objects(cp, ns, EXAMPLE_OBJECTS)
        patch(cp, ns, [{"op": "add", "path": "/spec/workerGroupSpecs/-", "value": small_group()}])
        small = {("RayWorkerGroup", "ray-demo-small"), ("ScaledObject", "ray-demo-small")}
        names = ["ray-demo-cpu", "ray-demo-gpu", "ray-demo-small"]
        made = wait_objects(cp, ns, EXAMPLE_OBJECTS | small, names)
        so = made["ScaledObject", "ray-demo-small"]["spec"]
        assert (so["minReplicaCount"], so["maxReplicaCount"]) == (1, 4)
        assert made["RayWorkerGroup", "ray-demo-small"]["spec"]["groupName"] == "small"

        patch(cp, ns, [{"op": "remove", "path": "/spec/workerGroupSpecs/1"}])  # gpu
        gone = {("RayWorkerGroup", "ray-demo-gpu"), ("ScaledObject", "ray-demo-gpu")}
        made = wait_objects(cp, ns, (EXAMPLE_OBJECTS | small) - gone, names[::2])

        before, writes = versions(made), ctl.writes()
        patch(
            cp,
            ns,
            [
                {"op": "replace", "path": "/spec/workerGroupSpecs/0/minReplicas", "value": 2},
                {"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 20},
            ],
        )
        cpu = wait_max(cp, ns, "ray-demo-cpu", 20)
        assert cpu["minReplicaCount"] == 2
        scale_up = cpu["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleUp"]
        assert {"type": "Pods", "value": 20, "periodSeconds": 15} in scale_up["policies"]
        passes(ctl)
        after = versions(ours(cp, ns))
        changed = {key for key in before if before[key] != after[key]}
        assert changed == {("ScaledObject", "ray-demo-cpu")}
        assert ctl.writes() == writes + 1

        annotate(cp, ns, "disabled")
        wait_until(lambda: ours(cp, ns) == {}, timeout_s=60, what="every object deleted")

        # a round counts its writes once it has told and shown them (after the last delete)
        def deletes() -> float:
            return ctl.total("ray_scaler_controller_writes_total", operation="delete")

        wait_until(lambda: deletes() >= 2 + 7, timeout_s=60, what="the deletes counted")
        passes(ctl, count=1)
        assert deletes() == 2 + 7


def test_a_malformed_annotation_and_ray_s_own_autoscaler_are_refused_with_one_event(
    cp: ControlPlane, ns: str
) -> None:
    """A typo in the annotation, and enableInTreeAutoscaling: true: a Warning event on the
    RayCluster naming the annotation (and its value) or the field, once however many resyncs,
    counted by reason, nothing made; a served cluster whose annotation turns bad keeps its
    objects untouched."""
    create(cp, raycluster(ns, "typo", **{OPT_IN: "yes"}))
    in_tree = raycluster(ns, "intree")
    in_tree["spec"]["enableInTreeAutoscaling"] = True
    create(cp, in_tree)
    create(cp, raycluster(ns))
    with controller(cp, [ns], name="controller-refusals") as ctl:
        made = wait_objects(cp, ns, EXAMPLE_OBJECTS)
        typo = wait_until(
            lambda: events(cp, ns, "typo", "AutoscalingRefused"), timeout_s=60, what="typo's event"
        )
        intree = wait_until(
            lambda: events(cp, ns, "intree", "AutoscalingRefused"),
            timeout_s=60,
            what="intree's event",
        )
        assert OPT_IN in typo[0]["message"] and "'yes'" in typo[0]["message"]
        assert "spec.enableInTreeAutoscaling" in intree[0]["message"]
        for event in (*typo, *intree):
            assert event["type"] == "Warning"
            assert event["source"]["component"] == "keda-ray-scaler-controller"
        settled = versions(made)
        annotate(cp, ns, "on")  # a typo
        wait_until(
            lambda: events(cp, ns, "demo", "AutoscalingRefused"), timeout_s=60, what="demo's event"
        )
        passes(ctl)
        assert [
            len(events(cp, ns, n, "AutoscalingRefused")) for n in ("typo", "intree", "demo")
        ] == [1, 1, 1]
        assert versions(ours(cp, ns)) == settled  # the typo removed no autoscaling
        assert ctl.total("ray_scaler_controller_refusals_total", reason="unknown_value") == 2
        assert ctl.total("ray_scaler_controller_refusals_total", reason="in_tree_autoscaler") == 1
        described = cp.kubectl("describe", "raycluster", "intree", "-n", ns).stdout
        assert "AutoscalingRefused" in described and "enableInTreeAutoscaling" in described


def autoscaled(cp: ControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    """RayCluster ``name``'s condition keda-ray-scaler.io/Autoscaled; None when it has none."""
    status = cp.get_json("raycluster", name, "-n", namespace).get("status") or {}
    found = [c for c in status.get("conditions") or () if c["type"] == AUTOSCALED]
    return found[0] if found else None


def kuberay_writes_status(cp: ControlPlane, namespace: str, name: str) -> None:
    """What KubeRay's operator does: an Update of the status subresource (the whole status as it
    read it, its own condition set, the others as read)."""
    rc = cp.get_json("raycluster", name, "-n", namespace)
    status = rc.setdefault("status", {})
    status["state"] = "ready"
    status["conditions"] = [*(status.get("conditions") or ()), KUBERAY_CONDITION]
    cp.kubectl("replace", "--subresource=status", "-f", "-", input=json.dumps(rc))


def test_the_condition_shows_a_refusal_survives_kuberay_and_goes_with_the_opt_out(
    cp: ControlPlane, ns: str
) -> None:
    """enableInTreeAutoscaling: true: condition Autoscaled False, AutoscalingRefused, naming the
    field, shown by ``kubectl describe``, kept through KubeRay's status Update and not written
    again; the field set false: True, ObjectsReady, the transition time moved; opted out: ours
    removed by the apply, KubeRay's kept."""
    in_tree = raycluster(ns)
    in_tree["spec"]["enableInTreeAutoscaling"] = True
    create(cp, in_tree)
    with controller(cp, [ns], name="controller-condition") as ctl:
        refused = wait_until(lambda: autoscaled(cp, ns, "demo"), timeout_s=60, what="the condition")
        assert (refused["status"], refused["reason"]) == ("False", "AutoscalingRefused")
        assert "spec.enableInTreeAutoscaling" in refused["message"]
        assert refused["observedGeneration"] == 1
        described = cp.kubectl("describe", "raycluster", "demo", "-n", ns).stdout
        assert AUTOSCALED in described and "AutoscalingRefused" in described
        kuberay_writes_status(cp, ns, "demo")
        passes(ctl)
        rc = cp.get_json("raycluster", "demo", "-n", ns, "--show-managed-fields")
        types = [c["type"] for c in rc["status"]["conditions"]]
        assert types == [AUTOSCALED, KUBERAY_CONDITION["type"]]
        assert autoscaled(cp, ns, "demo") == refused  # not written again
        managers = {
            m["manager"] for m in rc["metadata"]["managedFields"] if m["operation"] == "Apply"
        }
        assert managers == {MANAGED_BY}
        patch(cp, ns, [{"op": "replace", "path": "/spec/enableInTreeAutoscaling", "value": False}])
        ready = wait_until(
            lambda: (c := autoscaled(cp, ns, "demo")) and c["status"] == "True" and c,
            timeout_s=60,
            what="the condition True",
        )
        assert (ready["reason"], ready["observedGeneration"]) == ("ObjectsReady", 2)
        assert ready["lastTransitionTime"] > refused["lastTransitionTime"]
        wait_objects(cp, ns, EXAMPLE_OBJECTS)
        annotate(cp, ns, "disabled")
        wait_until(lambda: autoscaled(cp, ns, "demo") is None, timeout_s=60, what="ours removed")
        status = cp.get_json("raycluster", "demo", "-n", ns)["status"]
        assert status["conditions"] == [KUBERAY_CONDITION] and status["state"] == "ready"


def test_a_foreign_scaledobject_of_the_same_name_is_left_alone(cp: ControlPlane, ns: str) -> None:
    """The hand-written ScaledObject ray-demo-cpu already there: an ObjectConflict event naming
    it, the object untouched (no label, owner or field manager of ours), the cpu group's
    RayWorkerGroup not made (it would be that ScaledObject's target), the rest made; once the
    user deletes it, the controller makes its own at the next resync."""
    hand = copy.deepcopy(named(render(EXAMPLE), "ScaledObject", "ray-demo-cpu"))
    hand["metadata"]["namespace"] = ns
    create(cp, hand)
    create(cp, raycluster(ns))
    cpu = {("RayWorkerGroup", "ray-demo-cpu"), ("ScaledObject", "ray-demo-cpu")}
    with controller(cp, [ns], name="controller-foreign"):
        wait_objects(cp, ns, EXAMPLE_OBJECTS - cpu)
        (event,) = wait_until(
            lambda: events(cp, ns, "demo", "ObjectConflict"), timeout_s=60, what="the conflict"
        )
        assert "ScaledObject" in event["message"] and "ray-demo-cpu" in event["message"]
        foreign = cp.get_json("scaledobject", "ray-demo-cpu", "-n", ns, "--show-managed-fields")
        meta = foreign["metadata"]
        assert "app.kubernetes.io/managed-by" not in meta["labels"]
        assert "ownerReferences" not in meta
        managers = {m["manager"] for m in meta["managedFields"]}
        assert "keda-ray-scaler-controller" not in managers
        cp.kubectl("delete", "scaledobject", "ray-demo-cpu", "-n", ns, "--wait=true")
        made = wait_objects(cp, ns, EXAMPLE_OBJECTS)
        assert made["ScaledObject", "ray-demo-cpu"]["metadata"]["ownerReferences"]


def test_a_deleted_raycluster_takes_every_object_with_it(cp: ControlPlane, ns: str) -> None:
    """The RayCluster deleted: kube-controller-manager's garbage collector deletes everything the
    controller made (their owner reference), KEDA's finalizer on the ScaledObjects let go."""
    create(cp, raycluster(ns))
    with controller(cp, [ns], name="controller-gc"):
        wait_objects(cp, ns, EXAMPLE_OBJECTS)
        cp.kubectl("delete", "raycluster", "demo", "-n", ns, "--wait=true")
        wait_until(lambda: ours(cp, ns) == {}, timeout_s=90, what="every object collected")


def test_two_controllers_racing_reach_one_state_without_flapping(cp: ControlPlane, ns: str) -> None:
    """Two controller processes on one namespace (two replicas, no leader election): the same
    objects as one makes; once made, neither writes again however many resyncs; a bound changed
    is written once between them (the other's apply is refused by the resourceVersion it read,
    or finds nothing to do)."""
    with (
        controller(cp, [ns], name="controller-a", resync_s=1) as a,
        controller(cp, [ns], name="controller-b", resync_s=1) as b,
    ):
        create(cp, raycluster(ns))
        made = wait_objects(cp, ns, EXAMPLE_OBJECTS)
        passes(a, b)
        settled, writes = versions(made), a.writes() + b.writes()
        assert len(EXAMPLE_OBJECTS) <= writes <= 2 * len(EXAMPLE_OBJECTS)
        passes(a, b)
        assert versions(ours(cp, ns)) == settled
        assert a.writes() + b.writes() == writes
        patch(
            cp, ns, [{"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 30}]
        )
        wait_max(cp, ns, "ray-demo-cpu", 30)
        passes(a, b)
        assert a.writes() + b.writes() == writes + 1
        after = versions(ours(cp, ns))
        assert {k for k in settled if settled[k] != after[k]} == {("ScaledObject", "ray-demo-cpu")}


class ReadThenMeet:
    """An ObjectStore whose first write waits until every round has read: two rounds that read
    the same state before either writes, every time."""

    def __init__(self, inner: KubeObjects, meeting: threading.Barrier) -> None:
        self._inner = inner
        self._meeting = meeting
        self._met = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def apply(self, manifest: Any, resource_version: str = "") -> dict[str, Any]:
        """Meet, then apply."""
        self._meet()
        return self._inner.apply(manifest, resource_version)

    def delete(self, *args: Any) -> bool:
        """Meet, then delete."""
        self._meet()
        return self._inner.delete(*args)

    def _meet(self) -> None:
        if not self._met:
            self._met = True
            self._meeting.wait(timeout=30)


def racing_rounds(cp: ControlPlane, ns: str) -> list[RoundResult]:
    """Two rounds of demo, as two controllers, each reading before either writes."""
    meeting = threading.Barrier(2)
    api_client = config.new_client_from_config(str(cp.user_kubeconfig(CONTROLLER_USER)))
    rounds = []
    for instance in ("race-a", "race-b"):
        metrics = ControllerMetrics(CollectorRegistry())
        calls = KubeCalls(metrics, attempts=1, wait=tenacity.wait_none())
        kube = KubeObjects(
            api_client, calls, field_manager=MANAGED_BY, instance=instance, request_timeout_s=30
        )
        store = ReadThenMeet(kube, meeting)
        rec = Reconciler(store, ControllerTemplate(), metrics, time.time)  # type: ignore[arg-type]
        rounds.append(functools.partial(rec.cluster, ns, "demo"))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return sorted(
            (r for r in pool.map(lambda run: run(), rounds) if r is not None),
            key=lambda r: r.writes,
        )


def test_two_rounds_that_read_before_either_writes_still_agree(cp: ControlPlane, ns: str) -> None:
    """Forced to race (each round's first write waits for the other's reads): both create the
    same objects by server-side apply as one field manager, so the second is a no-op with no
    conflict and no second owner reference; both update one ScaledObject from the version both
    read: one is written, the other refused (409) and its round stale; the next round of
    either finds nothing to do."""
    create(cp, raycluster(ns))
    assert racing_rounds(cp, ns) == [RoundResult(Outcome.CHANGED, 7)] * 2
    made = wait_objects(cp, ns, EXAMPLE_OBJECTS)
    for key, obj in made.items():
        assert len(obj["metadata"]["ownerReferences"]) == 1, key
    patch(cp, ns, [{"op": "replace", "path": "/spec/workerGroupSpecs/1/maxReplicas", "value": 4}])
    assert racing_rounds(cp, ns) == [RoundResult(Outcome.STALE, 0), RoundResult(Outcome.CHANGED, 1)]
    so = cp.get_json("scaledobject", "ray-demo-gpu", "-n", ns, "--show-managed-fields")
    assert so["spec"]["maxReplicaCount"] == 4
    ours_ = [m for m in so["metadata"]["managedFields"] if m["manager"] == MANAGED_BY]
    assert [m["operation"] for m in ours_] == ["Apply"]
