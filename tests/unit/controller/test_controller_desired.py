"""The objects one opted-in RayCluster should have: the hand-written example's, field for field,
accepted by the agent's and the scaler's own parsers and by the RayWorkerGroup CRD; owned by the
cluster; named stably within 63 characters; a group the scaler cannot serve refused alone."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from controller_input import raycluster, worker
from kuberay_examples import KUBERAY, example, yaml_docs

from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec
from keda_ray_scaler.agent.kuberay.scaledobject import (
    SelectPolicy,
    bounds_problem,
    read_scaled_objects,
)
from keda_ray_scaler.controller.desired import (
    DesiredObjects,
    GroupProblem,
    desired_objects,
    nothing_desired,
)
from keda_ray_scaler.controller.objects import (
    CLUSTER_LABEL,
    GROUP_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    Kind,
    bounded_name,
)
from keda_ray_scaler.controller.optin import OPT_IN_ANNOTATION, OptIn
from keda_ray_scaler.controller.template import ControllerTemplate
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import is_dns_label
from keda_ray_scaler.model import INT32_MAX
from keda_ray_scaler.rpc.trigger import TriggerConfig

EXAMPLE = KUBERAY / "example"


def made(cluster: dict[str, Any], template: ControllerTemplate | None = None) -> DesiredObjects:
    """The desired objects of ``cluster`` with no override."""
    return desired_objects(cluster, OptIn(), template or ControllerTemplate())


def of(desired: DesiredObjects, kind: Kind) -> dict[str, dict[str, Any]]:
    """The bodies of one kind, by name."""
    return {m.name: dict(m.body) for m in desired.manifests if m.kind is kind}


@pytest.fixture(scope="module")
def seed() -> DesiredObjects:
    """The example RayCluster ``demo`` of namespace ray, as the API returns it, opted in."""
    rc = example()
    rc["metadata"] |= {"uid": "uid-demo", "annotations": {OPT_IN_ANNOTATION: "enabled"}}
    return made(rc)


def hand_written(name: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The example file's objects by (kind, name)."""
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml_docs(EXAMPLE / name)}


def assert_like(generated: dict[str, Any], written: dict[str, Any], *fields: str) -> None:
    """Equal in ``fields``; the hand-written labels among the generated ones."""
    for field in fields:
        assert generated[field] == written[field], field
    labels = generated["metadata"]["labels"]
    assert written["metadata"].get("labels", {}).items() <= labels.items()


def test_the_seed_cluster_gets_the_example_worker_groups(seed: DesiredObjects) -> None:
    """One RayWorkerGroup per group, named and specified as rayworkergroups.yaml."""
    written = hand_written("rayworkergroups.yaml")
    generated = of(seed, Kind.RAY_WORKER_GROUP)
    assert {("RayWorkerGroup", n) for n in generated} == set(written)
    for name, body in generated.items():
        assert_like(body, written[("RayWorkerGroup", name)], "apiVersion", "kind", "spec")


def test_the_seed_cluster_gets_the_example_scaled_objects(seed: DesiredObjects) -> None:
    """One ScaledObject per group with exactly the spec of scaledobjects.yaml."""
    written = hand_written("scaledobjects.yaml")
    generated = of(seed, Kind.SCALED_OBJECT)
    assert {("ScaledObject", n) for n in generated} == set(written)
    for name, body in generated.items():
        assert_like(body, written[("ScaledObject", name)], "apiVersion", "kind", "spec")


def test_the_seed_cluster_gets_the_example_agent_identity(seed: DesiredObjects) -> None:
    """ServiceAccount, Role and RoleBinding as agent-rbac.yaml (the subject's namespace set)."""
    written = hand_written("agent-rbac.yaml")
    (account,) = of(seed, Kind.SERVICE_ACCOUNT).values()
    (role,) = of(seed, Kind.ROLE).values()
    (binding,) = of(seed, Kind.ROLE_BINDING).values()
    name = "ray-demo-agent"
    assert_like(account, written[("ServiceAccount", name)], "automountServiceAccountToken")
    assert_like(role, written[("Role", name)], "apiVersion", "rules")
    assert_like(binding, written[("RoleBinding", name)], "roleRef")
    (subject,) = written[("RoleBinding", name)]["subjects"]
    assert binding["subjects"] == [subject | {"namespace": "ray"}]


def test_the_chart_role_grants_the_same_verbs() -> None:
    """The chart's agent Role (kuberay mode) has the verbs of the generated rules."""
    chart = (KUBERAY.parent.parent / "charts/keda-ray-scaler/templates/agent-rbac.yaml").read_text()
    (role,) = of(made(raycluster(worker())), Kind.ROLE).values()
    for rule in role["rules"]:
        verbs = ", ".join(f'"{v}"' for v in rule["verbs"])
        resources = ", ".join(f'"{r}"' for r in rule["resources"])
        assert f"resources: [{resources}]" in chart
        assert f"verbs: [{verbs}]" in chart


def test_the_generated_scaled_objects_pass_the_agents_parser(seed: DesiredObjects) -> None:
    """The agent reads each one, unrefused, with the group's bounds and the example's behaviour."""
    rc = example()
    spec = cluster_spec(rc)
    bodies = list(of(seed, Kind.SCALED_OBJECT).values())
    views, refused = read_scaled_objects(bodies)
    assert refused == [] and len(views) == 2
    for view in views:
        group = spec.group(view.target_name.removeprefix("ray-demo-"))
        assert group is not None
        assert (view.target_kind, view.name) == ("RayWorkerGroup", view.target_name)
        assert bounds_problem(view, group.min_replicas, group.max_replicas) == ""
        assert view.cooldown_s == 5
        assert view.scale_down.stabilization_window_s == view.scale_up.stabilization_window_s == 0
        assert view.scale_up.select_policy is SelectPolicy.MAX


def test_the_generated_triggers_pass_the_scalers_parser(seed: DesiredObjects) -> None:
    """The scaler's trigger parser takes each trigger's metadata: cluster and group."""
    for body in of(seed, Kind.SCALED_OBJECT).values():
        (trigger,) = body["spec"]["triggers"]
        config = TriggerConfig.from_metadata(trigger["metadata"])
        assert (config.cluster, config.group) == ("demo", body["metadata"]["labels"][GROUP_LABEL])


def test_the_generated_worker_groups_pass_the_crd_schema(seed: DesiredObjects) -> None:
    """Each RayWorkerGroup validates against the CRD's openAPIV3Schema."""
    (crd,) = yaml_docs(KUBERAY / "crd" / "rayworkergroups.yaml")
    (version,) = crd["spec"]["versions"]
    for body in of(seed, Kind.RAY_WORKER_GROUP).values():
        jsonschema.validate(body, version["schema"]["openAPIV3Schema"])


def test_every_object_is_owned_by_the_cluster_and_marked(seed: DesiredObjects) -> None:
    """Namespace, the owner reference (controller, blocking), managed-by and the cluster label."""
    assert len(seed.manifests) == 7
    for manifest in seed.manifests:
        meta = manifest.body["metadata"]
        assert meta["namespace"] == "ray"
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "name": "demo",
                "uid": "uid-demo",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["labels"][MANAGED_BY_LABEL] == MANAGED_BY == "keda-ray-scaler-controller"
        assert meta["labels"][CLUSTER_LABEL] == "demo"
        assert (GROUP_LABEL in meta["labels"]) == (manifest.group is not None)


def test_the_identity_comes_first_and_each_worker_group_before_its_scaled_object(
    seed: DesiredObjects,
) -> None:
    """Creation order: the agent can read as soon as it exists; a target before its scaler."""
    assert [(m.kind, m.group) for m in seed.manifests] == [
        (Kind.SERVICE_ACCOUNT, None),
        (Kind.ROLE, None),
        (Kind.ROLE_BINDING, None),
        (Kind.RAY_WORKER_GROUP, "cpu"),
        (Kind.SCALED_OBJECT, "cpu"),
        (Kind.RAY_WORKER_GROUP, "gpu"),
        (Kind.SCALED_OBJECT, "gpu"),
    ]


def test_a_long_cluster_and_group_name_is_shortened_with_a_stable_hash() -> None:
    """63 characters at most, a DNS label, the same every time, distinct per group."""
    cluster_name = "c" * 60
    cluster = raycluster(worker("g" * 40 + "-a"), worker("g" * 40 + "-b"), name=cluster_name)
    first, again = made(cluster), made(cluster)
    assert first == again
    groups = of(first, Kind.RAY_WORKER_GROUP)
    assert len(groups) == 2
    for name in groups:
        assert len(name) == 63 and is_dns_label(name)
        assert name.startswith("ray-" + "c" * 50)
    assert set(groups) == set(of(first, Kind.SCALED_OBJECT))
    (role,) = of(first, Kind.ROLE).values()
    assert role["rules"][3]["resourceNames"] == list(groups)
    for body in of(first, Kind.SCALED_OBJECT).values():
        assert body["spec"]["scaleTargetRef"]["name"] == body["metadata"]["name"]
    (account,) = of(first, Kind.SERVICE_ACCOUNT)
    assert len(account) == 63 and is_dns_label(account)


def test_bounded_name_keeps_short_names_and_pins_long_ones() -> None:
    """A name within 63 is kept; a longer one is cut, '-' and 8 hex digits of its hash."""
    assert bounded_name("ray-demo-cpu") == "ray-demo-cpu"
    assert bounded_name("x" * 63) == "x" * 63
    # pinned: the hash of a name must not change between releases (it names live objects)
    assert bounded_name("x" * 64) == "x" * 54 + "-7ce10097"
    assert bounded_name("ray-" + "a" * 53 + "-" + "b" * 20) == "ray-" + "a" * 50 + "-31f024df"
    # a cut that ends in '-' loses it: no '--' before the hash
    cut = bounded_name("ray-" + "a" * 49 + "-" + "b" * 20)
    assert cut.startswith("ray-" + "a" * 49 + "-") and "--" not in cut and len(cut) == 62


def test_overrides_reach_every_scaled_object() -> None:
    """A cluster's polling interval and cooldown replace the template's; the scaler address is
    always the template's."""
    opt_in = OptIn(polling_interval_s=30, cooldown_period_s=60)
    desired = desired_objects(raycluster(worker("a"), worker("b")), opt_in, ControllerTemplate())
    for body in of(desired, Kind.SCALED_OBJECT).values():
        spec = body["spec"]
        assert (spec["pollingInterval"], spec["cooldownPeriod"]) == (30, 60)
        address = ControllerTemplate().scaler_address
        assert spec["triggers"][0]["metadata"]["scalerAddress"] == address


def test_a_template_without_authentication_or_behaviour_writes_neither() -> None:
    """No authenticationRef, no advanced block."""
    template = ControllerTemplate(trigger_authentication=None, behavior=None)
    (body,) = of(made(raycluster(worker()), template), Kind.SCALED_OBJECT).values()
    assert "advanced" not in body["spec"]
    assert "authenticationRef" not in body["spec"]["triggers"][0]


def test_absent_bounds_are_kuberays_defaults() -> None:
    """No minReplicas: 0; no maxReplicas: 2^31-1 (KubeRay's default)."""
    (body,) = of(made(raycluster({"groupName": "cpu"})), Kind.SCALED_OBJECT).values()
    assert (body["spec"]["minReplicaCount"], body["spec"]["maxReplicaCount"]) == (0, INT32_MAX)


@pytest.mark.parametrize(
    ("group", "problem"),
    [
        ({"groupName": "CPU_big", "maxReplicas": 4}, GroupProblem.BAD_NAME),
        ({"groupName": "", "maxReplicas": 4}, GroupProblem.BAD_NAME),
        ({"maxReplicas": 4}, GroupProblem.BAD_NAME),
        ({"groupName": "cpu", "maxReplicas": 4}, GroupProblem.DUPLICATE),
        ({"groupName": "late", "minReplicas": 5, "maxReplicas": 4}, GroupProblem.BAD_BOUNDS),
        ({"groupName": "late", "minReplicas": -1, "maxReplicas": 4}, GroupProblem.BAD_BOUNDS),
        ({"groupName": "late", "maxReplicas": "4"}, GroupProblem.BAD_BOUNDS),
        ({"groupName": "late", "maxReplicas": True}, GroupProblem.BAD_BOUNDS),
        ({"groupName": "late", "maxReplicas": 2**31}, GroupProblem.BAD_BOUNDS),
    ],
)
def test_a_group_the_scaler_cannot_serve_is_refused_alone(
    group: dict[str, Any], problem: GroupProblem
) -> None:
    """The refused group gets no objects, typed and explained; the group beside it keeps its."""
    desired = made(raycluster(worker("cpu"), group))
    (refused,) = desired.refused
    assert refused.problem is problem and refused.message
    assert set(of(desired, Kind.SCALED_OBJECT)) == {"ray-demo-cpu"}
    assert (refused.group in desired.held_groups) == (problem is GroupProblem.BAD_BOUNDS)


def test_a_group_refused_for_its_bounds_keeps_its_place_in_the_role() -> None:
    """Its RayWorkerGroup, kept as it is, still has its status written by the agent."""
    desired = made(raycluster(worker("cpu"), worker("gpu", min=3, max=1)))
    (role,) = of(desired, Kind.ROLE).values()
    assert role["rules"][3]["resourceNames"] == ["ray-demo-cpu", "ray-demo-gpu"]


def test_a_cluster_without_groups_gets_no_unnamed_status_grant() -> None:
    """An empty resourceNames would grant every RayWorkerGroup's status: the rule is left out."""
    (role,) = of(made(raycluster()), Kind.ROLE).values()
    assert all(r["resources"] != ["rayworkergroups/status"] for r in role["rules"])
    assert all(r.get("resourceNames") != [] for r in role["rules"])


@pytest.mark.parametrize("field", ["namespace", "name", "uid"])
def test_a_cluster_without_its_identity_is_an_error_naming_the_field(field: str) -> None:
    """No namespace, name or uid: nothing can be owned; ConfigError names the field."""
    cluster = raycluster(worker())
    del cluster["metadata"][field]
    with pytest.raises(ConfigError) as caught:
        made(cluster)
    assert caught.value.field == f"metadata.{field}"


def test_nothing_desired_is_the_owner_alone() -> None:
    """A cluster no longer served: no manifests, same owner."""
    desired = nothing_desired(raycluster(worker()))
    assert (desired.manifests, desired.owner.uid) == ((), "uid-demo-1")
