"""The KubeRay applier against a real kube-apiserver with KubeRay's own RayCluster CRD.

No operator runs here: the tests read what the applier wrote to the RayCluster and the
RayWorkerGroup (status subresource, /scale) and race it with edits of their own. Pods come from
a hand-filled pod store (tests/harness/filled_pods.py), victims from a dict: exactly the inputs
the agent gives it.

The trust tests (issue 35, point 6) run the agent as ``agent --raycluster=demo`` builds it, as
the example's ServiceAccount (``manifests/kuberay/example/agent-rbac.yaml``): its pod cache lists
and watches real Pod objects. No kubelet and no scheduler run here, so those pods stay Pending
(active, as KubeRay counts them); the workers carry the RayCluster's controlling
``ownerReference`` as KubeRay writes it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tenacity
import yaml
from control_plane import ControlPlane, build_binaries
from fake_clock import FakeClock
from filled_pods import Pods
from kuberay_examples import example
from kubernetes import client, config
from prometheus_client import CollectorRegistry
from real_kuberay import EXAMPLE, RC, RWG, api_server, custom_api

from keda_ray_scaler.agent.kube.kube_retry import KubeApiErrors
from keda_ray_scaler.agent.kuberay.applier import KubeRayApplier
from keda_ray_scaler.agent.kuberay.group_round import ApplierSettings
from keda_ray_scaler.agent.kuberay.kuberay_api import KubeRayApi, KubeRaySettings
from keda_ray_scaler.agent.kuberay.raycluster_scale import Action
from keda_ray_scaler.agent.kuberay.scale_up_lead import PlannedTargets
from keda_ray_scaler.agent.kuberay.scaledobject import PAUSED
from keda_ray_scaler.agent.metric_names import KUBE_PODS_REFUSED, KUBERAY_DECISIONS
from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.decisions import GroupPlan, Plan
from keda_ray_scaler.model import ClusterSpec, PlanningInput

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]
_names = itertools.count()


@pytest.fixture(scope="module")
def cp() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver with the KubeRay and RayWorkerGroup CRDs (about 15 s)."""
    bin_dir = Path(os.environ["KRS_E2E_BIN"]) if os.environ.get("KRS_E2E_BIN") else build_binaries()
    with api_server(bin_dir) as started:
        yield started


class Env:
    """One namespace with the example RayCluster (cpu at ``replicas``) and its RayWorkerGroup."""

    def __init__(self, cp: ControlPlane, replicas: int, *, in_tree: bool = False) -> None:
        self.ns = f"t{next(_names)}"
        cp.kubectl("create", "namespace", self.ns)
        self.api = custom_api(cp)
        rc = example()
        rc["metadata"] = {"name": "demo", "namespace": self.ns}
        rc["spec"]["workerGroupSpecs"][0]["replicas"] = replicas
        rc["spec"]["enableInTreeAutoscaling"] = in_tree
        self.api.create_namespaced_custom_object(*RC[:2], self.ns, RC[2], rc)
        rwg = {
            "apiVersion": "keda-ray-scaler.io/v1alpha1",
            "kind": "RayWorkerGroup",
            "metadata": {"name": "ray-demo-cpu"},
            "spec": {"rayCluster": "demo", "groupName": "cpu"},
        }
        self.api.create_namespaced_custom_object(*RWG[:2], self.ns, RWG[2], rwg)
        self.pods = Pods()
        self.pods.set("cpu", [f"cpu-{i}" for i in range(replicas)])
        self.victims: dict[str, str] = {}
        self.applier = self.make_applier(self.api)

    def make_applier(self, api: Any, planned: PlannedTargets | None = None) -> KubeRayApplier:
        """The applier on ``api`` (the real client, or a wrapper of it)."""
        settings = KubeRaySettings(namespace=self.ns, raycluster="demo")
        self.backoff: dict[str, str] = {}
        self.registry = CollectorRegistry()  # the applier's metrics
        return KubeRayApplier(
            KubeRayApi(
                api, settings, KubeApiErrors(CollectorRegistry()), wait=tenacity.wait_none()
            ),
            self.pods,
            lambda: True,
            lambda: dict(self.victims),
            FakeClock(1_790_000_000.0, advance_on_sleep=False),
            self.registry,
            ApplierSettings(cluster="demo"),
            backoff=lambda group: self.backoff.get(group, ""),
            planned=planned,
        )

    def scale(self, replicas: int, rwg: str = "ray-demo-cpu") -> None:
        """What KEDA's HPA does: write spec.replicas of ``rwg`` through /scale."""
        body = {"spec": {"replicas": replicas}}
        self.api.patch_namespaced_custom_object_scale(*RWG[:2], self.ns, RWG[2], rwg, body)

    def group(self) -> dict[str, Any]:
        """The cpu group of the RayCluster as stored."""
        rc = self.api.get_namespaced_custom_object(*RC[:2], self.ns, RC[2], "demo")
        return dict(rc["spec"]["workerGroupSpecs"][0])

    def rwg(self, name: str = "ray-demo-cpu") -> dict[str, Any]:
        """The RayWorkerGroup ``name`` as stored."""
        return dict(self.api.get_namespaced_custom_object(*RWG[:2], self.ns, RWG[2], name))

    def apply(self) -> Any:
        """One applier round."""
        return asyncio.run(self.applier.apply())


def agent_kubeconfig(cp: ControlPlane, namespace: str) -> Path:
    """The example agent's identity in ``namespace`` (``agent-rbac.yaml``: its RayCluster demo by
    name, the status of ray-demo-cpu and ray-demo-gpu only), and a kubeconfig with its token."""
    rbac = list(yaml.safe_load_all((EXAMPLE / "agent-rbac.yaml").read_text()))
    for doc in rbac:
        doc["metadata"]["namespace"] = namespace
        for subject in doc.get("subjects", []):
            subject["namespace"] = namespace
    cp.apply_docs(rbac)
    return cp.token_kubeconfig(namespace, "ray-demo-agent")


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """What the trust tests saw, kept as JSON (``kuberay-trust-figures.json`` in pytest's base
    temporary directory) for docs/security.md."""
    found: dict[str, Any] = {}
    yield found
    path = tmp_path_factory.getbasetemp() / "kuberay-trust-figures.json"
    path.write_text(json.dumps(found, indent=1))


def test_status_and_scale_subresource_read_the_truth(cp: ControlPlane) -> None:
    """status.replicas = the group's pods, status.selector = KubeRay's labels; /scale shows them."""
    env = Env(cp, 3)
    env.apply()
    status = env.rwg()["status"]
    assert (status["replicas"], status["selector"]) == (
        3,
        "ray.io/cluster=demo,ray.io/group=cpu,ray.io/node-type=worker",
    )
    scale = env.api.get_namespaced_custom_object_scale(*RWG[:2], env.ns, RWG[2], "ray-demo-cpu")
    assert scale["status"] == {"replicas": 3, "selector": status["selector"]}


def test_up_patches_replicas_bounded_by_max(cp: ControlPlane) -> None:
    """/scale to 70 raises the group's replicas to its maxReplicas 50, nothing named."""
    env = Env(cp, 2)
    env.scale(70)
    (verdict,) = env.apply()
    assert (verdict.action, verdict.replicas) == ("scale_up", 50)
    group = env.group()
    assert (group["replicas"], group["scaleStrategy"]["workersToDelete"]) == (50, [])


def test_down_names_drained_victims_in_the_same_patch(cp: ControlPlane) -> None:
    """10 pods, /scale to 8, victims cpu-3 and cpu-7: replicas 8 and exactly them, one write."""
    env = Env(cp, 10)
    env.victims = {"cpu-3": "cpu", "cpu-7": "cpu"}
    env.scale(8)
    before = env.api.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo")
    (verdict,) = env.apply()
    after = env.api.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo")
    assert verdict.action == "scale_down"
    group = after["spec"]["workerGroupSpecs"][0]
    assert (group["replicas"], group["scaleStrategy"]["workersToDelete"]) == (8, ["cpu-3", "cpu-7"])
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1


def test_never_lowers_replicas_without_victims(cp: ControlPlane) -> None:
    """/scale to 5 with no drained victim: the RayCluster is not written."""
    env = Env(cp, 6)
    env.scale(5)
    before = env.api.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo")
    (verdict,) = env.apply()
    after = env.api.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo")
    assert verdict.action == "wait_victims"
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


class EditBeforePatch:
    """The real API, but the first RayCluster patch is preceded by someone else's edit."""

    def __init__(self, api: Any, edit: Any) -> None:
        self._api = api
        self._edit = edit
        self.patches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)

    def patch_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> Any:
        """Someone edits the RayCluster between the applier's read and its patch (once)."""
        self.patches += 1
        if self.patches == 1:
            self._edit()
        return self._api.patch_namespaced_custom_object(*args, **kwargs)


class PlannedCpu:
    """The agent's plan as the test sets it: ``cpu`` at ``target``."""

    def __init__(self) -> None:
        self.target = 0

    def __call__(self, inp: PlanningInput) -> Plan:
        t = self.target
        return Plan({"cpu": GroupPlan("cpu", t, t, floor=0, current=0, busy=0, new=t)})


def keda_scaled_object(scale_down: dict[str, Any] | None) -> dict[str, Any]:
    """A ScaledObject on the cpu RayWorkerGroup; ``scale_down``: its HPA scaleDown behavior."""
    spec: dict[str, Any] = {
        "scaleTargetRef": {
            "apiVersion": "keda-ray-scaler.io/v1alpha1",
            "kind": "RayWorkerGroup",
            "name": "ray-demo-cpu",
        },
        "minReplicaCount": 0,
        "maxReplicaCount": 50,
        "cooldownPeriod": 5,
        "triggers": [{"type": "cpu", "metadata": {"value": "50"}}],
    }
    if scale_down is not None:
        behavior = {"scaleDown": scale_down}
        spec["advanced"] = {"horizontalPodAutoscalerConfig": {"behavior": behavior}}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "ray-demo-cpu"},
        "spec": spec,
    }


def planned_env(
    cp: ControlPlane, replicas: int, scaled_object: dict[str, Any]
) -> tuple[Env, PlannedCpu, PlannedTargets]:
    """An :class:`Env` whose applier follows the agent's plan, with KEDA's CRDs and
    ``scaled_object`` on the cpu RayWorkerGroup."""
    crds = sorted((cp.bin_dir / "keda-crds").glob("*.yaml"))
    cp.kubectl("apply", "--server-side", *[f"--filename={c}" for c in crds])
    cp.wait_crds_established()
    env = Env(cp, replicas)
    plan = PlannedCpu()
    planned = PlannedTargets(plan, max_age_s=10.0)
    env.applier = env.make_applier(env.api, planned)
    env.api.create_namespaced_custom_object(
        "keda.sh", "v1alpha1", env.ns, "scaledobjects", scaled_object
    )
    return env, plan, planned


def test_the_agents_plan_leads_a_scale_up_and_a_paused_scaled_object_holds_it(
    cp: ControlPlane,
) -> None:
    """The HPA says 1, the agent's fresh plan 10: the RayCluster goes to 10 at once. Paused,
    the ScaledObject holds a plan of 20 (nothing lowered either); a stale plan leads nothing."""
    env, plan, planned = planned_env(cp, 1, keda_scaled_object(None))
    env.scale(1)
    now = 1_790_000_000.0  # the applier's clock
    plan.target = 10
    planned.observe(PlanningInput(ClusterSpec("demo", ())), now)
    (verdict,) = env.apply()
    # Kubernetes' default scale-up policies (none set here): from 1, at most 5 in one period
    assert (verdict.action, verdict.replicas, env.group()["replicas"]) == ("scale_up", 5, 5)
    env.scale(5)  # the HPA caught up
    (verdict,) = env.apply()
    assert (verdict.action, env.group()["replicas"]) == ("scale_up", 10)

    so_now = env.api.get_namespaced_custom_object(
        "keda.sh", "v1alpha1", env.ns, "scaledobjects", "ray-demo-cpu"
    )
    so_now["metadata"]["annotations"] = {PAUSED: "true"}
    env.api.replace_namespaced_custom_object(
        "keda.sh", "v1alpha1", env.ns, "scaledobjects", "ray-demo-cpu", so_now
    )
    plan.target = 20
    planned.observe(PlanningInput(ClusterSpec("demo", ())), now)
    (verdict,) = env.apply()
    assert (verdict.action, env.group()["replicas"]) == ("wait_victims", 10)

    planned.observe(PlanningInput(ClusterSpec("demo", ())), now - 11.0)  # stale
    so_now = env.api.get_namespaced_custom_object(
        "keda.sh", "v1alpha1", env.ns, "scaledobjects", "ray-demo-cpu"
    )
    so_now["metadata"]["annotations"] = {}
    env.api.replace_namespaced_custom_object(
        "keda.sh", "v1alpha1", env.ns, "scaledobjects", "ray-demo-cpu", so_now
    )
    (verdict,) = env.apply()
    assert env.group()["replicas"] == 10


def test_the_agents_plan_deletes_drained_victims_before_the_hpa_and_never_recreates_them(
    cp: ControlPlane,
) -> None:
    """10 pods, the HPA still at 10, victims cpu-3 and cpu-7 drained, the plan 8: one patch
    names them at once. While the HPA still asks 10 the group is not raised back; with the
    default scale-down window (300 s) the next victim waits for the HPA."""
    so = keda_scaled_object({"stabilizationWindowSeconds": 0})
    env, plan, planned = planned_env(cp, 10, so)
    env.scale(10)
    now = 1_790_000_000.0  # the applier's clock
    env.victims = {"cpu-3": "cpu", "cpu-7": "cpu"}
    plan.target = 8
    planned.observe(PlanningInput(ClusterSpec("demo", ())), now)
    (verdict,) = env.apply()
    group = env.group()
    assert verdict.action == "scale_down"
    assert (group["replicas"], group["scaleStrategy"]["workersToDelete"]) == (8, ["cpu-3", "cpu-7"])

    env.pods.set("cpu", [f"cpu-{i}" for i in (0, 1, 2, 4, 5, 6, 8, 9)])  # KubeRay deleted them
    env.victims = {}
    (verdict,) = env.apply()  # the HPA still asks 10: nothing is created back
    assert (verdict.action, env.group()["replicas"]) == ("clear", 8)
    env.scale(8)  # the HPA caught up
    (verdict,) = env.apply()
    assert (verdict.action, env.group()["replicas"]) == ("none", 8)

    so_now = env.api.get_namespaced_custom_object(
        "keda.sh", "v1alpha1", env.ns, "scaledobjects", "ray-demo-cpu"
    )
    so_now["spec"]["advanced"] = {}  # Kubernetes' default window: 300 s
    env.api.replace_namespaced_custom_object(
        "keda.sh", "v1alpha1", env.ns, "scaledobjects", "ray-demo-cpu", so_now
    )
    env.victims = {"cpu-0": "cpu"}
    plan.target = 7
    planned.observe(PlanningInput(ClusterSpec("demo", ())), now)
    (verdict,) = env.apply()
    assert (verdict.action, env.group()["replicas"]) == ("none", 8)


def test_conflicting_edit_between_read_and_patch_loses_nothing(cp: ControlPlane) -> None:
    """An edit after the read fails the patch's precondition; the applier re-reads, decides
    again (the victim unpublished meanwhile is not named) and keeps the other edit."""
    env = Env(cp, 10)
    env.victims = {"cpu-1": "cpu", "cpu-2": "cpu"}
    env.scale(8)

    def edit() -> None:
        body = {"metadata": {"labels": {"edited": "yes"}}, "spec": {"workerGroupSpecs": None}}
        del body["spec"]
        env.api.patch_namespaced_custom_object(
            *RC[:2], env.ns, RC[2], "demo", body, _content_type="application/merge-patch+json"
        )
        env.victims.pop("cpu-2")  # its Ray node took work again: no longer a victim

    wrapped = EditBeforePatch(env.api, edit)
    env.applier = env.make_applier(wrapped)
    (verdict,) = env.apply()
    rc = env.api.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo")
    group = rc["spec"]["workerGroupSpecs"][0]
    assert wrapped.patches == 2
    assert (verdict.action, verdict.named) == ("scale_down", ("cpu-1",))
    assert (group["replicas"], group["scaleStrategy"]["workersToDelete"]) == (9, ["cpu-1"])
    assert rc["metadata"]["labels"] == {"edited": "yes"}


def test_group_moved_to_another_index_is_found_again(cp: ControlPlane) -> None:
    """A group inserted before cpu between read and patch: the index test fails, the re-read
    patches cpu at its new index and the new group is untouched."""
    env = Env(cp, 4)
    env.scale(6)

    def edit() -> None:
        rc = env.api.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo")
        first = dict(rc["spec"]["workerGroupSpecs"][1], groupName="extra", replicas=0)
        rc["spec"]["workerGroupSpecs"].insert(0, first)
        env.api.replace_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo", rc)

    env.applier = env.make_applier(EditBeforePatch(env.api, edit))
    (verdict,) = env.apply()
    groups = env.api.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo")["spec"][
        "workerGroupSpecs"
    ]
    assert verdict.action == "scale_up"
    assert [(g["groupName"], g["replicas"]) for g in groups] == [
        ("extra", 0),
        ("cpu", 6),
        ("gpu", 0),
    ]


def test_in_tree_autoscaling_is_refused_with_a_condition(cp: ControlPlane) -> None:
    """enableInTreeAutoscaling: no patch, Ready=False InTreeAutoscaling naming the fix; the
    victim protocol is told to drain nothing."""
    env = Env(cp, 4, in_tree=True)
    env.victims = {"cpu-0": "cpu"}
    env.scale(3)
    (verdict,) = env.apply()
    assert verdict.action == "refused"
    assert env.group()["replicas"] == 4
    (ready,) = [c for c in env.rwg()["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "InTreeAutoscaling")
    assert "enableInTreeAutoscaling: false" in ready["message"]
    assert "enableInTreeAutoscaling: false" in env.applier.refusal("cpu")


def test_agent_cli_reads_the_worker_groups_from_the_raycluster(cp: ControlPlane) -> None:
    """``agent --raycluster``: the spec comes from the RayCluster through the API server."""
    from keda_ray_scaler.cli.agent import kube_api, load_raycluster_spec

    env = Env(cp, 1)
    spec = load_raycluster_spec(kube_api(cp.admin_kubeconfig, None), env.ns, "demo")
    assert [(g.name, g.resources.to_float_dict()) for g in spec.worker_groups] == [
        ("cpu", {"CPU": 10, "memory": 40 * 2**30}),
        ("gpu", {"CPU": 8, "GPU": 1, "memory": 32 * 2**30}),
    ]


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--namespace=ray"], "give exactly one of --cluster-spec"),
        (["--namespace=ray", "--raycluster=demo", "--cluster-spec=x.yaml"], "exactly one"),
        (["--raycluster=demo", "--no-scale-down"], "--namespace: required with --raycluster"),
    ],
)
def test_agent_mode_flags(argv: list[str], problem: str) -> None:
    """Exactly one of --cluster-spec and --raycluster; --raycluster needs --namespace."""
    from keda_ray_scaler.cli import build_parser
    from keda_ray_scaler.cli.agent_flags import validate
    from keda_ray_scaler.errors import ConfigError

    args = build_parser().parse_args(["agent", *argv])
    with pytest.raises(ConfigError, match=problem):
        validate(args)


def test_a_backed_off_group_says_why_in_its_condition(cp: ControlPlane) -> None:
    """BackedOff=True with the agent's message while the group is backed off; False after."""
    env = Env(cp, 1)
    env.backoff["cpu"] = (
        "1 failed launch(es), pods that did not join Ray (last: container_failing); ..."
    )
    env.apply()
    (backed,) = [c for c in env.rwg()["status"]["conditions"] if c["type"] == "BackedOff"]
    assert (backed["status"], backed["reason"]) == ("True", "JoinFailures")
    assert backed["message"].startswith("1 failed launch(es)")
    env.backoff.clear()
    env.apply()
    (backed,) = [c for c in env.rwg()["status"]["conditions"] if c["type"] == "BackedOff"]
    assert (backed["status"], backed["reason"]) == ("False", "NoJoinFailures")


def test_the_example_agents_role_watches_its_raycluster_and_follows_an_edit(
    cp: ControlPlane,
) -> None:
    """The agent's RayCluster watch as the example's ServiceAccount (a Role of its RayCluster's
    name only): a list and watch by name are allowed, a lowered maxReplicas is seen, and the
    RayCluster deleted leaves the last groups, not fresh."""
    from keda_ray_scaler.agent.kube.object_watch import WatchSettings
    from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec
    from keda_ray_scaler.agent.kuberay.raycluster_watch import RayClusterWatch

    env = Env(cp, 0)
    kubeconfig = agent_kubeconfig(cp, env.ns)
    custom = client.CustomObjectsApi(config.new_client_from_config(str(kubeconfig)))
    initial = cluster_spec(custom.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo"))
    settings = WatchSettings(env.ns, "demo", retry_attempts=2, retry_max_s=0.1)
    watch = RayClusterWatch(
        custom, settings, initial, CollectorRegistry(), wait=tenacity.wait_none()
    )

    async def until(predicate: Any) -> None:
        async with asyncio.timeout(30):
            while not predicate():  # noqa: ASYNC110  # the watch thread sets it
                await asyncio.sleep(0.05)

    async def follow() -> None:
        task = asyncio.create_task(watch.run())
        try:
            patch = [
                {"op": "test", "path": "/spec/workerGroupSpecs/0/groupName", "value": "cpu"},
                {"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 7},
            ]
            await asyncio.to_thread(
                env.api.patch_namespaced_custom_object,
                *RC[:2], env.ns, RC[2], "demo", patch,
                _content_type="application/json-patch+json",
            )  # fmt: skip
            await until(lambda: watch.spec.worker_groups[0].max_replicas == 7)
            assert watch.fresh
            await asyncio.to_thread(
                env.api.delete_namespaced_custom_object, *RC[:2], env.ns, RC[2], "demo"
            )
            await until(lambda: not watch.fresh)
            assert watch.spec.worker_groups[0].max_replicas == 7
        finally:
            watch.stop()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(follow())


#: a uid no object has: a reference to RayCluster demo that is not the RayCluster demo
FOREIGN_UID = "0badc0de-0000-4000-8000-000000000000"
#: the cpu group's workers in the trust test, named as KubeRay names them
WORKERS = ("demo-cpu-worker-aaaaa", "demo-cpu-worker-bbbbb")


def labelled_pod(name: str, owner_uid: str | None) -> dict[str, Any]:
    """A pod labelled as KubeRay labels the cpu group's workers, controlled by RayCluster demo of
    ``owner_uid`` (None: no ``ownerReference``)."""
    labels = {"ray.io/cluster": "demo", "ray.io/node-type": "worker", "ray.io/group": "cpu"}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner_uid is not None:
        ref = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "demo", "uid": owner_uid}
        meta["ownerReferences"] = [{**ref, "controller": True, "blockOwnerDeletion": True}]
    container = {"name": "ray-worker", "image": "rayproject/ray:2.60.0-py311"}
    spec = {"automountServiceAccountToken": False, "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def with_workers(cp: ControlPlane) -> tuple[Env, client.CoreV1Api]:
    """An :class:`Env` at 2 replicas with its two workers as Pods of the API server (no kubelet
    runs them: Pending), controlled by the RayCluster as KubeRay makes them; an admin client."""
    env = Env(cp, 2)
    # no controller-manager makes it here, and the ServiceAccount admission looks it up
    cp.kubectl("create", "serviceaccount", "default", f"--namespace={env.ns}")
    core = client.CoreV1Api(config.new_client_from_config(str(cp.admin_kubeconfig)))
    uid = env.api.get_namespaced_custom_object(*RC[:2], env.ns, RC[2], "demo")["metadata"]["uid"]
    for name in WORKERS:
        core.create_namespaced_pod(env.ns, labelled_pod(name, uid))
    return env, core


def samples(registry: CollectorRegistry, name: str, key: str) -> dict[str, float]:
    """The samples of ``name`` by the value of their label ``key``."""
    return {
        s.labels[key]: s.value
        for family in registry.collect()
        for s in family.samples
        if s.name == name
    }


async def settle(predicate: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    """Wait until ``predicate()`` holds (the watches' threads make it so), at most ``timeout_s``;
    whether it holds."""
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:  # noqa: ASYNC110  # threads set it
        await asyncio.sleep(0.05)
    return predicate()


class NoJoins:
    """The join tracker as the applier reads it: no group backed off."""

    def backoff_message(self, group: str) -> str:
        """No failed launches."""
        return ""


def agent_round(
    cp: ControlPlane, env: Env, core: client.CoreV1Api, impostors: list[dict[str, Any]]
) -> dict[str, Any]:
    """The agent as ``agent --raycluster=demo`` builds it (keda_ray_scaler/cli/agent.py: the pod
    cache with the owner rule, the RayCluster watch telling it the uid, the applier), as the
    example's ServiceAccount: the cache and the watch running, ``impostors`` created (by
    ``core``) once the cache holds the workers, then one applier round. What it saw."""
    from keda_ray_scaler.cli import build_parser
    from keda_ray_scaler.cli.agent import (
        _kuberay_applier,
        _pod_cache,
        _raycluster_watch,
        kube_api,
        load_raycluster_spec,
    )

    kubeconfig = agent_kubeconfig(cp, env.ns)
    argv = ["agent", f"--namespace={env.ns}", "--raycluster=demo", f"--kubeconfig={kubeconfig}"]
    args = build_parser().parse_args(argv)
    api = kube_api(args.kubeconfig, None)
    spec = load_raycluster_spec(api, env.ns, "demo")
    registry = CollectorRegistry()
    cache = _pod_cache(args, api, spec, registry)
    watch = _raycluster_watch(args, api, spec, registry, cache.expect_owner_uid)  # as _main
    applier = _kuberay_applier(args, api, cache, SystemClock(), registry, None)(dict, NoJoins())

    def refused() -> dict[str, float]:
        return samples(registry, KUBE_PODS_REFUSED, "reason")

    async def run() -> dict[str, Any]:
        tasks = [asyncio.create_task(cache.run()), asyncio.create_task(watch.run())]
        try:
            listed = await settle(lambda: cache.synced and len(cache.pods()) >= len(WORKERS))
            for pod in impostors:
                await asyncio.to_thread(core.create_namespaced_pod, env.ns, pod)
            # each impostor refused once the uid is known, or (before the fix) never: 20 s
            await settle(lambda: sum(refused().values()) >= len(impostors))
            verdicts = await applier.apply()
        finally:
            cache.stop()
            watch.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return {
            "listed": listed,
            "cached pods": sorted(p.name for p in cache.pods()),
            "refused": refused(),
            "verdicts": [(v.action.value, v.replicas, list(v.named), v.reason) for v in verdicts],
        }

    return asyncio.run(run())


def test_pods_labelled_for_the_group_by_somebody_else_are_no_workers_and_stall_nothing(
    cp: ControlPlane, figures: dict[str, Any]
) -> None:
    """Beside the group's two workers (replicas 2, the HPA asks 4), a bare pod with their labels
    and one naming RayCluster demo with another uid: the agent's cache lists the two workers,
    counts each impostor once by its reason, and the round raises the group to 4 as it does
    without them (before the owner rule: four pods above replicas 2, ``wait_operator``)."""
    impostors = [
        labelled_pod("demo-cpu-worker-imp01", None),
        labelled_pod("demo-cpu-worker-imp02", FOREIGN_UID),
    ]
    rounds: dict[str, dict[str, Any]] = {}
    for case, pods in (("with impostors", impostors), ("without", [])):
        env, core = with_workers(cp)
        env.scale(4)
        rounds[case] = agent_round(cp, env, core, pods)
        group = env.group()
        rounds[case]["group"] = (group["replicas"], group["scaleStrategy"]["workersToDelete"])
        rounds[case]["status.replicas"] = env.rwg()["status"]["replicas"]
    figures["impostor pods"] = rounds
    seen, clean = rounds["with impostors"], rounds["without"]
    assert seen["listed"] and clean["listed"], rounds
    assert seen["cached pods"] == clean["cached pods"] == list(WORKERS), rounds
    assert seen["refused"] == {"no_controller": 1.0, "wrong_uid": 1.0}, rounds
    assert clean["refused"] == {}, rounds
    assert seen["verdicts"] == clean["verdicts"], rounds
    assert seen["verdicts"] == [("scale_up", 4, [], "replicas 2 -> 4 (desired 4)")], rounds
    assert seen["group"] == clean["group"] == (4, []), rounds
    assert seen["status.replicas"] == clean["status.replicas"] == 2, rounds


def claim(env: Env, name: str, hpa: int) -> None:
    """A RayWorkerGroup ``name`` naming the cpu group of RayCluster demo, its HPA at ``hpa``."""
    body = {
        "apiVersion": "keda-ray-scaler.io/v1alpha1",
        "kind": "RayWorkerGroup",
        "metadata": {"name": name},
        "spec": {"rayCluster": "demo", "groupName": "cpu"},
    }
    env.api.create_namespaced_custom_object(*RWG[:2], env.ns, RWG[2], body)
    env.scale(hpa, name)


def test_a_younger_rayworkergroup_naming_the_same_group_is_refused(
    cp: ControlPlane, figures: dict[str, Any]
) -> None:
    """ray-demo-cpu holds group cpu (its HPA at 3); ray-demo-gpu, created a second later, names
    cpu too (its HPA at 6). As the example agent: the group goes to 3, the younger's Ready is
    False ``GroupClaimedByAnother`` naming the holder, ``claimed`` counted each round (before
    the claims: both applied, 6). A third claim, evil-cpu (HPA 50), whose status the agent's
    Role does not let it write, moves nothing either. Once the holder is deleted the next
    oldest, ray-demo-gpu, holds the group."""
    env = Env(cp, 2)
    agent = client.CustomObjectsApi(
        config.new_client_from_config(str(agent_kubeconfig(cp, env.ns)))
    )
    env.scale(3)
    time.sleep(1.1)  # creationTimestamp is in seconds: each later claim is strictly younger
    claim(env, "ray-demo-gpu", 6)  # a name whose status the Role lets the agent write
    env.applier = env.make_applier(agent)

    def rounds(count: int) -> list[list[tuple[str, int]]]:
        return [[(v.action.value, v.replicas) for v in env.apply()] for _ in range(count)]

    def ready(name: str) -> tuple[str, str, str]:
        (c,) = [c for c in env.rwg(name)["status"]["conditions"] if c["type"] == "Ready"]
        return c["status"], c["reason"], c["message"]

    two = rounds(2)  # in the list's order: ray-demo-cpu, ray-demo-gpu
    labels = {"cluster": "demo", "group": "cpu", "action": "claimed"}
    both = ("ray-demo-cpu", "ray-demo-gpu")
    seen: dict[str, Any] = {
        "created": [env.rwg(n)["metadata"]["creationTimestamp"] for n in both],
        "rounds": two,
        "replicas": env.group()["replicas"],
        "ready": {n: ready(n) for n in both},
        "claimed": env.registry.get_sample_value(KUBERAY_DECISIONS, labels),
    }
    time.sleep(1.1)
    claim(env, "evil-cpu", 50)  # listed first; no status of it in the Role's resourceNames
    verdicts = env.apply()
    third = [(v.action.value, v.replicas) for v in verdicts]
    evil = {"round": third, "why": verdicts[0].reason, "status": env.rwg("evil-cpu").get("status")}
    seen["evil-cpu"] = evil
    seen["replicas with evil-cpu"] = env.group()["replicas"]
    env.api.delete_namespaced_custom_object(*RWG[:2], env.ns, RWG[2], "ray-demo-cpu")
    (after,) = rounds(1)
    seen |= {"holder deleted": after, "replicas after": env.group()["replicas"]}
    seen["ready after"] = ready("ray-demo-gpu")
    figures["two claims"] = seen
    assert seen["created"][0] < seen["created"][1], seen
    assert two == [[("scale_up", 3), ("claimed", 0)], [("none", 3), ("claimed", 0)]], seen
    assert seen["replicas"] == 3, seen
    message = "group cpu is claimed by RayWorkerGroup ray-demo-cpu (the oldest)"
    assert seen["ready"]["ray-demo-gpu"] == ("False", "GroupClaimedByAnother", message), seen
    assert seen["ready"]["ray-demo-cpu"][:2] == ("True", "Reconciled"), seen
    assert seen["claimed"] == 2.0, seen
    assert third[0][0] not in set(Action), seen  # evil-cpu: no scale decision
    assert (third[1:], seen["replicas with evil-cpu"]) == ([("none", 3), ("claimed", 0)], 3), seen
    assert after[0][0] not in set(Action), seen
    assert (after[1:], seen["replicas after"]) == ([("scale_up", 6)], 6), seen
    assert seen["ready after"][:2] == ("True", "Reconciled"), seen
