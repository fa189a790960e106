"""The controller's RBAC as shipped against what it calls: the chart's Role in each of
``controller.namespaces`` grants at least every (apiGroup, resource, verb) of
``real_controller.CONTROLLER_RULES`` (the rules the real control-plane tests run the controller
under) and of the agent Role it makes (RBAC lets it create a Role only with every permission in
it); so does any controller Role in manifests/ (none ships today: the chart is the controller's
one install). The check catches a verb removed. The chart's tests need helm (skip without)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml
from chart_install import RELEASE
from chart_render import VALUES, Obj, template
from chart_render import helm as helm  # the module-scoped fixture, re-exported
from manifest_render import ROOT
from real_controller import CONTROLLER_RULES

from keda_ray_scaler.controller.objects import Owner, agent_identity
from keda_ray_scaler.controller.template import ControllerTemplate

#: (apiGroup, resource, verb)
Grant = tuple[str, str, str]
#: what only the controller does: no other Role shipped grants these
CONTROLLER_ONLY: tuple[Grant, ...] = (
    ("ray.io", "rayclusters/status", "patch"),
    ("rbac.authorization.k8s.io", "roles", "create"),
)


def grants(rules: Iterable[Mapping[str, Any]]) -> set[Grant]:
    """Every (apiGroup, resource, verb) the ``rules`` name ("*" kept as it is)."""
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups") or ()
        for resource in rule.get("resources") or ()
        for verb in rule.get("verbs") or ()
    }


def missing(needed: Iterable[Mapping[str, Any]], held: Iterable[Mapping[str, Any]]) -> list[Grant]:
    """The grants of ``needed`` that ``held`` does not give (a "*" gives every value), sorted;
    ``held``'s resourceNames narrow nothing here: the controller's rules name none."""
    have = grants(r for r in held if not r.get("resourceNames"))

    def given(grant: Grant) -> bool:
        return any(
            all(h in (want, "*") for h, want in zip(held_grant, grant, strict=True))
            for held_grant in have
        )

    return sorted(g for g in grants(needed) if not given(g))


def controller_rules(objs: Sequence[Obj]) -> dict[str, list[Obj]]:
    """Per namespace ("*": all), the rules of every Role or ClusterRole bound to the controller's
    ServiceAccount (the one its Deployment runs as)."""
    (deployment,) = [
        o
        for o in objs
        if o["kind"] == "Deployment" and o["metadata"]["name"] == f"{RELEASE}-controller"
    ]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs}
    out: dict[str, list[Obj]] = {}
    for binding in objs:
        subjects = binding.get("subjects") or ()
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding") or not any(
            s["kind"] == "ServiceAccount" and s["name"] == account for s in subjects
        ):
            continue
        ref, namespace = binding["roleRef"], binding["metadata"].get("namespace")
        role = roles[ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"]]
        out.setdefault(namespace or "*", []).extend(role.get("rules") or ())
    return out


def chart_controller_rules(helm: str) -> dict[str, list[Obj]]:
    """The controller's rules per namespace as the chart renders them with the controller on."""
    return controller_rules(template(helm, *VALUES["controller"]))


def agent_role_rules() -> list[Obj]:
    """The rules of the agent Role the controller makes for a cluster with a worker group."""
    owner = Owner(namespace="ray", name="demo", uid="uid-demo-1")
    _, role, _ = agent_identity(owner, ControllerTemplate(), ["ray-demo-cpu"])
    rules: list[Obj] = role.body["rules"]
    return rules


def as_rule(grant: Grant) -> Obj:
    """One grant as an RBAC rule."""
    return {"apiGroups": [grant[0]], "resources": [grant[1]], "verbs": [grant[2]]}


def is_controller_role(rules: Sequence[Obj]) -> bool:
    """Whether ``rules`` grant anything only the controller does (:data:`CONTROLLER_ONLY`)."""
    return any(not missing([as_rule(g)], rules) for g in CONTROLLER_ONLY)


def shipped_controller_roles() -> dict[str, list[Obj]]:
    """Each controller Role or ClusterRole in manifests/ (:func:`is_controller_role`), by file
    and name."""
    out = {}
    for path in sorted((ROOT / "manifests").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in ("Role", "ClusterRole"):
                rules = doc.get("rules") or []
                if is_controller_role(rules):
                    out[f"{path.relative_to(ROOT)}:{doc['metadata']['name']}"] = rules
    return out


def test_the_chart_s_controller_role_grants_what_the_controller_needs(helm: str) -> None:
    """In each of controller.namespaces (and only there): every grant of CONTROLLER_RULES and
    every grant of the agent Role it makes."""
    per_namespace = chart_controller_rules(helm)
    assert sorted(per_namespace) == ["ray", "ray-b"]
    for namespace, rules in per_namespace.items():
        assert missing(CONTROLLER_RULES, rules) == [], namespace
        assert missing(agent_role_rules(), rules) == [], namespace


def test_the_check_catches_a_removed_verb(helm: str) -> None:
    """The rendered Role with rayclusters/status patch gone, or events create gone: named; a
    "*" gives everything."""
    (rules, *_) = chart_controller_rules(helm).values()
    for resource, verb in (("rayclusters/status", "patch"), ("events", "create")):
        cut = copy.deepcopy(rules)
        for rule in cut:
            if resource in rule["resources"]:
                rule["verbs"] = [v for v in rule["verbs"] if v != verb]
        assert [g[1:] for g in missing(CONTROLLER_RULES, cut)] == [(resource, verb)]
    everything = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}
    assert missing(CONTROLLER_RULES, [everything]) == []


def test_a_controller_role_in_manifests_grants_what_the_controller_needs() -> None:
    """Any static controller Role (none ships today) holds CONTROLLER_RULES; the detector knows
    the controller's rules from the agent's, so a copy in manifests/ would be checked."""
    assert is_controller_role(CONTROLLER_RULES)
    assert not is_controller_role(agent_role_rules())
    for where, shipped in shipped_controller_roles().items():
        assert missing(CONTROLLER_RULES, shipped) == [], where
