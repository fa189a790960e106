"""Least privilege in what we ship, checked by a real kube-apiserver (issue 21, point 4).

- **Pod Security "restricted"**: every shipped kustomization, every chart rendering
  (``chart_render.VALUES``) and the agent sidecar snippet are applied with ``kubectl apply
  --dry-run=server`` into namespaces labelled ``pod-security.kubernetes.io/enforce`` and
  ``warn: restricted``. The API server only *warns* about a Deployment's template (enforce
  applies to Pods), and never looks inside a RayCluster, so every pod template (Deployments',
  RayCluster head and worker groups') is also sent as a Pod, which enforce refuses. A warning or
  a refusal fails the test; a pod without seccomp is refused (the check can fail).
- **The agent's token in the agent container only**: the head Pods as the API server would
  store them (after its ServiceAccount admission) mount a token in the agent container and
  nowhere else.
- **One narrow Role per Ray cluster**: ``kubectl auth can-i`` as each example's ServiceAccount,
  and as the chart's (``agent.rbac`` in either mode), answers yes exactly for what the agent
  calls (``keda_ray_scaler/agent/kube/pod_api.py``, ``kube.py`` and ``kuberay_api.py``).
- **A stolen agent token**: each agent identity (an example's, the shared kustomization's, the
  chart's) in a namespace of its own, its requests impersonated (tests/harness/stolen_token.py):
  with its Role alone the API server admits what a thief tries (a worker template's image, a
  foreign pod in ``workersToDelete``, any pod's image, labels or annotations, deleting any pod);
  with its admission policy too, only what the agent itself sends, every other request 403
  naming the rule. The answers before and after go to ``stolen-token-figures.json`` in pytest's
  base temporary directory (docs/security.md, "Before and after").

The API server: etcd and kube-apiserver of the e2e build set, with KubeRay's, the RayWorkerGroup
and KEDA's CRDs (one per module).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import stolen_token
import yaml
from chart_render import NO_CRDS_HERE, SIDECAR, VALUES, template
from chart_render import helm as helm  # the module-scoped fixture, re-exported
from manifest_render import render
from stolen_token import (
    Answer,
    Thief,
    deployment_agent_calls,
    deployment_attacks,
    deployment_pods,
    kuberay_agent_patches,
    kuberay_attacks,
    raycluster,
)

pytestmark = pytest.mark.controlplane

Obj = dict[str, Any]

#: Every shipped kustomization (manifests/monitoring holds Prometheus operator objects only,
#: checked for shape by test_chart; no CRDs for them here).
SHIPPED = (
    "manifests/base",
    "manifests/agent",
    "manifests/keda",
    "manifests/kuberay/crd",
    "manifests/kuberay/agent",
    "manifests/examples/ray-cluster",
    "manifests/kuberay/example",
)
RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
}
NAMESPACES = ("keda-ray-scaler", "ray", "ray-b", "ray-kuberay", "keda")
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture(scope="module")
def cp() -> Iterator[Any]:
    """An API server with the CRDs and restricted namespaces (skips without the e2e set)."""
    bin_dir = os.environ.get("KRS_E2E_BIN")
    if not bin_dir or not (Path(bin_dir) / "bin" / "controlplane").exists():
        pytest.skip("no e2e build set: run with KRS_E2E_BIN=$(bash e2e/build.sh)")
    from real_kuberay import api_server

    with api_server(Path(bin_dir)) as started:
        started.kubectl(
            "apply", "--server-side", "-f", str((Path(bin_dir) / "keda-crds").resolve())
        )
        started.wait_crds_established()
        for ns in NAMESPACES:
            started.kubectl("create", "namespace", ns)
            started.kubectl("label", "namespace", ns, *(f"{k}={v}" for k, v in RESTRICTED.items()))
        yield started


def pod_templates(obj: Obj) -> Iterator[tuple[str, Obj]]:
    """``(where, template)`` for each pod template of a Deployment or RayCluster."""
    if obj["kind"] == "Deployment":
        yield "template", obj["spec"]["template"]
    elif obj["kind"] == "RayCluster":
        yield "head", obj["spec"]["headGroupSpec"]["template"]
        for group in obj["spec"]["workerGroupSpecs"]:
            yield group["groupName"], group["template"]


def as_pods(objs: list[Obj], namespace: str) -> list[Obj]:
    """One Pod per pod template, named after its object, in ``namespace``."""
    pods = []
    for obj in objs:
        for where, tpl in pod_templates(obj):
            meta = copy.deepcopy(tpl.get("metadata") or {})
            meta.update(name=f"{obj['metadata']['name']}-{where}", namespace=namespace)
            spec = copy.deepcopy(tpl["spec"])  # render() is cached: never change its objects
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return pods


def snippet_pod() -> Obj:
    """The chart's agent sidecar snippet alone as a Pod (the snippet's part of any head)."""
    snippet: Obj = yaml.safe_load(SIDECAR.read_text())
    meta = {**snippet["metadata"], "name": "agent-snippet", "namespace": "ray"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": snippet["spec"]}


def dry_run(cp: Any, objs: list[Obj], *, namespace: str | None = None) -> tuple[int, str]:
    """``kubectl apply --dry-run=server``: return code and stderr (warnings included)."""
    docs = "\n---\n".join(yaml.safe_dump(o) for o in objs)
    flags = [f"--namespace={namespace}"] if namespace else []
    done = cp.kubectl("apply", "--dry-run=server", *flags, "-f", "-", input=docs, check=False)
    return done.returncode, done.stderr


def ensure_service_accounts(cp: Any, pods: list[Obj]) -> None:
    """The ServiceAccounts the pods name (admission looks them up, even in a dry run)."""
    for pod in pods:
        ns, sa = pod["metadata"]["namespace"], pod["spec"].get("serviceAccountName", "default")
        if cp.kubectl("get", "serviceaccount", sa, f"--namespace={ns}", check=False).returncode:
            cp.kubectl("create", "serviceaccount", sa, f"--namespace={ns}")


def shipped(path: str) -> list[Obj]:
    """A kustomization's objects less its Namespaces (the test's own are labelled)."""
    return [o for o in render(path) if o["kind"] != "Namespace"]


def assert_restricted(cp: Any, objs: list[Obj], namespace: str) -> None:
    """The objects and a Pod per pod template pass the API server with no PodSecurity word."""
    pods = as_pods(objs, namespace)
    ensure_service_accounts(cp, pods)
    for batch, ns in ((objs, None), (pods, namespace)):
        if not batch:
            continue
        code, err = dry_run(cp, batch, namespace=ns)
        assert code == 0 and "PodSecurity" not in err, err


@pytest.mark.parametrize("path", SHIPPED)
def test_every_shipped_manifest_passes_pod_security_restricted(cp: Any, path: str) -> None:
    """Each kustomization's objects, and its pod templates as Pods, in restricted namespaces."""
    objs = shipped(path)
    ns = next((o["metadata"]["namespace"] for o in objs if "namespace" in o["metadata"]), "ray")
    assert_restricted(cp, objs, ns)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_every_chart_rendering_passes_pod_security_restricted(
    cp: Any, helm: str, name: str
) -> None:
    """Each values combination of the chart: objects and the scaler's pod template."""
    objs = [
        o for o in template(helm, *VALUES[name]) if not o["apiVersion"].startswith(NO_CRDS_HERE)
    ]
    assert any(o["kind"] == "Deployment" for o in objs)
    assert_restricted(cp, objs, "keda-ray-scaler")


def test_the_agent_sidecar_snippet_passes_pod_security_restricted(cp: Any) -> None:
    """The chart's agent snippet, as a Pod of its own, is admitted with no warning."""
    pod = snippet_pod()
    ensure_service_accounts(cp, [pod])
    code, err = dry_run(cp, [pod])
    assert code == 0 and "PodSecurity" not in err, err


def test_the_check_refuses_a_pod_without_seccomp(cp: Any) -> None:
    """The check can fail: the example head without its seccompProfile is refused."""
    (pod,) = as_pods([d for d in shipped("manifests/examples/ray-cluster") if is_head(d)], "ray")
    del pod["spec"]["securityContext"]["seccompProfile"]
    ensure_service_accounts(cp, [pod])
    code, err = dry_run(cp, [pod])
    assert code != 0
    assert 'violates PodSecurity "restricted:latest"' in err and "seccompProfile" in err, err


# --- the agent's token ----------------------------------------------------------------------


def is_head(obj: Obj) -> bool:
    """The head Deployment or the RayCluster (whose pod templates hold the agent)."""
    labels = obj["metadata"].get("labels", {})
    return bool(
        obj["kind"] == "RayCluster"
        or (obj["kind"] == "Deployment" and labels.get("ray.io/node-type") == "head")
    )


def admitted(cp: Any, pod: Obj) -> Obj:
    """The Pod as the API server would store it (a dry-run create, admission applied)."""
    ensure_service_accounts(cp, [pod])
    done = cp.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=yaml.safe_dump(pod)
    )
    stored: Obj = yaml.safe_load(done.stdout)
    return stored


def token_mounts(pod: Obj) -> dict[str, list[str]]:
    """Container name -> its mounts of a volume that holds a ServiceAccount token."""
    token_volumes = {
        v["name"]
        for v in pod["spec"].get("volumes", [])
        if any("serviceAccountToken" in s for s in (v.get("projected") or {}).get("sources", []))
    }
    found: dict[str, list[str]] = {}
    for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
        paths = [m["mountPath"] for m in c.get("volumeMounts", []) if m["name"] in token_volumes]
        if paths:
            found[c["name"]] = paths
    return found


HEADS: dict[str, Callable[[], list[Obj]]] = {
    "deployment-mode": lambda: as_pods(
        [o for o in shipped("manifests/examples/ray-cluster") if is_head(o)], "ray"
    ),
    "kuberay-mode": lambda: [
        p
        for p in as_pods([o for o in shipped("manifests/kuberay/example") if is_head(o)], "ray")
        if p["metadata"]["name"].endswith("-head")
    ],
    "chart-snippet": lambda: [snippet_pod()],
}


@pytest.mark.parametrize("mode", sorted(HEADS))
def test_only_the_agent_container_holds_a_serviceaccount_token(cp: Any, mode: str) -> None:
    """After admission the head pod has one token volume, mounted by the agent alone, where the
    Kubernetes client's in-cluster config reads it; the worker pods have none."""
    (head,) = HEADS[mode]()
    pod = admitted(cp, head)
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert token_mounts(pod) == {"agent": [TOKEN_DIR]}
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "agent-kube-api-access"]
    sources = volume["projected"]["sources"]
    assert sources[0]["serviceAccountToken"]["path"] == "token"
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downwardAPI"]["items"][0]["path"] == "namespace"


def test_worker_pods_mount_no_token(cp: Any) -> None:
    """Ray worker pods (both examples) get no ServiceAccount token at all."""
    objs = shipped("manifests/examples/ray-cluster") + shipped("manifests/kuberay/example")
    workers = as_pods([o for o in objs if not is_head(o) or o["kind"] == "RayCluster"], "ray")
    workers = [p for p in workers if p["metadata"]["name"] != "demo-head"]
    assert len(workers) == 4
    for pod in workers:
        assert token_mounts(admitted(cp, pod)) == {}, pod["metadata"]["name"]


# --- one narrow Role per Ray cluster ---------------------------------------------------------

#: (verb, resource, name or "", subresource or "") -> allowed, per example and namespace.
Can = dict[tuple[str, str, str, str], bool]
#: Both modes: the worker pods read, never created or exec'd; no Secret, not even Ray's.
BOTH: Can = {
    ("list", "pods", "", ""): True,
    ("watch", "pods", "", ""): True,
    ("get", "pods", "worker-x", ""): True,
    ("create", "pods", "", ""): False,
    ("create", "pods", "worker-x", "exec"): False,
    ("get", "secrets", "demo", ""): False,
    ("list", "secrets", "", ""): False,
}
DEPLOYMENT_MODE: Can = BOTH | {
    ("patch", "pods", "worker-x", ""): True,  # pod-deletion-cost
    ("delete", "pods", "worker-x", ""): True,  # a victim no scale-down takes (released)
    ("delete", "deployments.apps", "ray-demo-cpu", ""): False,
    ("patch", "deployments.apps", "ray-demo-cpu", ""): False,
    ("patch", "rayclusters.ray.io", "demo", ""): False,
}
RWG = "rayworkergroups.keda-ray-scaler.io"
KUBERAY_MODE: Can = BOTH | {
    ("patch", "pods", "worker-x", ""): False,  # victims are named in the RayCluster
    ("delete", "pods", "worker-x", ""): False,  # KubeRay deletes them
    ("get", "rayclusters.ray.io", "demo", ""): True,
    ("patch", "rayclusters.ray.io", "demo", ""): True,
    ("patch", "rayclusters.ray.io", "other", ""): False,
    ("get", "rayclusters.ray.io", "other", ""): False,
    ("list", "rayclusters.ray.io", "", ""): False,
    # the watch of its worker groups: a list and watch by name (fieldSelector metadata.name)
    ("list", "rayclusters.ray.io", "demo", ""): True,
    ("watch", "rayclusters.ray.io", "demo", ""): True,
    ("watch", "rayclusters.ray.io", "other", ""): False,
    ("list", RWG, "", ""): True,
    (
        "watch",
        RWG,
        "",
        "",
    ): True,  # a new spec.replicas applied at once (agent/kuberay/rwg_watch.py)
    ("patch", RWG, "ray-demo-cpu", "status"): True,
    ("patch", RWG, "other", "status"): False,
    ("patch", RWG, "ray-demo-cpu", ""): False,
    ("list", "scaledobjects.keda.sh", "", ""): True,
    ("patch", "scaledobjects.keda.sh", "ray-demo-cpu", ""): False,
}


#: The chart's agent RBAC as each example's: the same ServiceAccount name, in the same mode.
CHART_RBAC = {
    "deployment": ["agent.rbac.create=true", "agent.rbac.serviceAccountName=ray-demo-agent"],
    "kuberay": [
        "agent.rbac.create=true",
        "agent.rbac.serviceAccountName=ray-demo-agent",
        "agent.rbac.mode=kuberay",
        "agent.rbac.rayClusters={demo}",
        "agent.rbac.rayWorkerGroups={ray-demo-cpu,ray-demo-gpu}",
    ],
}


def agent_rbac(helm: str, path: str, namespace: str) -> list[Obj]:
    """The ServiceAccount, Role and RoleBinding of an example (a kustomization), or of the
    chart (``chart:<mode>``) rendered for ``namespace``."""
    kept = ("ServiceAccount", "Role", "RoleBinding")
    if path.startswith("chart:"):
        sets = [*CHART_RBAC[path.partition(":")[2]], f"agent.rbac.namespaces={{{namespace}}}"]
        objs = template(helm, *sets)  # the scaler's own ServiceAccount is in its namespace
        return [o for o in objs if o["kind"] in kept and o["metadata"]["namespace"] == namespace]
    return [o for o in shipped(path) if o["kind"] in kept]


@pytest.mark.parametrize(
    ("path", "namespace", "expected"),
    [
        ("manifests/examples/ray-cluster", "ray", DEPLOYMENT_MODE),
        ("manifests/kuberay/example", "ray-kuberay", KUBERAY_MODE),
        ("chart:deployment", "ray-b", DEPLOYMENT_MODE),
        ("chart:kuberay", "keda", KUBERAY_MODE),
    ],
    ids=["deployment-mode", "kuberay-mode", "chart-deployment-mode", "chart-kuberay-mode"],
)
def test_the_clusters_agent_may_do_what_it_calls_and_nothing_else(
    cp: Any, helm: str, path: str, namespace: str, expected: Can
) -> None:
    """The example's ServiceAccount is named after its cluster and the API server's RBAC
    answers exactly as the agent needs; the chart's agent.rbac, in either mode, the same."""
    rbac = agent_rbac(helm, path, namespace)
    assert [o["metadata"]["name"] for o in rbac] == ["ray-demo-agent"] * 3
    rbac = copy.deepcopy(rbac)
    for o in rbac:
        o["metadata"]["namespace"] = namespace
        for subject in o.get("subjects", []):
            subject["namespace"] = namespace
    cp.apply_docs(rbac)
    who = f"--as=system:serviceaccount:{namespace}:ray-demo-agent"
    got = {}
    for verb, resource, name, sub in expected:
        target = f"{resource}/{name}" if name else resource
        args = ["auth", "can-i", verb, target, who, f"--namespace={namespace}"]
        done = cp.kubectl(*args, *([f"--subresource={sub}"] if sub else []), check=False)
        got[(verb, resource, name, sub)] = done.stdout.strip() == "yes"
    assert got == expected


# --- a stolen agent token: what RBAC and the admission policies leave it ---------------------

#: The rules of the shipped admission policies, by a part of their message.
SPEC_RULE = "another field of spec changed"
RC_METADATA_RULE = "may not change a RayCluster's labels"
GROUP_RULE = "may change only replicas and scaleStrategy.workersToDelete of a worker group"
OWN_PODS_RULE = "may name in workersToDelete only pods of RayCluster demo"
WORKERS_RULE = "may change or delete only the Ray worker pods of its clusters"
POD_SPEC_RULE = "may not change a pod's spec"
POD_METADATA_RULE = "may not change a pod's labels"
MARKS_RULE = "may change only the annotations"

#: An agent identity of each mode: an example's, the shared kustomization's, the chart's.
KUBERAY_SOURCES = {
    "example": "manifests/kuberay/example",
    "shared": "manifests/kuberay/agent",
    "chart": "chart:kuberay",
}
DEPLOYMENT_SOURCES = {
    "example": "manifests/examples/ray-cluster",
    "shared": "manifests/agent",
    "chart": "chart:deployment",
}


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Each attack's answer before and after the policies, kept as JSON for the docs' table."""
    found: dict[str, Any] = {}
    yield found
    path = tmp_path_factory.getbasetemp() / "stolen-token-figures.json"
    path.write_text(json.dumps(found, indent=1))


def identity(helm: str, source: str, namespace: str) -> tuple[list[Obj], list[Obj], str]:
    """The identity's RBAC objects in ``namespace``, its admission policies for it, and its
    ServiceAccount's name."""
    if source.startswith("chart:"):
        mode = source.partition(":")[2]
        sets = [*CHART_RBAC[mode], f"agent.rbac.namespaces={{{namespace}}}"]
        if mode == "deployment":
            sets.append("agent.rbac.rayClusters={demo}")
        objs = template(helm, *sets)
        rbac = [o for o in objs if o["metadata"].get("namespace") == namespace]
        rbac = [o for o in rbac if o["kind"] in stolen_token.NAMESPACED]
    else:
        objs = list(render(source))
        rbac = stolen_token.in_namespace(objs, namespace)
    policies = stolen_token.policies_for(objs, namespace)
    (account,) = [o["metadata"]["name"] for o in rbac if o["kind"] == "ServiceAccount"]
    return rbac, policies, account


def tried(attacks: dict[str, Callable[[], Answer]]) -> dict[str, Answer]:
    """Each attack's answer now."""
    return {what: attack() for what, attack in attacks.items()}


@pytest.mark.parametrize("source", sorted(KUBERAY_SOURCES))
def test_a_stolen_kuberay_token_changes_only_replicas_and_workers_to_delete_of_its_cluster(
    cp: Any, helm: str, source: str, figures: dict[str, Any]
) -> None:
    """With the identity's Role alone, the token rewrites its RayCluster's templates and names any
    pod for KubeRay to delete; with its admission policy too, only the agent's own patches
    (replicas and workersToDelete naming its cluster's pods, then cleared) pass, every other is
    403 naming the rule, another RayCluster is 403 by RBAC (resourceNames), and the admin is
    not held."""
    with stolen_token.namespace(cp, f"thief-kuberay-{source}") as ns:
        rbac, policies, account = identity(helm, KUBERAY_SOURCES[source], ns)
        wide = stolen_token.unnamed(rbac, account)
        stolen_token.apply(cp, [*rbac, *wide, raycluster("demo", ns), raycluster("other", ns)])
        thief = Thief(cp, ns, account)
        attacks = kuberay_attacks(thief)
        before = tried(attacks)
        unnamed = kuberay_attacks(Thief(cp, ns, f"{account}-unnamed"))["patch another RayCluster"]()
        with stolen_token.enforced(cp, policies, attacks["change a worker template's image"]) as s:
            own = kuberay_agent_patches(thief)
            after = tried(attacks)
            admin = kuberay_attacks(Thief(cp, ns, ""))["change a worker template's image"]()
            warnings = stolen_token.type_warnings(cp, policies)
    figures[f"kuberay-{source}"] = {
        "enforced after s": round(s, 1),
        "type-checking warnings": warnings,
        "the agent's patches": [answer.short() for answer in own],
        "patch another RayCluster, Role without resourceNames": unnamed.short(),
        **{what: [before[what].short(), after[what].short()] for what in attacks},
    }
    assert all(answer.allowed for answer in own), own
    assert unnamed.allowed, unnamed  # why agent.rbac.rayClusters is required
    assert admin.allowed, admin  # the policy holds the agent's account only
    other = "patch another RayCluster"
    for answer in (before[other], after[other]):
        assert answer.forbidden and 'cannot patch resource "rayclusters"' in answer.message, answer
    assert all(before[what].allowed for what in attacks if what != other), before
    assert after["change a worker template's image"].denied_by_policy(GROUP_RULE)
    assert after["name another cluster's pod in workersToDelete"].denied_by_policy(OWN_PODS_RULE)
    assert after["name a pod of cluster demo-cpu-worker in workersToDelete"].denied_by_policy(
        OWN_PODS_RULE
    )
    assert after["change the head's ServiceAccount"].denied_by_policy(SPEC_RULE)
    assert after["label the RayCluster"].denied_by_policy(RC_METADATA_RULE)


@pytest.mark.parametrize("source", sorted(DEPLOYMENT_SOURCES))
def test_a_stolen_deployment_mode_token_writes_only_the_marks_of_its_workers(
    cp: Any, helm: str, source: str, figures: dict[str, Any]
) -> None:
    """With the identity's Role alone, the token changes any pod of the namespace (image,
    labels, annotations) and deletes any; with its admission policy too, it writes and removes
    only the agent's two annotations, and deletes, on Ray worker pods only (of cluster demo
    where the identity names it); everything else is 403 naming the rule."""
    with stolen_token.namespace(cp, f"thief-deployment-{source}") as ns:
        rbac, policies, account = identity(helm, DEPLOYMENT_SOURCES[source], ns)
        stolen_token.apply(cp, [*rbac, *deployment_pods(ns)])
        thief = Thief(cp, ns, account)
        attacks = deployment_attacks(thief)
        before = tried(attacks)
        with stolen_token.enforced(cp, policies, attacks["change a worker's image"]) as s:
            own = deployment_agent_calls(thief)
            after = tried(attacks)
            warnings = stolen_token.type_warnings(cp, policies)
    figures[f"deployment-{source}"] = {
        "enforced after s": round(s, 1),
        "type-checking warnings": warnings,
        "the agent's mark, unmark, delete": [answer.short() for answer in own],
        **{what: [before[what].short(), after[what].short()] for what in attacks},
    }
    assert all(answer.allowed for answer in own), own
    assert all(answer.allowed for answer in before.values()), before
    assert after["change a worker's image"].denied_by_policy(POD_SPEC_RULE)
    assert after["write another annotation"].denied_by_policy(MARKS_RULE)
    assert after["relabel a worker"].denied_by_policy(POD_METADATA_RULE)
    assert after["mark a pod that is no Ray worker"].denied_by_policy(WORKERS_RULE)
    assert after["delete a pod that is no Ray worker"].denied_by_policy(WORKERS_RULE)
    other = after["mark another cluster's worker"]
    if source == "shared":  # the shared identity serves every Ray cluster of its namespace
        assert other.allowed, other
    else:
        assert other.denied_by_policy(WORKERS_RULE), other
