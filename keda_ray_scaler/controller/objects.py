"""The objects the controller makes for one RayCluster, as the API takes them; pure builders.

Each is the hand-written example's (``manifests/kuberay/example``: ``rayworkergroups.yaml``,
``scaledobjects.yaml``, ``agent-rbac.yaml``) with three marks of ownership: an owner reference
to the RayCluster (controller, blocking its deletion, so the objects go with it), the label
``app.kubernetes.io/managed-by: keda-ray-scaler-controller`` and the label naming the cluster
(:data:`CLUSTER_LABEL`; per-group objects also :data:`GROUP_LABEL`). Names are DNS-1123 labels
of at most 63 characters (a ScaledObject's name is a label value of its HPA): a longer one keeps
its first 54 characters and a hash of the whole (:func:`bounded_name`), the same every time.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from keda_ray_scaler.controller.template import ControllerTemplate

MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "keda-ray-scaler-controller"
#: the RayCluster an object was made for (the adapter's selector, with managed-by)
CLUSTER_LABEL: Final = "keda-ray-scaler.io/cluster"
#: the worker group a RayWorkerGroup or ScaledObject was made for
GROUP_LABEL: Final = "keda-ray-scaler.io/worker-group"
#: the labels the hand-written example sets (kept, so selectors written for it still match)
RAY_CLUSTER_LABEL: Final = "ray.io/cluster"
RAY_GROUP_LABEL: Final = "ray.io/group"
#: a DNS-1123 label's length, and a label value's
NAME_LIMIT: Final = 63
_HASH_CHARS: Final = 8


class Kind(enum.Enum):
    """A kind of object the controller makes: its ``apiVersion`` and ``kind``."""

    SERVICE_ACCOUNT = ("v1", "ServiceAccount")
    ROLE = ("rbac.authorization.k8s.io/v1", "Role")
    ROLE_BINDING = ("rbac.authorization.k8s.io/v1", "RoleBinding")
    RAY_WORKER_GROUP = ("keda-ray-scaler.io/v1alpha1", "RayWorkerGroup")
    SCALED_OBJECT = ("keda.sh/v1alpha1", "ScaledObject")

    @property
    def api_version(self) -> str:
        return self.value[0]

    @property
    def kind(self) -> str:
        return self.value[1]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Kind | None:
        """The kind of an object read from the API (by API group and kind; any version)."""
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        for kind in cls:
            if kind.kind == obj.get("kind") and kind.api_version.rpartition("/")[0] == group:
                return kind
        return None


@dataclass(frozen=True, slots=True)
class Owner:
    """The RayCluster that owns the objects: namespace, name and uid."""

    namespace: str
    name: str
    uid: str

    def reference(self) -> dict[str, Any]:
        """The owner reference every object carries."""
        return {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object to make: its kind, name, worker group (None: the agent's identity) and body
    (not to be changed once built)."""

    kind: Kind
    name: str
    group: str | None
    body: Mapping[str, Any]


def bounded_name(full: str) -> str:
    """``full`` when it fits :data:`NAME_LIMIT`; else its first characters, ``-`` and the first
    8 hex digits of its SHA-256 (stable; two long names differ in the hash)."""
    if len(full) <= NAME_LIMIT:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:_HASH_CHARS]
    return f"{full[: NAME_LIMIT - _HASH_CHARS - 1].rstrip('-')}-{digest}"


def group_object_name(cluster: str, group: str) -> str:
    """The name of a group's RayWorkerGroup and ScaledObject: ``ray-<cluster>-<group>``."""
    return bounded_name(f"ray-{cluster}-{group}")


def _manifest(owner: Owner, kind: Kind, name: str, group: str | None, **fields: Any) -> Manifest:
    labels = {
        MANAGED_BY_LABEL: MANAGED_BY,
        CLUSTER_LABEL: owner.name,
        RAY_CLUSTER_LABEL: owner.name,
    }
    if group is not None:
        labels |= {GROUP_LABEL: group, RAY_GROUP_LABEL: group}
    metadata = {
        "name": name,
        "namespace": owner.namespace,
        "labels": labels,
        "ownerReferences": [owner.reference()],
    }
    body = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata, **fields}
    return Manifest(kind, name, group, body)


def worker_group(owner: Owner, group: str) -> Manifest:
    """The RayWorkerGroup of ``group``: KEDA's scale target (``spec.replicas`` is the HPA's)."""
    name = group_object_name(owner.name, group)
    spec = {"rayCluster": owner.name, "groupName": group}
    return _manifest(owner, Kind.RAY_WORKER_GROUP, name, group, spec=spec)


def scaled_object(
    owner: Owner, group: str, bounds: tuple[int, int], template: ControllerTemplate
) -> Manifest:
    """The ScaledObject of ``group``, bounded by the group's (minReplicas, maxReplicas).

    No ``fallback``: without one, an UNAVAILABLE answer holds the replicas there are (the HPA
    cannot read its metric, KEDA's executor reports ``TriggerError`` and scales nothing), at
    zero too; with one, KEDA 2.19+ counts a fallback as active and starts a pod in a group at
    zero, whatever its ``behavior`` (docs/design/keda-fallback.md)."""
    name = group_object_name(owner.name, group)
    low, high = bounds
    trigger: dict[str, Any] = {
        "type": template.trigger_type.value,
        "metricType": template.metric_type.value,
        "metadata": {
            "scalerAddress": template.scaler_address,
            "rayCluster": owner.name,
            "workerGroup": group,
        },
    }
    if template.trigger_authentication is not None:
        trigger["authenticationRef"] = {
            "name": template.trigger_authentication,
            "kind": "ClusterTriggerAuthentication",
        }
    spec: dict[str, Any] = {
        "scaleTargetRef": {
            "apiVersion": Kind.RAY_WORKER_GROUP.api_version,
            "kind": Kind.RAY_WORKER_GROUP.kind,
            "name": name,
        },
        "minReplicaCount": low,
        "maxReplicaCount": high,
        "pollingInterval": template.polling_interval_s,
        "cooldownPeriod": template.cooldown_period_s,
        "triggers": [trigger],
    }
    if template.behavior is not None:
        behavior = template.behavior.body(high)
        spec["advanced"] = {"horizontalPodAutoscalerConfig": {"behavior": behavior}}
    return _manifest(owner, Kind.SCALED_OBJECT, name, group, spec=spec)


def agent_identity(
    owner: Owner, template: ControllerTemplate, worker_groups: Sequence[str]
) -> tuple[Manifest, Manifest, Manifest]:
    """The agent's ServiceAccount, Role and RoleBinding (one name): what the chart's agent Role
    grants in KubeRay mode, narrowed to this cluster and its RayWorkerGroups ``worker_groups``
    (names; the status rule is left out when there is none)."""
    name = bounded_name(template.service_account(owner.name))
    account = _manifest(owner, Kind.SERVICE_ACCOUNT, name, None, automountServiceAccountToken=False)
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["ray.io"],
            "resources": ["rayclusters"],
            "resourceNames": [owner.name],
            "verbs": ["get", "list", "watch", "patch"],
        },
        {
            "apiGroups": ["keda-ray-scaler.io"],
            "resources": ["rayworkergroups"],
            "verbs": ["list", "watch"],
        },
        {"apiGroups": ["keda.sh"], "resources": ["scaledobjects"], "verbs": ["list", "watch"]},
    ]
    if worker_groups:  # an empty resourceNames would grant every name: no rule instead
        status = {
            "apiGroups": ["keda-ray-scaler.io"],
            "resources": ["rayworkergroups/status"],
            "resourceNames": list(worker_groups),
            "verbs": ["patch"],
        }
        rules.insert(3, status)
    role = _manifest(owner, Kind.ROLE, name, None, rules=rules)
    binding = _manifest(
        owner,
        Kind.ROLE_BINDING,
        name,
        None,
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        subjects=[{"kind": "ServiceAccount", "name": name, "namespace": owner.namespace}],
    )
    return account, role, binding
