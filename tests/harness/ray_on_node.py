"""The example Ray clusters as real pods on the test bed's real node: what a user's overlay says.

Both example clusters (``manifests/examples/ray-cluster``, Deployment mode, and
``manifests/kuberay/example``, KubeRay mode) are applied through an overlay, as a user would.
On the real node (:mod:`real_node`) that overlay says, besides the test's timings:

- **images**: the locally built ones (``e2e/images.py``: Ray 2.60 and the product's one image,
  derived from the Dockerfile, whose ``agent`` command is the head's sidecar),
  ``imagePullPolicy: Never`` (no registry here);
- **where**: every Ray pod pinned to the real node (its label as nodeSelector, and the toleration
  of its taint: :func:`real_node.RealNode.pin`); the fake kwok nodes beside it run nothing;
- **addresses**: the bed now runs kube-proxy and CoreDNS (``tests/harness/service_network.py``):
  ClusterIPs route from pods and from the bed's processes, and pods on the bridge resolve
  ``<service>.<namespace>.svc.cluster.local``, so a head on the pod network joined by its
  Service's name works as on a cluster. These overlays keep the layout they had before the bed
  had either: the head runs on the node's network (``hostNetwork``) at the node IP with
  ``--node-ip-address`` given (Ray's own probe of 8.8.8.8 fails at once in the bed's network
  namespace, which has no route out); workers run on the pod bridge, join the head at the node
  IP and announce their pod IP (downward API); the agent reaches the API server at the node's
  loopback (``KUBERNETES_SERVICE_HOST``/``_PORT`` override what the kubelet derives from the
  ``kubernetes`` Service, which has no endpoints: the API server listens on loopback only);
- **size**: the real node has the machine's 2 CPUs, so pods request little; Ray's *logical*
  resources come from ``--num-cpus``/``--num-gpus`` (``rayStartParams`` in KubeRay mode), as the
  example says, and need not exist physically (the gpu group's ``nvidia.com/gpu`` request goes:
  no device plugin here);
- **the test's share**: a ``hostPath`` directory mounted at ``/krs-e2e`` in worker pods, where
  the workload's tasks write which pod runs them and wait for their release file;
- **one Ray start at a time**: every worker container takes the share's ``ray-start.lock`` for
  ``START_SPACING_S`` before its ``ray start`` (:func:`gated_command`, :func:`kuberay_worker_ops`).
  Ray 2.60 gives a new node 30 s to register (``raylet_start_wait_time_s``, a constant in
  ``ray/_private/node.py``), and a worker's start costs about 6.4 CPU-seconds (``ray start``, the
  raylet, the dashboard and runtime-env agents, measured on this machine). In production each pod
  has its own node; here ten start on one 2-CPU node at once, all ten missed the 30 s and, the
  kubelet restarting them together (the bed's 5 s back-off cap), missed it again for four
  minutes (CI, 2026-11-27). The gate spaces the starts as separate nodes would be; both sides of
  the side-by-side benchmark start through it.

The workload's driver (``tests/harness/ray_workload.py``) runs on this machine and reaches the head
through Ray Client (``ray://NODE_IP:10001``), which checks Ray's version and Python's minor
version only: the test's venv and the image both have Ray 2.60.0 and Python 3.11.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from real_node import NODE_IP, NODE_LABEL, NODE_TAINT, skip_reason

GCS_PORT = 6379
GCS_ADDRESS = f"{NODE_IP}:{GCS_PORT}"
CLIENT_ADDRESS = f"ray://{NODE_IP}:10001"
AGENT_PORT = 9400  # the agent's --port in both examples (head on the node's network)
SHARE_MOUNT = "/krs-e2e"
NODE_SELECTOR = {NODE_LABEL[0]: NODE_LABEL[1]}
TOLERATIONS = [{**NODE_TAINT, "operator": "Equal"}]
#: what a Ray worker pod asks of the real node (Ray's logical resources are set apart)
WORKER_RESOURCES = {"requests": {"cpu": "10m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}}
AGENT_RESOURCES = {"requests": {"cpu": "50m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
HEAD_RESOURCES = {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "4Gi"}}

#: the gap between two Ray starts on the real node (see the module's docstring)
START_SPACING_S = 3
START_LOCK = f"{SHARE_MOUNT}/ray-start.lock"
#: the gate itself, run before ``ray start`` in both modes
START_GATE = ["flock", START_LOCK, "sleep", str(START_SPACING_S)]

Op = tuple[str, str, Any]


def load_images(images_json: Path) -> dict[str, str]:
    """``name -> image reference`` from ``e2e/images.py``'s ``images.json``."""
    data = json.loads(images_json.read_text())
    return {name: str(entry["ref"]) for name, entry in data.items()}


def kustomize_images(refs: Mapping[str, str]) -> list[dict[str, str]]:
    """The overlay's ``images:``: the examples' image names to the local images."""

    def split(ref: str) -> dict[str, str]:
        name, _, tag = ref.rpartition(":")
        return {"newName": name, "newTag": tag}

    return [
        {"name": "rayproject/ray", **split(refs["ray"])},
        # the agent sidecar: the product's one image (`keda-ray-scaler agent`, no Ray inside)
        {"name": "ghcr.io/keda-ray-scaler/keda-ray-scaler", **split(refs["keda-ray-scaler"])},
    ]


def patch(ops: list[Op]) -> str:
    """A JSON 6902 patch (kustomize ``patches:``) from ``(op, path, value)`` triples."""
    return yaml.safe_dump(
        [{"op": o, "path": p, **({} if o == "remove" else {"value": v})} for o, p, v in ops]
    )


def privileged_namespace() -> dict[str, Any]:
    """A kustomize ``patches:`` entry: the example's Namespace at Pod Security "privileged".
    The examples enforce "restricted"; the bed's Ray pods run on the node's network and mount
    a hostPath share, which no level below "privileged" admits."""
    ops: list[Op] = [
        ("replace", f"/metadata/labels/pod-security.kubernetes.io~1{mode}", "privileged")
        for mode in ("enforce", "warn", "audit")
    ]
    return {"target": {"kind": "Namespace"}, "patch": patch(ops)}


def env(name: str, value: str | None = None, *, field: str | None = None) -> dict[str, Any]:
    """A container env entry: a value or a downward-API field."""
    if field is not None:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field}}}
    return {"name": name, "value": value}


def pod_ops(spec: str, *, host_network: bool) -> list[Op]:
    """Pin a pod template (``spec`` = the JSON pointer of its ``spec``) to the real node."""
    ops: list[Op] = [
        ("add", f"{spec}/nodeSelector", NODE_SELECTOR),
        ("add", f"{spec}/tolerations", TOLERATIONS),
    ]
    if host_network:
        ops.append(("add", f"{spec}/hostNetwork", True))
    return ops


def container_ops(container: str, resources: Mapping[str, Any]) -> list[Op]:
    """A container of a pod on the real node: local image, small requests."""
    return [
        ("add", f"{container}/imagePullPolicy", "Never"),
        ("replace", f"{container}/resources", dict(resources)),
    ]


def agent_env_ops(container: str, apiserver_port: int) -> list[Op]:
    """The agent sidecar reaches the API server at the node's loopback (the ``kubernetes``
    Service has no endpoints on the bed: the API server listens on loopback only)."""
    return [
        ("add", f"{container}/env/-", env("KUBERNETES_SERVICE_HOST", "127.0.0.1")),
        ("add", f"{container}/env/-", env("KUBERNETES_SERVICE_PORT", str(apiserver_port))),
    ]


SHARE_VOLUME_MOUNT = {"name": "krs-e2e", "mountPath": SHARE_MOUNT}


def share_volume(share: Path) -> dict[str, Any]:
    """The pod volume of the test's share (``share`` on the host)."""
    return {"name": "krs-e2e", "hostPath": {"path": str(share), "type": "Directory"}}


def share_ops(spec: str, container: str, share: Path) -> list[Op]:
    """The test's share: ``share`` on the host at ``SHARE_MOUNT`` in the container (appended to
    the pod's volumes and the container's mounts)."""
    return [
        ("add", f"{spec}/volumes/-", share_volume(share)),
        ("add", f"{container}/volumeMounts/-", SHARE_VOLUME_MOUNT),
    ]


def worker_args(*ray_resources: str) -> list[str]:
    """``ray start`` args of a Deployment-mode worker on the pod bridge."""
    return [
        f"--address={GCS_ADDRESS}",
        "--node-ip-address=$(MY_POD_IP)",
        *ray_resources,
        "--block",
    ]


def gated_command() -> list[str]:
    """A Deployment-mode worker's ``command``: hold :data:`START_LOCK` for
    :data:`START_SPACING_S`, then ``exec`` the container's args (``ray start ...``, PID 1 as
    without the gate)."""
    return ["sh", "-c", f'{shlex.join(START_GATE)} && exec "$@"', "gate"]


def kuberay_worker_ops(group: str, share: Path) -> list[Op]:
    """A KubeRay worker group (``group``: the JSON pointer of its ``workerGroupSpecs`` entry) on
    the real node: pinned, joining the head at the node IP, announcing its pod IP, the share
    mounted, and its start gated (KubeRay runs the container's own command before the ``ray
    start`` it generates: ``<command> && ulimit -n 65536; ray start ...``, ``BuildPod``)."""
    pod = f"{group}/template/spec"
    worker = f"{pod}/containers/0"
    return [
        *pod_ops(pod, host_network=False),
        ("add", f"{group}/rayStartParams/address", GCS_ADDRESS),
        # KubeRay runs ray start through bash -c: the variable expands there
        ("add", f"{group}/rayStartParams/node-ip-address", "$MY_POD_IP"),
        *container_ops(worker, WORKER_RESOURCES),
        ("add", f"{worker}/command", START_GATE),
        (
            "add",
            f"{worker}/env",
            [env("MY_POD_IP", field="status.podIP"), env("RAY_ADDRESS", GCS_ADDRESS)],
        ),
        ("add", f"{pod}/volumes", [share_volume(share)]),
        ("add", f"{worker}/volumeMounts", [SHARE_VOLUME_MOUNT]),
    ]


def make_share(path: Path) -> Path:
    """The share directory, writable by the image's non-root user (mode 1777, like /tmp)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o1777)
    return path


def require_bed() -> None:
    """Skip (one line) unless a real node can run here (root, in the bed's network namespace)."""
    import pytest

    reason = skip_reason()
    if reason:
        pytest.skip(reason)
