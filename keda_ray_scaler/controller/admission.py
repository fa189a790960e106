"""One AdmissionReview (``admission.k8s.io/v1``) in, its answer out: the webhook's logic. Pure.

The API server sends a RayCluster's CREATE or UPDATE; :func:`review` parses the body at the door
(size, JSON, the fields it needs; anything else a :class:`BadReview` naming what is wrong, which
the server answers ``400``), asks :func:`~keda_ray_scaler.controller.sidecar.inject` and answers:

- an :class:`~keda_ray_scaler.controller.sidecar.Injection`: allowed, with its JSON Patch;
- a skip: allowed, unchanged;
- on an UPDATE by anyone but the cluster's agent, each worker group's ``replicas`` and
  ``workersToDelete`` put back as they were (:mod:`~keda_ray_scaler.controller.counts`), beside
  the injection or alone, with a warning per group;
- a refused opt-in (malformed annotation, in-tree autoscaling): allowed unchanged, with an
  admission warning naming the field, which ``kubectl apply`` prints to whoever wrote it (the
  controller records the same as an event). Never denied: refusing to autoscale a cluster is no
  reason to refuse the cluster.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from keda_ray_scaler.controller.counts import KeptCounts, agent_user, kept_counts
from keda_ray_scaler.controller.objects import bounded_name
from keda_ray_scaler.controller.optin import Refusal
from keda_ray_scaler.controller.sidecar import Injection, Skip, inject
from keda_ray_scaler.controller.template import ControllerTemplate

#: The largest review body read (a RayCluster is well under 1.5 MiB, etcd's object limit).
MAX_BODY_BYTES: Final = 3 * 1024 * 1024
API_VERSION: Final = "admission.k8s.io/v1"


class BadReview(ValueError):
    """A body that is no AdmissionReview of a RayCluster; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Answer:
    """The AdmissionReview to send back and what was decided (a metric label)."""

    body: Mapping[str, Any]
    outcome: str


def review(body: bytes, fragment: Mapping[str, Any], template: ControllerTemplate) -> Answer:
    """The answer to one AdmissionReview ``body``; raises :class:`BadReview`."""
    request = _request(body)
    response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
    decision = inject(request["object"], fragment, template)
    if isinstance(decision, Refusal):
        response["warnings"] = [f"keda-ray-scaler: not autoscaled: {decision.message}"]
        return _answer(response, "refused")
    if decision is Skip.NOT_OPTED_IN:
        return _answer(response, decision.value)
    kept = _kept(request, template)
    ops = [*(decision.patch if isinstance(decision, Injection) else ()), *kept.patch]
    if ops:
        patch = json.dumps(ops, separators=(",", ":")).encode()
        response |= {"patchType": "JSONPatch", "patch": base64.b64encode(patch).decode()}
    if kept.warnings:
        response["warnings"] = list(kept.warnings)
    if isinstance(decision, Injection):
        return _answer(response, "injected")
    return _answer(response, "counts_kept" if kept.patch else decision.value)


def _answer(response: dict[str, Any], outcome: str) -> Answer:
    return Answer(
        {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}, outcome
    )


def _kept(request: Mapping[str, Any], template: ControllerTemplate) -> KeptCounts:
    """The agent's count fields put back on an UPDATE by anyone but the cluster's agent."""
    new = request["object"]
    old = request.get("oldObject")
    meta = new.get("metadata") or {}
    namespace = str(request.get("namespace") or meta.get("namespace") or "")
    agent = agent_user(namespace, bounded_name(template.service_account(str(meta.get("name")))))
    writer = str((request.get("userInfo") or {}).get("username") or "")
    return kept_counts(new, old if isinstance(old, Mapping) else None, writer, agent)


def _request(body: bytes) -> Mapping[str, Any]:
    if len(body) > MAX_BODY_BYTES:
        raise BadReview(f"body of {len(body)} bytes is over {MAX_BODY_BYTES}")
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadReview(f"body is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "AdmissionReview":
        raise BadReview("body is not an AdmissionReview")
    if doc.get("apiVersion") != API_VERSION:
        raise BadReview(f"apiVersion {str(doc.get('apiVersion'))[:40]!r} is not {API_VERSION}")
    request = doc.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise BadReview("request.uid is missing")
    obj = request.get("object")
    if not isinstance(obj, dict) or obj.get("kind") != "RayCluster":
        raise BadReview("request.object is not a RayCluster")
    return request
