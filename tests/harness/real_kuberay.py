"""KubeRay mode against a real control plane: the pieces of :mod:`real_loop`, KubeRay's operator.

:func:`api_server` starts etcd and kube-apiserver only (for the applier's API tests) with the
KubeRay CRDs (from the pinned operator module, ``e2e/build.sh`` ``kuberay``) and the project's
RayWorkerGroup CRD installed.

:func:`kuberay_loop` puts ``manifests/kuberay/example`` on the session's bed (:mod:`bed`: the
control plane and KEDA, the real node, KubeRay's CRDs and operator, Prometheus, the scaler from
the Helm chart), in the namespace ``ray`` made for it and deleted after it, as a user would apply
it, through an overlay: the scaler's address, test timings, and what the real node needs
(:mod:`ray_on_node`: local images, the head on the node's network at the node IP, workers on the
pod bridge joining it by address, small requests with Ray's logical CPUs from
``rayStartParams``). KubeRay creates the head pod (Ray's head and the agent sidecar,
``--raycluster=demo``) and the worker pods; the kubelet runs them.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import requests
import yaml
from bed import NAMESPACE, Bed, install_crds, ray_namespace, scaler_pods
from control_plane import REPO, ControlPlane, Process, wait_until
from kubernetes import client, config
from pod_watch import PodWatch
from prometheus_client.parser import text_string_to_metric_families
from ray_on_node import (
    AGENT_RESOURCES,
    HEAD_RESOURCES,
    NODE_IP,
    Op,
    agent_env_ops,
    container_ops,
    kuberay_worker_ops,
    kustomize_images,
    make_share,
    patch,
    pod_ops,
    privileged_namespace,
)
from real_loop import (
    AGENT_CONTAINER,
    IDLE_TIMEOUT_S,
    Docs,
    RealLoop,
    _restarts,
    agent_sample,
    apply_overlay,
    scaled_object_ops,
)

CLUSTER = "demo"
GROUP = "cpu"
WORKER_GROUP = f"ray-demo-{GROUP}"
EXAMPLE = REPO / "manifests" / "kuberay" / "example"
RWG = ("keda-ray-scaler.io", "v1alpha1", "rayworkergroups")
RC = ("ray.io", "v1", "rayclusters")
#: figures of the KubeRay-mode test, printed as one ``e2e-kuberay:`` line (tests/conftest.py)
FIGURES: dict[str, str] = {}


@contextlib.contextmanager
def api_server(bin_dir: Path) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver only, with the CRDs; stopped by PID on exit."""
    workdir = Path(tempfile.mkdtemp(prefix="krs-api-"))
    cp = ControlPlane(workdir, bin_dir)
    try:
        (workdir / "logs").mkdir(parents=True)
        cp.pki.mkdir(parents=True)
        cp._make_pki()
        cp._start_etcd()
        cp._start_apiserver()
        install_crds(cp, bin_dir)
        yield cp
    finally:
        cp.stop()


def custom_api(cp: ControlPlane) -> client.CustomObjectsApi:
    """An admin CustomObjectsApi."""
    return client.CustomObjectsApi(config.new_client_from_config(str(cp.admin_kubeconfig)))


def _overlay(workdir: Path, share: Path, images: dict[str, str], apiserver_port: int) -> Path:
    """A user's overlay of manifests/kuberay/example on the real node: scaler address, timings,
    local images, addresses without DNS (see :mod:`ray_on_node`)."""
    overlay = workdir / "overlay"
    overlay.mkdir()
    head = "/spec/headGroupSpec"
    head_pod = f"{head}/template/spec"
    agent = f"{head_pod}/containers/1"
    cpu = "/spec/workerGroupSpecs/0"
    rc_ops: list[Op] = [
        *pod_ops(head_pod, host_network=True),
        ("add", f"{head}/rayStartParams/node-ip-address", NODE_IP),
        *container_ops(f"{head_pod}/containers/0", HEAD_RESOURCES),
        *container_ops(agent, AGENT_RESOURCES),
        *agent_env_ops(agent, apiserver_port),
        ("add", f"{agent}/args/-", "--interval=1"),
        ("add", f"{agent}/args/-", "--settle-delay=1"),
        ("replace", f"{cpu}/idleTimeoutSeconds", IDLE_TIMEOUT_S),
        *kuberay_worker_ops(cpu, share),
    ]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(EXAMPLE, overlay)],
        "images": kustomize_images(images),
        "patches": [
            {"target": {"kind": "ScaledObject"}, "patch": patch(scaled_object_ops())},
            {"target": {"kind": "RayCluster"}, "patch": patch(rc_ops)},
            privileged_namespace(),
        ],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return overlay


@dataclass
class KubeRayLoop:
    """What :func:`kuberay_loop` started; reads of the cluster for the test's steps."""

    base: RealLoop  # reused for the scaler, submit, the pod watch
    operator: Process
    custom: client.CustomObjectsApi
    core: client.CoreV1Api

    @property
    def cp(self) -> ControlPlane:
        """The control plane."""
        return self.base.cp

    @property
    def pod_watch(self) -> PodWatch:
        """The worker pods' watch."""
        return self.base.pods

    def raycluster(self) -> dict[str, Any]:
        """The RayCluster, as JSON."""
        obj: dict[str, Any] = self.custom.get_namespaced_custom_object(
            *RC[:2], NAMESPACE, RC[2], CLUSTER
        )
        return obj

    def group_spec(self, group: str = GROUP) -> dict[str, Any]:
        """The worker group's spec in the RayCluster."""
        (spec,) = [
            g for g in self.raycluster()["spec"]["workerGroupSpecs"] if g["groupName"] == group
        ]
        return dict(spec)

    def patch_group(self, group: str = GROUP, **fields: int) -> None:
        """Change the group's fields in the RayCluster as a user would: one JSON patch, the
        group's name at its index its precondition (the agent patches replicas meanwhile)."""
        groups = self.raycluster()["spec"]["workerGroupSpecs"]
        (index,) = [i for i, g in enumerate(groups) if g["groupName"] == group]
        base = f"/spec/workerGroupSpecs/{index}"
        ops: list[dict[str, Any]] = [{"op": "test", "path": f"{base}/groupName", "value": group}]
        ops += [{"op": "replace", "path": f"{base}/{k}", "value": v} for k, v in fields.items()]
        self.custom.patch_namespaced_custom_object(
            *RC[:2], NAMESPACE, RC[2], CLUSTER, ops, _content_type="application/json-patch+json"
        )

    def agent_series(self, name: str, key: str) -> dict[str, float]:
        """The agent's ``name`` samples now, by the value of their label ``key``."""
        text = requests.get(self.base.agent_url, timeout=5).text
        return {
            s.labels.get(key, ""): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == name
        }

    def agent_restarts(self) -> int:
        """Restarts of the agent container of the head pod."""
        return _restarts(self.base.head_pod(), AGENT_CONTAINER)

    def worker_group(self, name: str = WORKER_GROUP) -> dict[str, Any]:
        """The RayWorkerGroup, as JSON."""
        obj: dict[str, Any] = self.custom.get_namespaced_custom_object(
            *RWG[:2], NAMESPACE, RWG[2], name
        )
        return obj

    def pods(self, group: str = GROUP) -> dict[str, Any]:
        """The group's worker pods not being deleted, by name."""
        items = self.core.list_namespaced_pod(
            NAMESPACE,
            label_selector=f"ray.io/cluster={CLUSTER},ray.io/group={group},ray.io/node-type=worker",
        ).items
        return {p.metadata.name: p for p in items if p.metadata.deletion_timestamp is None}

    def condition(self, type_: str, name: str = WORKER_GROUP) -> dict[str, Any]:
        """A RayWorkerGroup condition ({} when absent)."""
        for c in (self.worker_group(name).get("status") or {}).get("conditions") or ():
            if c["type"] == type_:
                return dict(c)
        return {}

    def agent_log(self) -> str:
        """The agent sidecar's log (``kubectl logs``)."""
        return self.base.agent_log()

    def operator_deletions(self) -> tuple[set[str], set[str]]:
        """:func:`operator_deletions` of this bed's operator."""
        return operator_deletions(self.operator.log)

    def wait_pods(self, count: int, timeout_s: float) -> float:
        """Wait until the group has ``count`` Ready pods, each a live Ray node the agent sees
        (a worker pod is Ready as its container runs, before ``ray start`` joins: the start
        gate spaces the joins by seconds); the time it took."""
        start = time.monotonic()
        seen: list[tuple[int, int]] = []  # (pods, Ready pods) as they changed

        def reached() -> bool:
            pods = set(self.pods())
            ready = self.pod_watch.running_pods(GROUP) & pods
            if not seen or seen[-1] != (len(pods), len(ready)):
                seen.append((len(pods), len(ready)))
            if len(ready) != count:
                return False
            text = requests.get(self.base.agent_url, timeout=2).text
            return not count or ready <= agent_sample(time.time(), text).live

        try:
            wait_until(reached, timeout_s=timeout_s, what=f"{count} {GROUP} pods", interval_s=0.2)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; (pods, Ready) seen: {seen[-40:]}") from None
        return time.monotonic() - start


def operator_deletions(log: Path) -> tuple[set[str], set[str]]:
    """From KubeRay's own log: pods it deleted because ``workersToDelete`` named them, and pods
    it deleted at random (more pods than replicas)."""
    named: set[str] = set()
    randomly: set[str] = set()
    for line in log.read_text(errors="replace").splitlines():
        fields = line.split("\t")
        if len(fields) < 5:
            continue
        if fields[3] == "Deleting pod":
            named.add(json.loads(fields[4])["name"])
        elif fields[3] == "Randomly deleting Pod":
            randomly.add(json.loads(fields[4])["with name"])
    return named, randomly


@contextlib.contextmanager
def kuberay_loop(
    bed: Bed, transform: Callable[[Docs], Docs] | None = None
) -> Iterator[KubeRayLoop]:
    """``manifests/kuberay/example`` on ``bed`` (module docstring), in a namespace of its own
    deleted on exit; ``transform`` changes the overlay's objects before they are applied."""
    workdir = Path(tempfile.mkdtemp(prefix="kuberay-", dir=bed.workdir))
    cp = bed.cp
    with contextlib.ExitStack() as stack:
        (workdir / "logs").mkdir()
        stack.enter_context(ray_namespace(cp, workdir / "logs"))
        share = make_share(workdir / "share")
        core = client.CoreV1Api(bed.api)
        custom = client.CustomObjectsApi(bed.api)
        overlay = _overlay(workdir, share, bed.refs, cp.apiserver_port)
        apply_overlay(cp, overlay, "--server-side", transform=transform)
        pods = stack.enter_context(
            PodWatch(core, NAMESPACE, f"ray.io/cluster={CLUSTER},ray.io/node-type=worker")
        )
        base = RealLoop(
            workdir=workdir,
            share=share,
            cp=cp,
            node=bed.node,
            pods=pods,
            prometheus=bed.prometheus,
            core=core,
            apps=client.AppsV1Api(bed.api),
            custom=custom,
        )
        wait_until(
            lambda: requests.get(base.agent_url, timeout=1).ok,
            timeout_s=180,
            what="the agent's /metrics (head pod Ready)",
            alive=[bed.operator],
        )
        wait_until(lambda: scaler_pods(core) == 1, timeout_s=120, what="the scaler pod Ready")
        stack.callback(pods.request_stop)  # first on the way out (see real_loop)
        yield KubeRayLoop(base, bed.operator, custom, core)


class Periodic:
    """Runs :meth:`tick` every ``interval_s`` in a daemon thread between start and stop; an
    exception in a tick (the API server busy) skips that tick only."""

    def __init__(self, loop: KubeRayLoop, interval_s: float, name: str) -> None:
        self._loop = loop
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Self:
        """Start ticking."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop ticking."""
        self._stop.set()
        self._thread.join(5)

    def tick(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            with contextlib.suppress(Exception):
                self.tick()


class GroupRecorder(Periodic):
    """Samples the cpu group of the RayCluster every ``interval_s``: every name ever in
    ``workersToDelete`` (with the time first seen) and the largest ``replicas`` (with the wall
    time it was first seen)."""

    def __init__(self, loop: KubeRayLoop, interval_s: float = 0.2) -> None:
        super().__init__(loop, interval_s, "group-recorder")
        self.named: dict[str, float] = {}  # pod -> time.monotonic() first seen
        self.max_replicas = 0
        self.max_at = 0.0  # time.time() when max_replicas was first seen

    def tick(self) -> None:
        group = self._loop.group_spec()
        now = time.monotonic()
        replicas = int(group.get("replicas", 0))
        if replicas > self.max_replicas:
            self.max_replicas, self.max_at = replicas, time.time()
        for pod in (group.get("scaleStrategy") or {}).get("workersToDelete") or ():
            self.named.setdefault(pod, now)


class Editor(Periodic):
    """Someone else editing the RayCluster every ``interval_s`` (an annotation counter) while
    the agent patches it: each edit bumps its resourceVersion under the agent's feet."""

    KEY = "e2e.keda-ray-scaler.io/edit"

    def __init__(self, loop: KubeRayLoop, interval_s: float = 0.05) -> None:
        super().__init__(loop, interval_s, "editor")
        self.written = 0  # the last value the API server accepted
        self._n = 0

    def tick(self) -> None:
        self._n += 1
        body = {"metadata": {"annotations": {self.KEY: str(self._n)}}}
        self._loop.custom.patch_namespaced_custom_object(
            *RC[:2],
            NAMESPACE,
            RC[2],
            CLUSTER,
            body,
            _content_type="application/merge-patch+json",
        )
        self.written = self._n
