"""The kustomize manifests render, validate against KEDA's CRDs, and agree with each other.

Every kustomization is rendered with ``kubectl kustomize`` (no cluster needed). ScaledObjects and
TriggerAuthentications are validated against the openAPIV3Schema of KEDA's own CRDs from
``../shared/keda/crds`` (skipped where that reference copy is absent), including fields the API
server would silently prune (the renderer and the check: tests/harness/manifest_render.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from cel_syntax import problems
from manifest_render import (  # the renderer and KEDA's CRD check
    EXAMPLE,
    ROOT,
    Obj,
    cli_args,
    crd_schema,
    named,
    of_kind,
    render,
    schema_errors,
)

from keda_ray_scaler.agent.kuberay.raycluster_scale import GroupState, decide
from keda_ray_scaler.rpc.trigger import TriggerConfig

KUSTOMIZATIONS = (
    "manifests/base",
    "manifests/agent",
    "manifests/monitoring",
    "manifests/keda",
    "manifests/examples/ray-cluster",
    "e2e/overlays/kuberay-example",  # make e2e's (tests/project/test_e2e_kind.py)
)

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


def env_of(container: Obj) -> dict[str, Obj]:
    """A container's env entries by name."""
    return {e["name"]: e for e in container.get("env", [])}


def workers(objs: tuple[Obj, ...]) -> list[Obj]:
    """The worker-group Deployments."""
    return [
        d
        for d in of_kind(objs, "Deployment")
        if d["metadata"]["labels"].get("ray.io/node-type") == "worker"
    ]


def cluster_spec() -> Obj:
    """The example's cluster spec file, as the agent reads it."""
    loaded: Obj = yaml.safe_load((ROOT / EXAMPLE / "cluster.yaml").read_text())
    return loaded


# --- rendering ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", KUSTOMIZATIONS)
def test_every_kustomization_renders_named_objects(path: str) -> None:
    """Each kustomization renders, and every object has apiVersion, kind and a name."""
    objs = render(path)
    assert objs
    for o in objs:
        assert o["apiVersion"] and o["kind"] and o["metadata"]["name"], o


# --- KEDA CRD validation -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ClusterTriggerAuthentication", "ScaledObject"])
def test_keda_objects_validate_against_kedas_crds(kind: str) -> None:
    """Every ScaledObject and ClusterTriggerAuthentication is valid for KEDA's own CRD schema
    (the chart's TriggerAuthentications: tests/real/control_plane/test_chart.py)."""
    objs = [o for path in KUSTOMIZATIONS for o in of_kind(render(path), kind)]
    assert objs, f"no {kind} rendered"
    for o in objs:
        assert schema_errors(o, crd_schema(kind)) == [], o["metadata"]["name"]


def test_the_crd_check_catches_a_misspelt_field_and_a_missing_target() -> None:
    """A typo the API server would prune, and a missing scaleTargetRef, are both reported."""
    so = dict(of_kind(render(EXAMPLE), "ScaledObject")[0])
    spec = dict(so["spec"])
    spec["cooldownPeriode"] = 30
    del spec["scaleTargetRef"]
    errors = schema_errors({**so, "spec": spec}, crd_schema("ScaledObject"))
    assert errors == [
        "spec: 'scaleTargetRef' is a required property",
        "spec.cooldownPeriode: unknown field (pruned by the API server)",
    ]


# --- the ScaledObjects and the cluster they scale ------------------------------------------


def test_triggers_carry_only_metadata_the_scaler_accepts() -> None:
    """Each trigger's metadata parses with the scaler's own parser, naming the example cluster."""
    spec = cluster_spec()
    groups = {g["name"] for g in spec["workerGroups"]}
    seen = set()
    for so in of_kind(render(EXAMPLE), "ScaledObject"):
        (trigger,) = so["spec"]["triggers"]
        assert trigger["type"] == "external"  # the KubeRay example pushes: test_kuberay_*
        assert trigger["metricType"] == "AverageValue"
        config = TriggerConfig.from_metadata(trigger["metadata"])
        assert config.cluster == spec["cluster"]
        seen.add(config.group)
    assert seen == groups


def test_scaledobject_bounds_match_the_cluster_spec_and_target_the_group_deployment() -> None:
    """minReplicaCount/maxReplicaCount equal the group's min/max; the target is its Deployment."""
    objs = render(EXAMPLE)
    by_group = {g["name"]: g for g in cluster_spec()["workerGroups"]}
    for so in of_kind(objs, "ScaledObject"):
        group = so["spec"]["triggers"][0]["metadata"]["workerGroup"]
        assert so["spec"]["minReplicaCount"] == by_group[group].get("minReplicas", 0)
        assert so["spec"]["maxReplicaCount"] == by_group[group]["maxReplicas"]
        target = named(objs, "Deployment", so["spec"]["scaleTargetRef"]["name"])
        assert target["spec"]["template"]["metadata"]["labels"]["ray.io/group"] == group


def test_unavailable_keeps_replicas_and_scale_down_outlasts_the_view_lag() -> None:
    """Deployment mode: the fallback keeps current replicas (without one, KEDA's cache race
    scaled a failing group to zero, busy pods included; ``replicas: 0`` does so too:
    docs/design/keda-fallback.md). Scale-down waits out the view lag (60 s), tolerance 0."""
    for so in of_kind(render(EXAMPLE), "ScaledObject"):
        assert so["spec"]["fallback"]["behavior"] == "currentReplicas"
        assert so["spec"]["fallback"]["failureThreshold"] == 3
        assert so["spec"]["fallback"]["replicas"] >= 1
        behavior = so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 60
        assert behavior["scaleDown"]["tolerance"] == "0"
        assert behavior["scaleUp"]["stabilizationWindowSeconds"] == 0


def test_the_kuberay_example_scales_down_without_a_window_because_its_applier_names_victims() -> (
    None
):
    """KubeRay mode: no scale-down window and a 5 s cooldown. Safe because a lower target alone
    removes nothing: the applier lowers a group's replicas only by drained victims it names."""
    pods = tuple(f"w{i}" for i in range(10))
    state = GroupState("cpu", 0, replicas=10, min_replicas=0, max_replicas=50)
    for so in of_kind(render("manifests/kuberay/example"), "ScaledObject"):
        behavior = so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 0
        assert so["spec"]["cooldownPeriod"] == 5
        # no fallback: a lower target removes nothing here, and a fallback starts a pod at zero
        assert "fallback" not in so["spec"]
    # a stale answer of 0 with ten busy pods: nothing lowered
    assert decide(state, 0, pods, ()).replicas == 10
    # two drained victims: lowered by exactly those two, named
    decision = decide(state, 0, pods, ("w3", "w7"))
    assert (decision.replicas, set(decision.workers_to_delete)) == (8, {"w3", "w7"})


def test_scaler_address_is_the_headless_grpc_service() -> None:
    """scalerAddress names the scaler's headless Service, its namespace and its gRPC port."""
    base = render("manifests/base")
    svc = named(base, "Service", "keda-ray-scaler")
    assert svc["spec"]["clusterIP"] == "None"
    (port,) = svc["spec"]["ports"]
    expected = f"{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc.cluster.local"
    for so in of_kind(render(EXAMPLE), "ScaledObject"):
        address = so["spec"]["triggers"][0]["metadata"]["scalerAddress"]
        assert address == f"{expected}:{port['port']}"


def test_trigger_authentication_gives_keda_the_client_certificate() -> None:
    """The ScaledObjects name manifests/keda's ClusterTriggerAuthentication (the client key in
    KEDA's namespace only, none in the Ray namespace): caCert, tlsClientCert and tlsClientKey."""
    objs = render(EXAMPLE)
    assert of_kind(objs, "TriggerAuthentication") == []
    for so in of_kind(objs, "ScaledObject"):
        ref = so["spec"]["triggers"][0]["authenticationRef"]
        assert ref["kind"] == "ClusterTriggerAuthentication"
        auth = named(render("manifests/keda"), ref["kind"], ref["name"])
        params = {r["parameter"]: r["key"] for r in auth["spec"]["secretTargetRef"]}
        assert params == {"caCert": "ca.crt", "tlsClientCert": "tls.crt", "tlsClientKey": "tls.key"}


def test_the_charts_client_key_is_made_in_kedas_namespace_only() -> None:
    """Helm-free, from the chart's text: KEDA's client Certificate (CN keda, what serve's
    --client-identity serves) is made once, in clusterTriggerAuthentication.kedaNamespace, never
    in a loop over namespaces; no template makes a TriggerAuthentication; values.yaml keeps no
    list of namespaces for it; every example ScaledObject names the ClusterTriggerAuthentication
    (the renderings: tests/real/control_plane/test_chart.py)."""
    from keda_ray_scaler.rpc.server_settings import ServerSettings

    chart = ROOT / "charts" / "keda-ray-scaler"
    docs = (chart / "templates" / "certificates.yaml").read_text().split("\n---\n")
    (client,) = [d for d in docs if '"client auth"' in d]
    assert "namespace: {{ .Values.clusterTriggerAuthentication.kedaNamespace }}" in client
    assert "range" not in client
    assert f"commonName: {ServerSettings().client_identity}\n" in client
    templates = {p.name: p.read_text() for p in (chart / "templates").glob("*.yaml")}
    assert [n for n, text in templates.items() if "kind: TriggerAuthentication" in text] == []
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert "clientNamespaces" not in values["tls"] and "triggerAuthentication" not in values
    for path in (EXAMPLE, "manifests/kuberay/example"):
        for so in of_kind(render(path), "ScaledObject"):
            ref = so["spec"]["triggers"][0]["authenticationRef"]
            assert ref == {"name": "keda-ray-scaler-client", "kind": "ClusterTriggerAuthentication"}


# --- worker pods ----------------------------------------------------------------------------


def test_worker_pods_tell_ray_their_pod_name_and_group() -> None:
    """RAY_CLOUD_INSTANCE_ID comes from metadata.name, RAY_NODE_TYPE_NAME is the group."""
    objs = render(EXAMPLE)
    found = workers(objs)
    assert {d["spec"]["template"]["metadata"]["labels"]["ray.io/group"] for d in found} == {
        g["name"] for g in cluster_spec()["workerGroups"]
    }
    for d in found:
        labels = d["spec"]["template"]["metadata"]["labels"]
        assert labels["ray.io/cluster"] == cluster_spec()["cluster"]
        (container,) = d["spec"]["template"]["spec"]["containers"]
        env = env_of(container)
        assert env["RAY_CLOUD_INSTANCE_ID"]["valueFrom"] == {
            "fieldRef": {"fieldPath": "metadata.name"}
        }
        assert env["RAY_NODE_TYPE_NAME"]["value"] == labels["ray.io/group"]


def test_worker_raylets_offer_the_resources_the_spec_declares() -> None:
    """``ray start --num-cpus/--num-gpus`` of each group equal its resources in cluster.yaml."""
    by_group = {g["name"]: g["resources"] for g in cluster_spec()["workerGroups"]}
    for d in workers(render(EXAMPLE)):
        group = d["spec"]["template"]["metadata"]["labels"]["ray.io/group"]
        args = d["spec"]["template"]["spec"]["containers"][0]["args"]
        flags = dict(a.removeprefix("--").split("=", 1) for a in args if "=" in a)
        offered = {"CPU": int(flags["num-cpus"])}
        if "num-gpus" in flags:
            offered["GPU"] = int(flags["num-gpus"])
        assert offered == by_group[group]


def test_worker_deployments_leave_replicas_to_the_hpa() -> None:
    """No worker Deployment sets spec.replicas, so re-applying never fights KEDA."""
    for d in workers(render(EXAMPLE)):
        assert "replicas" not in d["spec"]


# --- RBAC -----------------------------------------------------------------------------------


def test_agent_role_grants_exactly_pods_get_list_watch_patch_delete() -> None:
    """The agent's only permission: get/list/watch/patch/delete on core pods, namespaced."""
    for path in ("manifests/agent", EXAMPLE):
        objs = render(path)
        (role,) = of_kind(objs, "Role")
        assert [(r["apiGroups"], r["resources"], sorted(r["verbs"])) for r in role["rules"]] == [
            ([""], ["pods"], ["delete", "get", "list", "patch", "watch"])
        ]
        assert of_kind(objs, "ClusterRole") == []
        assert of_kind(objs, "ClusterRoleBinding") == []


KUBERAY_IDENTITIES = ("manifests/kuberay/agent", "manifests/kuberay/example")


def rules_for(role: Obj, resource: str) -> list[Obj]:
    """The Role's rules that name ``resource``."""
    return [r for r in role["rules"] if resource in r["resources"]]


@pytest.mark.parametrize("path", KUBERAY_IDENTITIES)
def test_kuberay_roles_name_their_rayclusters_and_groups(path: str) -> None:
    """KubeRay mode: rayclusters and rayworkergroups/status only by name (resourceNames), pods
    read only: a stolen token reaches no other cluster's RayCluster and deletes no pod itself."""
    (role,) = of_kind(render(path), "Role")
    (clusters,) = rules_for(role, "rayclusters")
    assert clusters["resourceNames"] == ["demo"]
    (status,) = rules_for(role, "rayworkergroups/status")
    assert status["resourceNames"] == ["ray-demo-cpu", "ray-demo-gpu"]
    (pods,) = rules_for(role, "pods")
    assert sorted(pods["verbs"]) == ["get", "list", "watch"]
    verbs = {v for r in role["rules"] for v in r["verbs"]}
    assert not verbs & {"create", "delete", "deletecollection", "update", "*"}


#: kustomization -> (the admission policy's resources, the ServiceAccount it holds)
POLICIES = {
    "manifests/agent": ("pods", "keda-ray-scaler-agent"),
    EXAMPLE: ("pods", "ray-demo-agent"),
    "manifests/kuberay/agent": ("rayclusters", "keda-ray-scaler-agent"),
    "manifests/kuberay/example": ("rayclusters", "ray-demo-agent"),
}


def admission_policy(path: str) -> Obj:
    """The kustomization's one ValidatingAdmissionPolicy, checked to have its binding."""
    objs = render(path)
    (policy,) = of_kind(objs, "ValidatingAdmissionPolicy")
    (binding,) = of_kind(objs, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {
        "policyName": policy["metadata"]["name"],
        "validationActions": ["Deny"],
    }
    for o in (policy, binding):  # cluster-scoped, whatever the kustomization's namespace
        assert o["apiVersion"] == "admissionregistration.k8s.io/v1"
        assert "namespace" not in o["metadata"]
    return policy


def expressions(policy: Obj) -> list[str]:
    """Every CEL expression of a policy: conditions, variables, validations, messages."""
    spec = policy["spec"]
    found = [c["expression"] for c in spec["matchConditions"]]
    found += [v["expression"] for v in spec.get("variables", [])]
    for v in spec["validations"]:
        found += [v["expression"], *([v["messageExpression"]] if "messageExpression" in v else [])]
    return found


@pytest.mark.parametrize("path", sorted(POLICIES))
def test_each_agent_identity_ships_an_admission_policy_for_its_serviceaccount(path: str) -> None:
    """One policy and its Deny binding per agent identity, cluster-scoped, failing closed, whose
    condition names the identity's ServiceAccount (the examples' exactly; the shared
    keda-ray-scaler-agent in any namespace) and on the resource its Role writes."""
    resource, account = POLICIES[path]
    policy = admission_policy(path)
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert rule["resources"] == [resource]
    assert rule["operations"] == (["UPDATE"] if resource == "rayclusters" else ["UPDATE", "DELETE"])
    (binding,) = of_kind(render(path), "RoleBinding")
    assert [s["name"] for s in binding["subjects"]] == [account]
    (condition,) = spec["matchConditions"]
    if "namespace" in binding["metadata"]:
        user = f"system:serviceaccount:{binding['metadata']['namespace']}:{account}"
        assert condition["expression"] == f"request.userInfo.username == '{user}'"
    else:
        regex = re.search(r"matches\('(.+)'\)", condition["expression"])
        assert regex is not None, condition["expression"]
        assert re.match(regex[1], f"system:serviceaccount:ray:{account}")
        assert not re.match(regex[1], f"system:serviceaccount:ray:{account}-x")
        assert not re.match(regex[1], f"system:serviceaccount:ray:ray-demo-agent{account}")
    for v in spec["validations"]:
        assert v["reason"] == "Forbidden"  # a refusal is 403, with the rule's message


@pytest.mark.parametrize("path", sorted(POLICIES))
def test_admission_policy_expressions_are_cel(path: str) -> None:
    """Every expression parses as CEL and names only what the API server declares and the
    policy's own variables (the real API server compiles them: test_least_privilege.py)."""
    policy = admission_policy(path)
    declared = [v["name"] for v in policy["spec"]["variables"]]
    for expression in expressions(policy):
        assert problems(expression, declared) == [], expression


def test_the_cel_check_catches_a_broken_expression() -> None:
    """The check can fail: a lost parenthesis, a misspelt root, an undeclared variable."""
    (validation, *_) = admission_policy("manifests/kuberay/agent")["spec"]["validations"]
    assert problems(validation["expression"].rstrip(")")) != []
    assert problems("oldobject.spec == object.spec") == ["undeclared identifier 'oldobject'"]
    assert problems("variables.grups.size() > 0", ["groups"]) == ["variables.grups is not declared"]


@pytest.mark.parametrize(
    ("mode", "paths"),
    [
        ("pod", ("manifests/agent", EXAMPLE)),
        ("raycluster", ("manifests/kuberay/agent", "manifests/kuberay/example")),
    ],
)
def test_shipped_policies_validate_as_the_charts(mode: str, paths: tuple[str, ...]) -> None:
    """The shared and the example policy of a mode hold the same validations, those of the
    chart's files/<mode>-validations.yaml (which the chart renders verbatim), and the same
    variables but for the clusters a pod policy names."""
    chart = yaml.safe_load(
        (ROOT / f"charts/keda-ray-scaler/files/{mode}-validations.yaml").read_text()
    )
    specs = [admission_policy(path)["spec"] for path in paths]
    for spec in specs:
        assert spec["validations"] == chart
    shared, example = ({v["name"]: v["expression"] for v in s["variables"]} for s in specs)
    if mode == "pod":
        assert (shared.pop("clusters"), example.pop("clusters")) == ("[]", "['demo']")
    assert shared == example


#: The characters the API server appends to a generateName (apimachinery's util/rand alphanums,
#: 5 of them: storage/names.SimpleNameGenerator).
GENERATED = "bcdfghjklmnpqrstvwxz2456789"


def kuberay_worker_prefix(cluster: str, group: str) -> str:
    """The generateName KubeRay 1.5.1 and 1.7.0 give a worker pod (utils.PodName)."""
    return f"{cluster}-{group}"[:50].lower() + "-worker-"


def own_pods_rule_admits(cluster: str, group: str, name: str) -> bool:
    """The chart's workersToDelete rule's verdict on one name, its parts read off its text: the
    suffix regex (CEL ``matches`` is RE2's unanchored search) and the prefix the rest must equal
    (the real API server evaluates the rule itself: test_least_privilege.py)."""
    rules = yaml.safe_load(
        (ROOT / "charts/keda-ray-scaler/files/raycluster-validations.yaml").read_text()
    )
    (rule,) = [r["expression"] for r in rules if "workersToDelete.all(p," in r["expression"]]
    suffix = re.search(r"p\.matches\('([^']+)'\)", rule)
    assert suffix is not None, rule
    compared = "&& p.substring(0, p.size() - 5) == ((object.metadata.name + '-' + g.groupName)"
    assert compared in " ".join(rule.split()), rule
    assert ".substring(0, 50)" in rule and ".lowerAscii() + '-worker-'))" in rule, rule
    return bool(re.search(suffix[1], name)) and name[:-5] == kuberay_worker_prefix(cluster, group)


def test_workers_to_delete_names_only_the_clusters_own_pods() -> None:
    """A name is the cluster's worker only as KubeRay's prefix and exactly the 5 characters the
    API server appends: a pod of cluster demo-cpu-worker (group x) is not cluster demo's (group
    cpu), which a prefix match would admit; nor a suffix too long, too short or not generated."""
    genuine = [GENERATED[i : i + 5] for i in range(0, len(GENERATED) - 4)]
    for suffix in genuine:
        assert own_pods_rule_admits("demo", "cpu", f"demo-cpu-worker-{suffix}"), suffix
    long_cluster = "c" * 45
    long_name = kuberay_worker_prefix(long_cluster, "Group") + "xz279"
    assert own_pods_rule_admits(long_cluster, "Group", long_name)
    assert not own_pods_rule_admits(long_cluster, "Group", f"{long_cluster}-group-worker-xz279")
    collision = "demo-cpu-worker-x-worker-bcdfg"
    assert own_pods_rule_admits("demo-cpu-worker", "x", collision)
    assert not own_pods_rule_admits("demo", "cpu", collision)
    for name in (
        "demo-cpu-worker-abcde",  # vowels: never generated
        "demo-cpu-worker-BCDFG",
        "demo-cpu-worker-bcdf",
        "demo-cpu-worker-bcdfgh",
        "other-cpu-worker-bcdfg",
        "demo-gpu-worker-bcdfg",
        "bcdfg",
    ):
        assert not own_pods_rule_admits("demo", "cpu", name), name


def test_the_pod_policy_lets_the_agent_write_exactly_its_marks() -> None:
    """The annotations the pod policy allows are those the agent writes (cost and marker)."""
    from keda_ray_scaler.agent.pod import DELETION_COST
    from keda_ray_scaler.agent.victims.marks import VictimSettings

    variables = {v["name"]: v["expression"] for v in admission_policy(EXAMPLE)["spec"]["variables"]}
    marks = {DELETION_COST, VictimSettings().owner_annotation}
    assert variables["marks"] == "[" + ", ".join(f"'{m}'" for m in sorted(marks)) + "]"


def test_the_scaler_is_shipped_into_kedas_namespace_without_owning_it() -> None:
    """manifests/base puts the scaler in KEDA's namespace (where the client CA and KEDA's
    certificate live, out of every tenant's reach) and ships no Namespace: deleting the
    kustomization must not delete KEDA's."""
    objs = render("manifests/base")
    assert of_kind(objs, "Namespace") == []
    assert {o["metadata"]["namespace"] for o in objs} == {"keda"}


@pytest.mark.parametrize("path", [EXAMPLE, "manifests/kuberay/example"])
def test_shipped_namespaces_enforce_pod_security_restricted(path: str) -> None:
    """Each Namespace shipped enforces (and warns and audits) Pod Security "restricted": its
    pods comply (test_least_privilege.py has the API server check each), nothing less
    hardened starts beside them."""
    (namespace,) = of_kind(render(path), "Namespace")
    labels = namespace["metadata"]["labels"]
    for mode in ("enforce", "warn", "audit"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted", mode


def restricted_problems(pod: Obj, container: Obj) -> list[str]:
    """What Pod Security "restricted" refuses in a container (its pod's context counted)."""
    pod_ctx, ctx = pod.get("securityContext") or {}, container.get("securityContext") or {}
    seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
    problems_found = [
        "allowPrivilegeEscalation" if ctx.get("allowPrivilegeEscalation") is not False else "",
        "capabilities" if (ctx.get("capabilities") or {}).get("drop") != ["ALL"] else "",
        "runAsNonRoot" if not ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")) else "",
        "seccompProfile" if seccomp not in ("RuntimeDefault", "Localhost") else "",
        "runAsUser 0" if ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0 else "",
    ]
    return [p for p in problems_found if p]


def test_the_scaler_and_agent_containers_comply_with_restricted() -> None:
    """The scaler's and every agent container's securityContext meets "restricted" (the chart's
    snippet, both examples' heads): no escalation, all capabilities dropped, non-root,
    seccomp RuntimeDefault."""
    scaler = named(render("manifests/base"), "Deployment", "keda-ray-scaler")["spec"]["template"]
    checked = [(scaler["spec"], c) for c in scaler["spec"]["containers"]]
    head = named(render(EXAMPLE), "Deployment", "ray-demo-head")["spec"]["template"]["spec"]
    rc = named(render("manifests/kuberay/example"), "RayCluster", "demo")
    kuberay_head = rc["spec"]["headGroupSpec"]["template"]["spec"]
    sidecar = yaml.safe_load(
        (ROOT / "charts/keda-ray-scaler/examples/agent-sidecar.yaml").read_text()
    )
    for pod_spec in (head, kuberay_head, sidecar["spec"]):
        checked += [(pod_spec, c) for c in pod_spec["containers"] if c["name"] == "agent"]
    assert len(checked) == 4
    for pod_spec, container in checked:
        assert restricted_problems(pod_spec, container) == [], container["name"]
    assert restricted_problems({}, {"securityContext": {}}) == [
        "allowPrivilegeEscalation",
        "capabilities",
        "runAsNonRoot",
        "seccompProfile",
    ]  # the check can fail


@pytest.mark.parametrize("path", [EXAMPLE, "manifests/kuberay/example"])
def test_the_example_network_policy_admits_prometheus_of_its_namespace_only(path: str) -> None:
    """The head's agent port (9400) admits pods labelled app.kubernetes.io/name=prometheus of the
    namespace monitoring only: both selectors in one peer (AND), never `namespaceSelector: {}`
    (any namespace's pod so labelled)."""
    (policy,) = of_kind(render(path), "NetworkPolicy")
    (rule,) = [r for r in policy["spec"]["ingress"] if r.get("ports")]
    assert [p["port"] for p in rule["ports"]] == [9400]
    (peer,) = rule["from"]
    assert peer == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }


def test_agent_runs_as_the_bound_service_account_in_the_head_pod() -> None:
    """The head pod's ServiceAccount is the RoleBinding's subject, in the same namespace."""
    objs = render(EXAMPLE)
    head = named(objs, "Deployment", "ray-demo-head")
    sa = head["spec"]["template"]["spec"]["serviceAccountName"]
    (binding,) = of_kind(objs, "RoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": sa, "namespace": head["metadata"]["namespace"]}
    ]
    names = [c["name"] for c in head["spec"]["template"]["spec"]["containers"]]
    assert names == ["ray-head", "agent"]


def test_agent_metrics_port_is_the_one_prometheus_scrapes() -> None:
    """The head pod's prometheus.io/port annotation is the agent container's --port."""
    head = named(render(EXAMPLE), "Deployment", "ray-demo-head")
    template = head["spec"]["template"]
    agent = next(c for c in template["spec"]["containers"] if c["name"] == "agent")
    port = template["metadata"]["annotations"]["prometheus.io/port"]
    assert f"--port={port}" in agent["args"]
    assert [p["containerPort"] for p in agent["ports"]] == [int(port)]


AGENT_POD_FILES = (
    "manifests/examples/ray-cluster/head.yaml",
    "manifests/kuberay/example/raycluster.yaml",
    "charts/keda-ray-scaler/examples/agent-sidecar.yaml",
)


def agent_containers(obj: Any) -> Iterator[Obj]:
    """Every container named ``agent`` anywhere in a manifest object."""
    if isinstance(obj, dict):
        if obj.get("name") == "agent" and "image" in obj:
            yield obj
        for v in obj.values():
            yield from agent_containers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from agent_containers(v)


@pytest.mark.parametrize("path", [EXAMPLE, "manifests/kuberay/example"])
def test_the_agent_runs_the_scalers_image_as_its_own_user(path: str) -> None:
    """One image, both commands: the rendered agent sidecar runs manifests/base's scaler image
    (`agent` command), as that image's non-root user, not the Ray containers' 1000."""
    (scaler,) = named(render("manifests/base"), "Deployment", "keda-ray-scaler")["spec"][
        "template"
    ]["spec"]["containers"]
    (agent,) = [c for o in render(path) for c in agent_containers(o)]
    assert agent["image"] == scaler["image"] == "ghcr.io/keda-ray-scaler/keda-ray-scaler:0.1.0"
    assert cli_args(agent).command == "agent"
    security = agent["securityContext"]
    assert (security["runAsUser"], security["runAsGroup"], security["runAsNonRoot"]) == (
        65532,
        65532,
        True,
    )


@pytest.mark.parametrize("path", AGENT_POD_FILES)
def test_agent_probes_ask_healthz_and_readyz_on_the_metrics_port(path: str) -> None:
    """Liveness on /healthz (fails when Ray was not read), readiness on /readyz (that, or the
    head's Ray version refused), neither on /metrics."""
    docs = yaml.safe_load_all((ROOT / path).read_text())
    (agent,) = [c for d in docs for c in agent_containers(d)]
    (port,) = [p["name"] for p in agent["ports"]]
    assert agent["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
    assert agent["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}
    assert (
        agent["livenessProbe"]["failureThreshold"] * agent["livenessProbe"]["periodSeconds"] >= 60
    )  # a GCS restart (about 30 s to reconnect) never restarts the agent
    assert cli_args(agent).health_intervals == 3.0


# --- the scaler Deployment ----------------------------------------------------------------


def test_scaler_runs_two_hardened_replicas_with_grpc_health_probes() -> None:
    """2 replicas, non-root, read-only root, no privilege escalation, grpc probes, resources."""
    dep = named(render("manifests/base"), "Deployment", "keda-ray-scaler")
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (c,) = pod["containers"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert "grpc" in c[probe], probe
    assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]


# --- containers run real commands --------------------------------------------------------


def test_scaler_container_flags_parse_and_match_its_ports() -> None:
    """The scaler's args are valid ``serve`` flags; the probes use the plaintext health port."""
    dep = named(render("manifests/base"), "Deployment", "keda-ray-scaler")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    args = cli_args(c)
    assert args.command == "serve"
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert (args.port, args.health_port, args.metrics_port) == (
        ports["grpc"],
        ports["health"],
        ports["metrics"],
    )
    assert c["readinessProbe"]["grpc"]["port"] == args.health_port
    mounted = c["volumeMounts"][0]["mountPath"]
    assert {str(args.tls_cert), str(args.tls_key), str(args.tls_client_ca)} == {
        f"{mounted}/tls.crt",
        f"{mounted}/tls.key",
        f"{mounted}/ca.crt",
    }


def test_agent_container_flags_parse_and_read_the_mounted_cluster_spec() -> None:
    """The agent's args are valid ``agent`` flags; its cluster spec is the mounted ConfigMap."""
    head = named(render(EXAMPLE), "Deployment", "ray-demo-head")
    agent = next(c for c in head["spec"]["template"]["spec"]["containers"] if c["name"] == "agent")
    args = cli_args(agent)
    assert args.command == "agent"
    mount = next(m for m in agent["volumeMounts"] if m["name"] == "cluster-spec")
    assert str(args.cluster_spec) == f"{mount['mountPath']}/cluster.yaml"
    assert args.gcs_address == "127.0.0.1:6379"
    assert not args.no_scale_down
    assert env_of(agent)["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.namespace"
    )


def test_example_cluster_spec_loads_with_the_agents_loader() -> None:
    """cluster.yaml is valid for the loader the agent uses, with the groups the manifests use."""
    from keda_ray_scaler.config import load_cluster_spec

    spec = load_cluster_spec(ROOT / EXAMPLE / "cluster.yaml")
    assert spec.name == "demo"
    assert [(g.name, g.min_replicas, g.max_replicas) for g in spec.worker_groups] == [
        ("cpu", 0, 50),
        ("gpu-inference", 0, 8),
    ]


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_e2e_script_is_shellcheck_clean() -> None:
    """e2e/run.sh passes shellcheck (it cannot run here: no Docker engine)."""
    result = subprocess.run(
        ["shellcheck", "-x", str(ROOT / "e2e" / "run.sh")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


# --- scrape configurations: identity from discovery, never from the agent ---------------------


def shipped_scrape_job() -> Obj:
    """The job of manifests/monitoring/prometheus-scrape-config.yaml."""
    text = (ROOT / "manifests/monitoring/prometheus-scrape-config.yaml").read_text()
    (job,) = yaml.safe_load(text)["scrape_configs"]
    return dict(job)


def test_the_plain_scrape_job_takes_namespace_and_pod_from_discovery() -> None:
    """honor_labels false; namespace and head_pod come from __meta_kubernetes_* only."""
    job = shipped_scrape_job()
    assert job["honor_labels"] is False
    targets = {r.get("target_label"): r.get("source_labels") for r in job["relabel_configs"]}
    assert targets["namespace"] == ["__meta_kubernetes_namespace"]
    assert targets["head_pod"] == ["__meta_kubernetes_pod_name"]
    assert "pod" not in targets  # the agent's own `pod` label names worker pods


def test_the_agent_podmonitor_never_honours_the_agents_labels() -> None:
    """honorLabels false, namespace and head_pod from discovery, the operator's pod dropped,
    the job the scaler reads (--prometheus-job's default)."""
    monitor = named(render("manifests/monitoring"), "PodMonitor", "keda-ray-scaler-agent")
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["honorLabels"] is False
    assert endpoint["relabelings"] == [
        {
            "sourceLabels": ["__meta_kubernetes_namespace"],
            "action": "replace",
            "targetLabel": "namespace",
        },
        {
            "sourceLabels": ["__meta_kubernetes_pod_name"],
            "action": "replace",
            "targetLabel": "head_pod",
        },
        {"action": "labeldrop", "regex": "pod"},
        {"action": "replace", "targetLabel": "job", "replacement": "ray-scaler-agents"},
    ]


def test_no_shipped_file_honours_scraped_labels() -> None:
    """Nowhere in manifests, charts or e2e is honor_labels / honorLabels true."""
    found = [
        str(path.relative_to(ROOT))
        for top in ("manifests", "charts", "e2e")
        for path in (ROOT / top).rglob("*.yaml")
        if re.search(r"honor_?[lL]abels:\s*true", path.read_text())
    ]
    assert found == []
