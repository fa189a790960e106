"""The agent sidecar an opted-in RayCluster's head gets at admission. Pure.

The mutating webhook (on RayCluster CREATE and UPDATE) hands the RayCluster here with the chart's
sidecar fragment (``agent.sidecar``: a pod template holding the ``agent`` container, its volumes,
the head's labels and annotations; the same for every cluster: the agent learns its cluster from
its own pod's ``ray.io/cluster`` label through the downward API, not from a flag naming it). What
differs per cluster is filled in here: the head's ServiceAccount (the agent's, which the
controller makes: :func:`~keda_ray_scaler.controller.objects.agent_identity`) and, for a cluster
with Ray token authentication, the agent's ``RAY_AUTH_TOKEN`` from the Secret KubeRay makes
(named after the cluster, key ``auth_token``).

:func:`inject` merges the fragment into ``spec.headGroupSpec.template``: labels and annotations
by key, containers and volumes by name (the fragment's replace the head's of the same name),
``serviceAccountName`` and ``automountServiceAccountToken: false`` set. It is idempotent: a
template that already holds exactly that gives no patch, so a RayCluster the webhook mutated
before (or that KubeRay's RayService controller rewrote from its own spec, dropping the sidecar:
``modifyRayCluster`` replaces the whole spec) converges in one admission and never loops. The
result is one JSON Patch (RFC 6902) operation on the head template, or none.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from keda_ray_scaler.controller.objects import bounded_name
from keda_ray_scaler.controller.optin import OptIn, Refusal, read_cluster
from keda_ray_scaler.controller.template import ControllerTemplate

#: The agent's container name in the fragment and in every head.
AGENT_CONTAINER: Final = "agent"
#: Where the patch writes.
HEAD_TEMPLATE_PATH: Final = "/spec/headGroupSpec/template"
#: KubeRay's Ray token Secret key (``authOptions.mode: token``; the Secret is the cluster's name).
AUTH_TOKEN_KEY: Final = "auth_token"


class Skip(enum.Enum):
    """Why a RayCluster is admitted unchanged."""

    #: no opt-in annotation (or it says disabled)
    NOT_OPTED_IN = "not_opted_in"
    #: already holds exactly the sidecar
    UP_TO_DATE = "up_to_date"


@dataclass(frozen=True, slots=True)
class Injection:
    """The JSON Patch that gives the head its sidecar (one operation)."""

    patch: tuple[Mapping[str, Any], ...]


#: What admission does with one RayCluster: patch it, leave it (and why), or refuse to inject
#: (a malformed opt-in, in-tree autoscaling on): admitted unchanged, the refusal is the
#: controller's to report.
Admission = Injection | Skip | Refusal


def inject(
    cluster: Mapping[str, Any], fragment: Mapping[str, Any], template: ControllerTemplate
) -> Admission:
    """What admission does with ``cluster`` (a RayCluster as the API server sends it)."""
    read = read_cluster(cluster)
    if isinstance(read, Refusal):
        return read
    if not isinstance(read, OptIn):
        return Skip.NOT_OPTED_IN
    spec = cluster.get("spec") or {}
    head = spec.get("headGroupSpec") if isinstance(spec, Mapping) else None
    current = head.get("template") if isinstance(head, Mapping) else None
    if not isinstance(current, Mapping):
        current = {}
    name = str((cluster.get("metadata") or {}).get("name", ""))
    wanted = merged(
        current, fragment, bounded_name(template.service_account(name)), _token(spec, name)
    )
    if wanted == current:
        return Skip.UP_TO_DATE
    op = "replace" if isinstance(head, Mapping) and "template" in head else "add"
    return Injection(({"op": op, "path": HEAD_TEMPLATE_PATH, "value": wanted},))


def merged(
    current: Mapping[str, Any],
    fragment: Mapping[str, Any],
    service_account: str,
    token_secret: str | None,
) -> dict[str, Any]:
    """``current`` (a pod template) with ``fragment`` merged in (module docstring); new objects,
    the inputs untouched."""
    out = copy.deepcopy(dict(current))
    meta = out.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        added = (fragment.get("metadata") or {}).get(key) or {}
        if added:
            meta[key] = {**(meta.get(key) or {}), **added}
    pod = out.setdefault("spec", {})
    wanted = fragment.get("spec") or {}
    for key in ("containers", "volumes"):
        pod[key] = _by_name(pod.get(key) or [], _with_token(wanted.get(key) or [], token_secret))
    pod["serviceAccountName"] = service_account
    pod["automountServiceAccountToken"] = False
    return out


def _by_name(have: Sequence[Mapping[str, Any]], add: Sequence[Mapping[str, Any]]) -> list[Any]:
    """``have`` with each of ``add`` replacing the entry of its name in place, or appended."""
    out = [copy.deepcopy(dict(item)) for item in have]
    names = [item.get("name") for item in out]
    for item in add:
        entry = copy.deepcopy(dict(item))
        if entry.get("name") in names:
            out[names.index(entry.get("name"))] = entry
        else:
            out.append(entry)
            names.append(entry.get("name"))
    return out


def _token(spec: Mapping[str, Any], cluster: str) -> str | None:
    """The Secret holding the cluster's Ray token when it uses token authentication."""
    auth = spec.get("authOptions") if isinstance(spec, Mapping) else None
    mode = auth.get("mode") if isinstance(auth, Mapping) else None
    return cluster if mode == "token" else None


def _with_token(items: Sequence[Mapping[str, Any]], secret: str | None) -> list[Any]:
    """``items`` with the agent container's ``RAY_AUTH_MODE``/``RAY_AUTH_TOKEN`` set from
    ``secret`` (none of either without one)."""
    out = []
    for item in items:
        entry = copy.deepcopy(dict(item))
        if entry.get("name") == AGENT_CONTAINER and "image" in entry:
            env = [e for e in entry.get("env") or [] if e.get("name") not in _TOKEN_ENV]
            if secret is not None:
                env += [
                    {"name": "RAY_AUTH_MODE", "value": "token"},
                    {
                        "name": "RAY_AUTH_TOKEN",
                        "valueFrom": {"secretKeyRef": {"name": secret, "key": AUTH_TOKEN_KEY}},
                    },
                ]
            entry["env"] = env
        out.append(entry)
    return out


_TOKEN_ENV: Final = frozenset({"RAY_AUTH_MODE", "RAY_AUTH_TOKEN"})
