"""Whose pod is it: a pod matching the worker selector is the cluster's worker only when its
controller is the workload the mode expects.

Labels are anybody's to set: a pod labelled ``ray.io/cluster=<c>``, ``ray.io/group=<g>`` by
whoever may create pods in the namespace was taken for a worker, and stalled the applier (KubeRay
mode: more pods than ``replicas``, so it waited for KubeRay for ever) or the scale-down
(Deployment mode: pods of two owners read as a rollout). The controlling ``ownerReference``
(``controller: true``) is set by the controller that made the pod:

- KubeRay mode (:func:`raycluster_owner`): the RayCluster (``ray.io``) of the agent's name, and
  its uid once the agent knows it (the RayCluster watch, :meth:`PodCache.expect_owner_uid
  <keda_ray_scaler.agent.kube.pod_cache.PodCache.expect_owner_uid>`);
- Deployment mode (:data:`DEPLOYMENT_OWNER`): a ReplicaSet (``apps``) that a Deployment made, named
  ``<deployment>-<pod-template-hash>`` with the pod's ``pod-template-hash`` label (the agent
  is not told the Deployments' names).

:func:`refusal` decides; the pod cache applies it
(:class:`~keda_ray_scaler.agent.kube.worker_screen.WorkerScreen`: each refused pod counted and
logged once). Pure, and light: the settings (:mod:`~keda_ray_scaler.agent.kube.kube_settings`)
hold a rule without the metrics client.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

#: The label the Deployment controller puts on a ReplicaSet's pods; the ReplicaSet's name ends
#: in its value.
TEMPLATE_HASH_LABEL: Final = "pod-template-hash"


@dataclass(frozen=True, slots=True)
class PodController:
    """A pod's controlling ``ownerReference`` as read, and its ``pod-template-hash`` label."""

    api_version: str
    kind: str
    name: str
    uid: str
    template_hash: str = ""

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True, slots=True)
class WorkerOwner:
    """What must control a worker pod: ``kind`` of the API group ``api_group``, called ``name``
    ("": any ReplicaSet a Deployment made, module doc), of uid ``uid`` ("": not known yet)."""

    kind: str
    api_group: str
    name: str = ""
    uid: str = ""

    def __str__(self) -> str:
        return f"{self.kind}/{self.name or '<deployment>-<pod-template-hash>'}"


#: Deployment mode's workers: pods of a Deployment's ReplicaSet.
DEPLOYMENT_OWNER: Final = WorkerOwner("ReplicaSet", "apps")


def raycluster_owner(cluster: str, uid: str = "") -> WorkerOwner:
    """KubeRay mode's workers: pods of the RayCluster ``cluster`` (of ``uid`` when known)."""
    return WorkerOwner("RayCluster", "ray.io", cluster, uid)


class OwnerRefusal(enum.StrEnum):
    """Why a pod matching the worker selector is not the cluster's worker (a metric label)."""

    NO_CONTROLLER = "no_controller"  # no ownerReference with controller: true
    WRONG_KIND = "wrong_kind"  # controlled by another kind (or API group)
    WRONG_NAME = "wrong_name"  # another RayCluster; a ReplicaSet no Deployment named
    WRONG_UID = "wrong_uid"  # the RayCluster's name, another object's uid


def controller_of(raw: Mapping[str, Any]) -> PodController | None:
    """The controlling ``ownerReference`` of a pod as the API serves it, or None."""
    meta = raw.get("metadata") or {}
    template_hash = str((meta.get("labels") or {}).get(TEMPLATE_HASH_LABEL) or "")
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller") is True:
            return PodController(
                api_version=str(ref.get("apiVersion") or ""),
                kind=str(ref.get("kind") or ""),
                name=str(ref.get("name") or ""),
                uid=str(ref.get("uid") or ""),
                template_hash=template_hash,
            )
    return None


def refusal(controller: PodController | None, owner: WorkerOwner) -> OwnerRefusal | None:
    """None when ``controller`` is what ``owner`` asks, else why not. Pure."""
    if controller is None:
        return OwnerRefusal.NO_CONTROLLER
    group = controller.api_version.rpartition("/")[0]
    if controller.kind != owner.kind or group != owner.api_group:
        return OwnerRefusal.WRONG_KIND
    if owner.name:
        named = controller.name == owner.name
    else:  # a Deployment's ReplicaSet: <deployment>-<pod-template-hash>
        suffix = controller.template_hash
        named = bool(suffix) and controller.name.endswith(f"-{suffix}")
    if not named:
        return OwnerRefusal.WRONG_NAME
    if owner.uid and controller.uid != owner.uid:
        return OwnerRefusal.WRONG_UID
    return None
