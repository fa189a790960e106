"""Each side's Ray cluster on the shared bed: ``manifests/kuberay/example`` through an overlay.

Both sides apply the same example RayCluster ``demo`` with what the real node needs
(``tests/harness/ray_on_node.py``: local images, the head on the node's network at the node IP with
GCS
port 6379, workers on the pod bridge joining it by address, small requests with Ray's logical
resources from ``rayStartParams``) and the profile's ``idleTimeoutSeconds`` (read by both
autoscalers). The workload says which worker groups exist (``cpu``; ``gpu`` too for the mix).

- **ours**: the example as it ships (agent sidecar, RayWorkerGroups, ScaledObjects,
  NetworkPolicy), the scaler's address (the bed has no kube-proxy) and the profile's timings on
  the agent and the ScaledObjects (none at production settings);
- **ray**: the same RayCluster with ``enableInTreeAutoscaling: true`` and
  ``autoscalerOptions.version: v2``: KubeRay 1.5.1 adds Ray 2.60's autoscaler, unmodified, as
  the head's sidecar (``ray kuberay-autoscaler``) with the ServiceAccount, Role and RoleBinding
  it makes. The sidecar reaches the API server through ``KUBERNETES_SERVICE_HOST`` /
  ``KUBERNETES_SERVICE_PORT_HTTPS`` (no kube-proxy here); the agent, its ServiceAccount and
  volumes go; the RayWorkerGroups, ScaledObjects and NetworkPolicy are left out.
  ``AUTOSCALER_UPDATE_INTERVAL_S`` is set only in the fast profile.

:func:`cluster` applies one side, waits until its autoscaler runs, and deletes everything of
the cluster again on exit (waiting until its pods, Secret and ServiceAccount are gone: KubeRay
never re-creates a running head, so each run needs a fresh cluster).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

from bench.vs_ray_bed import Bed
from bench.vs_ray_profile import Profile

# the tests' modules are on sys.path once bench.vs_ray_bed is imported
from ray_on_node import (  # isort: skip
    AGENT_PORT,
    AGENT_RESOURCES,
    HEAD_RESOURCES,
    NODE_IP,
    Op,
    agent_env_ops,
    container_ops,
    env,
    kuberay_worker_ops,
    kustomize_images,
    patch,
    pod_ops,
    privileged_namespace,
)
from real_kuberay import CLUSTER, EXAMPLE, RC, RWG  # isort: skip
from real_loop import (  # isort: skip
    NAMESPACE,
    Docs,
    SCALER_ADDRESS,
    apply_overlay,
    read_ray_token,
    wait_until,
)

OURS, RAY = "ours", "ray"
HEAD = "/spec/headGroupSpec"
HEAD_POD = f"{HEAD}/template/spec"
AGENT = f"{HEAD_POD}/containers/1"
AUTOSCALER = "autoscaler"  # KubeRay's name for Ray's sidecar
#: Ray's resources of each worker group on the real node (rayStartParams)
RAY_RESOURCES = {"cpu": {"num-cpus": "10"}, "gpu": {"num-cpus": "8", "num-gpus": "1"}}
GROUP_INDEX = {"cpu": 0, "gpu": 1}  # in the example's workerGroupSpecs


@dataclass(frozen=True)
class Cluster:
    """One side's running cluster."""

    side: str
    groups: tuple[str, ...]
    head_pod: str
    ray_token: str
    applied_at: float  # time.time()
    ready_s: float  # apply to its autoscaler running


def _group_ops(group: str, share: Path, profile: Profile) -> list[Op]:
    """A worker group on the real node (as ``real_kuberay._overlay`` has the cpu group)."""
    base = f"/spec/workerGroupSpecs/{GROUP_INDEX[group]}"
    ops: list[Op] = [
        *kuberay_worker_ops(base, share),
        *[("add", f"{base}/rayStartParams/{k}", v) for k, v in RAY_RESOURCES[group].items()],
    ]
    if profile.idle_s is not None:
        ops.append(("replace", f"{base}/idleTimeoutSeconds", profile.idle_s))
    return ops


def _head_ops() -> list[Op]:
    return [
        *pod_ops(HEAD_POD, host_network=True),
        ("add", f"{HEAD}/rayStartParams/node-ip-address", NODE_IP),
        *container_ops(f"{HEAD_POD}/containers/0", HEAD_RESOURCES),
    ]


def _agent_ops(profile: Profile, apiserver_port: int) -> list[Op]:
    """Our sidecar: the bed's requests and API server address, the profile's timings."""
    ops: list[Op] = [
        *container_ops(AGENT, AGENT_RESOURCES),
        *agent_env_ops(AGENT, apiserver_port),
    ]
    if profile.agent_interval_s is not None:
        ops.append(("add", f"{AGENT}/args/-", f"--interval={profile.agent_interval_s:g}"))
    if profile.settle_s is not None:
        ops.append(("add", f"{AGENT}/args/-", f"--settle-delay={profile.settle_s:g}"))
    return ops


def autoscaler_options(profile: Profile, apiserver_port: int) -> dict[str, Any]:
    """``spec.autoscalerOptions`` of Ray's side: v2, Ray's defaults, the API server's address."""
    variables = [
        env("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
        env("KUBERNETES_SERVICE_PORT_HTTPS", str(apiserver_port)),
        env("KUBERNETES_SERVICE_PORT", str(apiserver_port)),
    ]
    if profile.ray_loop_s is not None:
        variables.append(env("AUTOSCALER_UPDATE_INTERVAL_S", str(profile.ray_loop_s)))
    return {
        "version": "v2",
        "upscalingMode": "Default",
        "imagePullPolicy": "Never",  # the image is the head's (the local Ray 2.60 image)
        "env": variables,
    }


def _ray_ops(profile: Profile, apiserver_port: int) -> list[Op]:
    """Ray's own autoscaler on, the agent and its ServiceAccount and volumes out."""
    return [
        ("replace", "/spec/enableInTreeAutoscaling", True),
        ("add", "/spec/autoscalerOptions", autoscaler_options(profile, apiserver_port)),
        ("remove", AGENT, None),
        ("remove", f"{HEAD_POD}/serviceAccountName", None),  # KubeRay's own SA "demo"
        ("remove", f"{HEAD_POD}/automountServiceAccountToken", None),
        ("remove", f"{HEAD_POD}/volumes", None),  # the agent's tmp and token volumes
    ]


def _scaled_object_ops(profile: Profile) -> list[Op]:
    """The scaler's address; the profile's timings (none at production settings)."""
    spec = "/spec"
    down = f"{spec}/advanced/horizontalPodAutoscalerConfig/behavior/scaleDown"
    ops: list[Op] = [("replace", f"{spec}/triggers/0/metadata/scalerAddress", SCALER_ADDRESS)]
    if profile.polling_s is not None:
        ops.append(("replace", f"{spec}/pollingInterval", profile.polling_s))
    if profile.cooldown_s is not None:
        ops.append(("replace", f"{spec}/cooldownPeriod", profile.cooldown_s))
    if profile.down_window_s is not None:
        ops.append(("replace", f"{down}/stabilizationWindowSeconds", profile.down_window_s))
    return ops


def write_overlay(bed: Bed, side: str, groups: tuple[str, ...], directory: Path) -> Path:
    """The side's kustomize overlay of the example in ``directory``."""
    directory.mkdir(parents=True)
    ops = _head_ops()
    for group in groups:
        ops += _group_ops(group, bed.share, bed.profile)
    if side == OURS:
        ops += _agent_ops(bed.profile, bed.cp.apiserver_port)
    else:
        ops += _ray_ops(bed.profile, bed.cp.apiserver_port)
    # groups left out go last (removing one shifts the indexes after it)
    for group in sorted(set(GROUP_INDEX) - set(groups), key=GROUP_INDEX.__getitem__, reverse=True):
        ops.append(("remove", f"/spec/workerGroupSpecs/{GROUP_INDEX[group]}", None))
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(EXAMPLE, directory)],
        "images": kustomize_images(bed.images),
        "patches": [
            {"target": {"kind": "ScaledObject"}, "patch": patch(_scaled_object_ops(bed.profile))},
            {"target": {"kind": "RayCluster"}, "patch": patch(ops)},
            privileged_namespace(),
        ],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return directory


def keep_docs(side: str, groups: tuple[str, ...]) -> Any:
    """The overlay's objects a side applies: Ray's keeps the Namespace and the RayCluster only;
    ours drops the RayWorkerGroup and ScaledObject of a group the workload leaves out."""

    def keep(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if side == RAY:
            return [d for d in docs if d["kind"] in ("Namespace", "RayCluster")]
        left_out = {f"ray-demo-{g}" for g in set(GROUP_INDEX) - set(groups)}
        return [d for d in docs if d["metadata"]["name"] not in left_out]

    return keep


def head_pod(bed: Bed) -> dict[str, Any] | None:
    """The head pod (not being deleted), as JSON."""
    pods = bed.cp.get_json(
        "pods",
        f"--namespace={NAMESPACE}",
        f"--selector=ray.io/cluster={CLUSTER},ray.io/node-type=head",
    )["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return live[0] if live else None


def container_running(pod: dict[str, Any] | None, name: str) -> bool:
    """The pod's container ``name`` is running."""
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        if status["name"] == name:
            return "running" in (status.get("state") or {})
    return False


def ray_token(bed: Bed) -> str:
    """Ray's token from the Secret KubeRay made for ``authOptions``."""
    return read_ray_token(bed.cp, CLUSTER, timeout_s=120)


def _ours_ready(bed: Bed, groups: tuple[str, ...]) -> bool:
    if not requests.get(f"http://127.0.0.1:{AGENT_PORT}/metrics", timeout=1).ok:
        return False
    for group in groups:
        rwg = bed.custom.get_namespaced_custom_object(
            *RWG[:2], NAMESPACE, RWG[2], f"ray-demo-{group}"
        )
        if not (rwg.get("status") or {}).get("selector"):
            return False
        hpa = bed.cp.kubectl(
            "get", "hpa", f"keda-hpa-ray-demo-{group}", f"--namespace={NAMESPACE}", check=False
        )
        if hpa.returncode != 0:
            return False
    return True


def _get(bed: Bed, what: str) -> dict[str, Any]:
    """``kubectl get what -o json`` in the namespace; ``{}`` when it fails."""
    out = bed.cp.kubectl("get", what, f"--namespace={NAMESPACE}", "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def _keep_logs(bed: Bed, side: str, groups: tuple[str, ...]) -> None:
    """The head pod's containers' logs and each group's HPA as described, into the bed's
    ``logs/`` (``<side>-<time>-<what>.log``), before the cluster is deleted."""
    stamp = time.strftime("%H%M%S")
    out = bed.workdir / "logs"
    out.mkdir(exist_ok=True)
    pod = head_pod(bed)
    for container in [c["name"] for c in pod["spec"]["containers"]] if pod else []:
        log = bed.cp.kubectl("logs", pod["metadata"]["name"], "-c", container,
                             f"--namespace={NAMESPACE}", check=False).stdout  # fmt: skip
        (out / f"{side}-{stamp}-{container}.log").write_text(log)
    for group in groups:
        hpa = bed.cp.kubectl("describe", "hpa", f"--namespace={NAMESPACE}", check=False).stdout
        (out / f"{side}-{stamp}-hpa-{group}.log").write_text(hpa)


def _why_not_ready(bed: Bed, groups: tuple[str, ...]) -> str:
    """What stood between the cluster and ready: the head's containers, each group's
    RayWorkerGroup status, HPA and ScaledObject conditions, the head's last log lines."""
    lines = ["cluster not ready:"]
    pod = head_pod(bed)
    if pod is None:
        return "cluster not ready: no head pod"
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        lines.append(f"  container {status['name']}: {status.get('state')}")
    for group in groups:
        name = f"ray-demo-{group}"
        rwg = _get(bed, f"{RWG[2]}.{RWG[0]}/{name}")
        so = _get(bed, f"scaledobjects.keda.sh/{name}")
        hpa = bed.cp.kubectl("get", "hpa", f"keda-hpa-{name}", f"--namespace={NAMESPACE}",
                             check=False)  # fmt: skip
        lines.append(f"  {name}: status {rwg.get('status')}; hpa rc {hpa.returncode}; "
                     f"scaledobject {(so.get('status') or {}).get('conditions')}")  # fmt: skip
    for container in [c["name"] for c in pod["spec"]["containers"]]:
        log = bed.cp.kubectl("logs", pod["metadata"]["name"], "-c", container, "--tail=15",
                             f"--namespace={NAMESPACE}", check=False).stdout  # fmt: skip
        lines.append(f"  {container} log:\n" + "\n".join(f"    {x}" for x in log.splitlines()))
    return "\n".join(lines)


def _ray_ready(bed: Bed) -> bool:
    pod = head_pod(bed)
    if not (container_running(pod, "ray-head") and container_running(pod, AUTOSCALER)):
        return False
    assert pod is not None
    log = bed.cp.kubectl(
        "logs", pod["metadata"]["name"], "-c", AUTOSCALER, f"--namespace={NAMESPACE}", check=False
    ).stdout
    return "Starting the autoscaler" in log


def _no_workers(bed: Bed, groups: tuple[str, ...]) -> bool:
    return not any(bed.pods.live_pods(g) for g in groups)


@contextlib.contextmanager
def cluster(
    bed: Bed, side: str, groups: tuple[str, ...], relabel: Callable[[Docs], Docs] | None = None
) -> Iterator[Cluster]:
    """Apply ``side``'s cluster with ``groups``, wait until its autoscaler runs and no worker
    pod exists (KEDA's fallback may give one at start: it must be gone first); delete it all on
    exit. ``relabel`` (workload e) makes ``groups`` from the overlay's ``cpu`` group."""
    base = ("cpu",) if relabel else groups
    directory = write_overlay(bed, side, base, bed.workdir / f"overlay-{side}-{time.time_ns()}")
    applied = time.time()
    keep = keep_docs(side, base)
    transform = keep if relabel is None else (lambda docs: relabel(keep(docs)))
    apply_overlay(bed.cp, directory, "--server-side", transform=transform)
    try:
        ready = (lambda: _ours_ready(bed, groups)) if side == OURS else (lambda: _ray_ready(bed))
        try:
            wait_until(ready, timeout_s=300, what=f"{side}'s cluster ready", alive=[bed.operator])
        except TimeoutError:
            print(_why_not_ready(bed, groups), flush=True)  # a run never fails unnamed
            raise
        ready_s = time.time() - applied
        token = ray_token(bed)
        time.sleep(5)  # a first loop of either autoscaler on the empty cluster
        wait_until(lambda: _no_workers(bed, groups), timeout_s=240, what="no worker pod")
        pod = head_pod(bed)
        assert pod is not None
        yield Cluster(side, groups, pod["metadata"]["name"], token, applied, ready_s)
    finally:
        _keep_logs(bed, side, groups)
        delete(bed, side)


def delete(bed: Bed, side: str) -> None:
    """Delete the side's objects (ScaledObjects first, so KEDA lets go), wait until the
    cluster's pods, Secret and ServiceAccount are gone."""
    if side == OURS:
        for kind in ("scaledobjects.keda.sh", "rayworkergroups.keda-ray-scaler.io"):
            bed.cp.kubectl("delete", kind, "--all", f"--namespace={NAMESPACE}", "--wait=true",
                           check=False)  # fmt: skip
    bed.cp.kubectl(
        "delete", f"{RC[2]}.{RC[0]}", CLUSTER, f"--namespace={NAMESPACE}", "--wait=true",
        "--ignore-not-found", check=False,
    )  # fmt: skip

    def gone() -> bool:
        pods = bed.cp.get_json(
            "pods", f"--namespace={NAMESPACE}", f"--selector=ray.io/cluster={CLUSTER}"
        )["items"]
        left = bed.cp.kubectl(
            "get", f"secret/{CLUSTER}", f"serviceaccount/{CLUSTER}", f"--namespace={NAMESPACE}",
            "--ignore-not-found", "-o", "name", check=False,
        ).stdout.strip()  # fmt: skip
        return not pods and not left

    wait_until(gone, timeout_s=240, what="the cluster's pods, Secret and ServiceAccount gone")
