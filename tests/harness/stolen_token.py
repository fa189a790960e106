"""The agent's ServiceAccount as a thief holding its token would use it, on a real API server.

:class:`Thief` sends requests impersonating ``system:serviceaccount:<namespace>:<account>``
(the admin's client with ``Impersonate-User``, as ``kubectl auth can-i --as`` does in
test_least_privilege.py) and returns the API server's :class:`Answer`. :func:`in_namespace`
and :func:`policies_for` put a shipped agent identity (an example's, the shared
kustomization's or the chart's) in one namespace: its ServiceAccount, Role and RoleBinding
there, its admission policy and binding renamed for that namespace (both are cluster-scoped)
and, for an example's, matched to its ServiceAccount there. :func:`enforced` applies the
policies and waits until the API server enforces them. Then what a thief tries in each mode,
and what the agent itself does (its own patch bodies).
"""

from __future__ import annotations

import copy
import functools
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import yaml
from control_plane import ControlPlane
from kubernetes import config
from manifest_render import named, render

Obj = dict[str, Any]
NAMESPACED = ("ServiceAccount", "Role", "RoleBinding")
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


@dataclass(frozen=True, slots=True)
class Answer:
    """The API server's answer to one request: its HTTP status and, when refused, its message."""

    status: int
    message: str = ""

    @property
    def allowed(self) -> bool:
        """Admitted (2xx; a dry run stores nothing)."""
        return self.status < 300

    @property
    def forbidden(self) -> bool:
        """Refused with 403."""
        return self.status == 403

    def denied_by_policy(self, rule: str) -> bool:
        """Refused with 403 by an admission policy's rule whose message holds ``rule``."""
        return (
            self.forbidden and "ValidatingAdmissionPolicy" in self.message and rule in self.message
        )

    def short(self) -> str:
        """One line for the figures: ``allowed`` or the status and message."""
        return "allowed" if self.allowed else f"{self.status} {self.message}"[:300]


#: ``kind/name`` of what a thief patches -> its API path (``{ns}``, ``{name}`` filled in).
PATHS = {
    "rayclusters": "/apis/ray.io/v1/namespaces/{ns}/rayclusters/{name}",
    "pods": "/api/v1/namespaces/{ns}/pods/{name}",
}
CONTENT_TYPES = {"json": "application/json-patch+json", "merge": "application/merge-patch+json"}


@dataclass(frozen=True, slots=True)
class Thief:
    """Requests as the agent's ServiceAccount: the admin's client with ``Impersonate-User``
    (the admin itself when ``account`` is empty). Each request goes straight to its verb (no
    GET first, as kubectl would send), so the answer is that verb's."""

    cp: ControlPlane
    namespace: str
    account: str

    @property
    def user(self) -> str:
        """The ServiceAccount's user name, as RBAC and admission see it."""
        return f"system:serviceaccount:{self.namespace}:{self.account}"

    def request(self, method: str, what: str, body: Any = None, *, dry_run: bool = True) -> Answer:
        """``method`` on ``what`` (``pods/web``): a dry run unless ``dry_run`` is false
        (admission runs either way; nothing is stored)."""
        api = config.new_client_from_config(str(self.cp.admin_kubeconfig))
        kind, _, name = what.partition("/")
        url = api.configuration.host + PATHS[kind].format(ns=self.namespace, name=name)
        headers = {"Accept": "application/json"}
        if isinstance(body, tuple):
            headers["Content-Type"], body = body
        if self.account:
            headers["Impersonate-User"] = self.user
        query = "?dryRun=All" if dry_run else ""
        try:
            response = api.call_api(method, url + query, header_params=headers, body=body)
            data = response.read()
        finally:
            api.close()
        if response.status < 300:
            return Answer(response.status)
        return Answer(response.status, str(json.loads(data).get("message", data)))

    def patch(self, what: str, kind: str, body: Any, *, dry_run: bool = True) -> Answer:
        """A patch of ``what`` (``rayclusters/demo``), ``kind`` json or merge."""
        return self.request("PATCH", what, (CONTENT_TYPES[kind], body), dry_run=dry_run)

    def delete(self, what: str) -> Answer:
        """A delete of ``what`` (dry run)."""
        return self.request("DELETE", what)


def in_namespace(objs: list[Obj], namespace: str) -> list[Obj]:
    """The namespaced RBAC objects moved to ``namespace`` (subjects too)."""
    out = []
    for o in copy.deepcopy([o for o in objs if o["kind"] in NAMESPACED]):
        o["metadata"]["namespace"] = namespace
        for subject in o.get("subjects", []):
            subject["namespace"] = namespace
        out.append(o)
    return out


def policies_for(objs: list[Obj], namespace: str, *, example_namespace: str = "ray") -> list[Obj]:
    """The admission policies and bindings of ``objs``, named ``<name>-<namespace>``; a
    condition naming an example's ServiceAccount in ``example_namespace`` names it in
    ``namespace`` instead (a shared identity's condition matches every namespace already)."""
    out = []
    for o in copy.deepcopy([o for o in objs if o["kind"] in POLICY_KINDS]):
        o["metadata"]["name"] += f"-{namespace}"
        spec = o["spec"]
        if o["kind"] == POLICY_KINDS[1]:
            spec["policyName"] += f"-{namespace}"
        for condition in spec.get("matchConditions", []):
            user = f"system:serviceaccount:{example_namespace}:"
            condition["expression"] = condition["expression"].replace(
                user, f"system:serviceaccount:{namespace}:"
            )
        out.append(o)
    return out


def apply(cp: ControlPlane, objs: list[Obj]) -> None:
    """``kubectl apply`` of the objects."""
    cp.kubectl("apply", "-f", "-", input="\n---\n".join(yaml.safe_dump(o) for o in objs))


@contextmanager
def namespace(cp: ControlPlane, name: str) -> Iterator[str]:
    """A namespace with its ``default`` ServiceAccount (no controller-manager here), deleted
    (without waiting) on exit."""
    cp.kubectl("create", "namespace", name)
    cp.kubectl("create", "serviceaccount", "default", f"--namespace={name}")
    try:
        yield name
    finally:
        cp.kubectl("delete", "namespace", name, "--wait=false", check=False)


def unnamed(rbac: list[Obj], account: str) -> list[Obj]:
    """A second identity ``<account>-unnamed`` whose Role is the identity's without any
    ``resourceNames`` (what the chart rendered when agent.rbac.rayClusters was empty)."""
    out = []
    for o in copy.deepcopy(rbac):
        o["metadata"]["name"] = f"{account}-unnamed"
        for rule in o.get("rules", []):
            rule.pop("resourceNames", None)
        for subject in o.get("subjects", []):
            subject["name"] = f"{account}-unnamed"
        if "roleRef" in o:
            o["roleRef"]["name"] = f"{account}-unnamed"
        out.append(o)
    return out


def type_warnings(cp: ControlPlane, policies: list[Obj]) -> list[str]:
    """The API server's type-checking warnings on the policies (``status.typeChecking``)."""
    found = []
    for o in policies:
        if o["kind"] == POLICY_KINDS[0]:
            status = cp.get_json("validatingadmissionpolicy", o["metadata"]["name"]).get("status")
            for w in ((status or {}).get("typeChecking") or {}).get("expressionWarnings", []):
                found.append(f"{w['fieldRef']}: {w['warning']}"[:300])
    return found


@contextmanager
def enforced(
    cp: ControlPlane, policies: list[Obj], refused: Callable[[], Answer], timeout_s: float = 60
) -> Iterator[float]:
    """The policies applied, and enforced once ``refused()`` is refused by one (its dry run
    retried): yields the seconds that took; the policies are deleted on exit."""
    assert {o["kind"] for o in policies} == set(POLICY_KINDS), policies
    start = time.monotonic()
    apply(cp, policies)
    try:
        while "ValidatingAdmissionPolicy" not in (answer := refused()).message:
            if time.monotonic() - start > timeout_s:
                raise AssertionError(f"policies not enforced after {timeout_s} s: {answer}")
            time.sleep(0.2)
        yield time.monotonic() - start
    finally:
        for o in reversed(policies):
            kind = o["kind"].lower()
            cp.kubectl("delete", kind, o["metadata"]["name"], "--wait=false", check=False)


# --- what a thief tries, what the agent does ------------------------------------------------


def raycluster(name: str, namespace: str) -> Obj:
    """The KubeRay example's RayCluster as ``name``, its cpu group at 3 replicas."""
    rc = copy.deepcopy(named(render("manifests/kuberay/example"), "RayCluster", "demo"))
    rc["metadata"].update(name=name, namespace=namespace)
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    return rc


def _op(op: str, path: str, value: Any) -> list[Obj]:
    return [{"op": op, "path": path, "value": value}]


def kuberay_attacks(thief: Thief) -> dict[str, Callable[[], Answer]]:
    """What a thief tries with a KubeRay-mode token (each a dry run)."""
    cpu = "/spec/workerGroupSpecs/0"
    head_account = "/spec/headGroupSpec/template/spec/serviceAccountName"
    foreign = {"workersToDelete": ["other-cpu-worker-bcdfg"]}
    # a pod of cluster demo-cpu-worker (its group x): a prefix match would take it for demo's
    collision = {"workersToDelete": ["demo-cpu-worker-x-worker-bcdfg"]}
    attacks = {
        "patch another RayCluster": ("other", _op("replace", f"{cpu}/replicas", 5)),
        "change a worker template's image": (
            "demo",
            _op("replace", f"{cpu}/template/spec/containers/0/image", "x:1"),
        ),
        "name another cluster's pod in workersToDelete": (
            "demo",
            _op("add", f"{cpu}/scaleStrategy", foreign),
        ),
        "name a pod of cluster demo-cpu-worker in workersToDelete": (
            "demo",
            _op("add", f"{cpu}/scaleStrategy", collision),
        ),
        "change the head's ServiceAccount": ("demo", _op("replace", head_account, "default")),
        "label the RayCluster": ("demo", _op("add", "/metadata/labels", {"x": "y"})),
    }
    return {
        what: functools.partial(thief.patch, f"rayclusters/{name}", "json", body)
        for what, (name, body) in attacks.items()
    }


def kuberay_agent_patches(thief: Thief) -> list[Answer]:
    """The agent's own JSON patches of RayCluster demo (stored): down from 3 to 1 naming two of
    its pods, then workersToDelete cleared once KubeRay processed them."""
    from keda_ray_scaler.agent.kuberay.raycluster_scale import (
        Action,
        ScaleDecision,
        decide,
        group_state,
        scale_patch,
    )

    # the API server's 5 characters (bcdfghjklmnpqrstvwxz2456789: no vowel) after the prefix
    pods = tuple(f"demo-cpu-worker-{s}" for s in ("bbbbb", "ccccc", "ddddd"))
    answers = []
    for step in ("down", "clear"):
        rc = thief.cp.get_json("raycluster", "demo", f"--namespace={thief.namespace}")
        state = group_state(rc, "cpu")
        assert state is not None
        if step == "down":
            decision = decide(state, 1, pods, pods[:2])
            assert decision.workers_to_delete == pods[:2]
        else:
            assert (state.replicas, state.workers_to_delete) == (1, pods[:2])
            decision = ScaleDecision(Action.CLEAR, 1, (), "processed")
        body = scale_patch(rc["metadata"]["resourceVersion"], state, decision)
        answers.append(thief.patch("rayclusters/demo", "json", body, dry_run=False))
    return answers


def pod(name: str, namespace: str, labels: dict[str, str]) -> Obj:
    """A bare Pod (no scheduler here: it stays Pending, which admission does not mind)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.60.0"}]},
    }


def deployment_pods(namespace: str) -> list[Obj]:
    """A worker of cluster demo, a worker of cluster other, a pod that is no Ray worker."""
    worker = {"ray.io/group": "cpu", "ray.io/node-type": "worker"}
    return [
        pod("demo-cpu-aaaaa", namespace, {"ray.io/cluster": "demo", **worker}),
        pod("other-cpu-bbbbb", namespace, {"ray.io/cluster": "other", **worker}),
        pod("web", namespace, {"app": "web"}),
    ]


def marks(value: str | None) -> dict[str, str | None]:
    """The agent's two annotations at ``value`` (None removes them)."""
    from keda_ray_scaler.agent.pod import DELETION_COST
    from keda_ray_scaler.agent.victims.marks import VictimSettings

    return {DELETION_COST: value, VictimSettings().owner_annotation: value}


def deployment_attacks(thief: Thief) -> dict[str, Callable[[], Answer]]:
    """What a thief tries with a Deployment-mode token (each a dry run)."""
    victim = {"metadata": {"annotations": marks("-2147483648")}}
    worker = "pods/demo-cpu-aaaaa"
    merge = functools.partial(thief.patch, kind="merge")
    return {
        "change a worker's image": functools.partial(
            thief.patch, worker, "json", _op("replace", "/spec/containers/0/image", "x:1")
        ),
        "write another annotation": functools.partial(
            merge, worker, body={"metadata": {"annotations": {"example.com/x": "y"}}}
        ),
        "relabel a worker": functools.partial(
            merge, worker, body={"metadata": {"labels": {"ray.io/cluster": "other"}}}
        ),
        "mark a pod that is no Ray worker": functools.partial(merge, "pods/web", body=victim),
        "delete a pod that is no Ray worker": functools.partial(thief.delete, "pods/web"),
        "mark another cluster's worker": functools.partial(
            merge, "pods/other-cpu-bbbbb", body=victim
        ),
    }


def deployment_agent_calls(thief: Thief) -> list[Answer]:
    """What the agent does to a victim (stored): its marks written with the pod's
    resourceVersion (agent/kube/pod_api.py), removed, then the pod deleted (a dry run)."""
    worker = "demo-cpu-aaaaa"
    version = thief.cp.get_json("pod", worker, f"--namespace={thief.namespace}")["metadata"]
    mark = {
        "metadata": {
            "resourceVersion": version["resourceVersion"],
            "annotations": marks("-2147483648"),
        }
    }
    unmark = {"metadata": {"annotations": marks(None)}}
    return [
        thief.patch(f"pods/{worker}", "merge", mark, dry_run=False),
        thief.patch(f"pods/{worker}", "merge", unmark, dry_run=False),
        thief.delete(f"pods/{worker}"),
    ]
