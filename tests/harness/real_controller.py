"""The controller as a user runs it, against a real API server: ``keda-ray-scaler controller`` in
a process of its own (stopped by its PID), as a user that holds only :data:`CONTROLLER_RULES`,
bound in each namespace it serves; its /metrics read back; its objects and events listed.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import requests
from control_plane import ControlPlane, Process, spawn, wait_until
from prometheus_client.parser import text_string_to_metric_families

from keda_ray_scaler.demo.raylets import free_port

CONTROLLER_USER = "keda-ray-scaler-controller"
MANAGED = "app.kubernetes.io/managed-by=keda-ray-scaler-controller"
KINDS = "rayworkergroups,scaledobjects,serviceaccounts,roles,rolebindings"

#: What the controller calls, and what it must hold to grant the agent's Role (RBAC lets a user
#: create a Role, or bind one, only with every permission in it: no escalate, no bind).
CONTROLLER_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["keda-ray-scaler.io"],
        "resources": ["rayworkergroups"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    },
    {
        "apiGroups": ["keda.sh"],
        "resources": ["scaledobjects"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    },
    {
        "apiGroups": [""],
        "resources": ["serviceaccounts"],
        "verbs": ["get", "list", "create", "patch", "delete"],
    },
    {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["roles", "rolebindings"],
        "verbs": ["get", "list", "create", "patch", "delete"],
    },
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    # blockOwnerDeletion on what it owns (admission plugin OwnerReferencesPermissionEnforcement)
    {"apiGroups": ["ray.io"], "resources": ["rayclusters/finalizers"], "verbs": ["update"]},
    # its condition keda-ray-scaler.io/Autoscaled, by server-side apply of the status
    {"apiGroups": ["ray.io"], "resources": ["rayclusters/status"], "verbs": ["patch"]},
    # held only to grant them to the agent's Role
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["patch"]},
    {
        "apiGroups": ["keda-ray-scaler.io"],
        "resources": ["rayworkergroups/status"],
        "verbs": ["patch"],
    },
]


def grant(cp: ControlPlane, namespace: str) -> None:
    """The controller's ClusterRole (made once) bound to its user in ``namespace``."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": CONTROLLER_USER},
        "rules": CONTROLLER_RULES,
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": CONTROLLER_USER, "namespace": namespace},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": CONTROLLER_USER,
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": CONTROLLER_USER}
        ],
    }
    cp.apply_docs([role, binding])


@dataclass
class RunningController:
    """One ``keda-ray-scaler controller`` process and its /metrics port."""

    process: Process
    metrics_port: int

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample of /metrics, by name and sorted labels."""
        text = requests.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).text
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def total(self, name: str, **labels: str) -> float:
        """The sum of ``name``'s samples whose labels include ``labels``."""
        return sum(
            value
            for (sample, have), value in self.samples().items()
            if sample == name and set(labels.items()) <= set(have)
        )

    def rounds(self) -> float:
        """Rounds done, whatever their outcome."""
        return self.total("ray_scaler_controller_rounds_total")

    def writes(self) -> float:
        """Objects written."""
        return self.total("ray_scaler_controller_writes_total")


@contextlib.contextmanager
def controller(
    cp: ControlPlane, namespaces: Sequence[str], *, name: str, resync_s: float = 2.0
) -> Iterator[RunningController]:
    """``keda-ray-scaler controller`` serving ``namespaces`` as :data:`CONTROLLER_USER`, until
    the block ends (SIGTERM by PID)."""
    port = free_port()
    kubeconfig = cp.user_kubeconfig(CONTROLLER_USER)
    args = [
        sys.executable,
        "-m",
        "keda_ray_scaler",
        "controller",
        f"--kubeconfig={kubeconfig}",
        *(f"--namespace={n}" for n in namespaces),
        f"--resync={resync_s:g}",
        f"--metrics-port={port}",
        f"--instance={name}",
        "--log-format=console",
    ]
    process = spawn(name, args, cp.workdir / "logs")
    running = RunningController(process, port)
    try:
        wait_until(
            lambda: running.samples() is not None,
            timeout_s=60,
            what=f"{name}'s /metrics",
            alive=[process],
        )
        yield running
    finally:
        process.stop()


def ours(
    cp: ControlPlane, namespace: str, cluster: str | None = None
) -> dict[tuple[str, str], Any]:
    """The objects the controller made in ``namespace`` (for ``cluster``), by (kind, name)."""
    selector = MANAGED + ("" if cluster is None else f",keda-ray-scaler.io/cluster={cluster}")
    items = cp.get_json(KINDS, "-n", namespace, "-l", selector)["items"]
    return {(o["kind"], o["metadata"]["name"]): o for o in items}


def events(cp: ControlPlane, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
    """The events of ``reason`` on RayCluster ``name``."""
    items = cp.get_json(
        "events", "-n", namespace, f"--field-selector=involvedObject.name={name},reason={reason}"
    )["items"]
    return [e for e in items if e["involvedObject"]["kind"] == "RayCluster"]
