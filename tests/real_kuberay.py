"""KubeRay mode against a real control plane: the pieces of :mod:`real_loop`, KubeRay's operator.

:func:`api_server` starts etcd and kube-apiserver only (for the applier's API tests) with the
KubeRay CRDs (from the pinned operator module, ``e2e/build.sh`` ``kuberay``) and the project's
RayWorkerGroup CRD installed.

:func:`kuberay_loop` starts the whole loop of :mod:`real_loop` in KubeRay mode, on 127.0.0.1:

- the control plane, kwok and KEDA (:class:`control_plane.ControlPlane`), the KubeRay CRDs and
  the real KubeRay operator (``kuberay-operator``, leader election off, out of cluster);
- ``manifests/kuberay/example`` applied as a user would, through an overlay: the scaler's
  address, test timings, the cpu group's memory left out (the local raylets have CPUs only);
- a local Ray head (KubeRay's head pod is faked by kwok) and :class:`ray_kubelet.RayKubelet`
  running a raylet for each Running worker pod KubeRay creates (``ray.io/node-type=worker``);
- ``keda-ray-scaler agent --raycluster=demo`` with its ServiceAccount's token, Prometheus, the
  scaler over mTLS.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import requests
import yaml
from control_plane import REPO, ControlPlane, Process, spawn, wait_until
from kubernetes import client, config
from prometheus_server import PrometheusServer
from ray_cluster import RayCluster, ray_cluster
from ray_kubelet import GroupShape, RayKubelet
from real_loop import (
    COOLDOWN_S,
    IDLE_TIMEOUT_S,
    NAMESPACE,
    POLLING_INTERVAL_S,
    SCALE_DOWN_WINDOW_S,
    RealLoop,
    _client_tls_secret,
    _scaler_pki,
)

from keda_ray_scaler.demo.raylets import free_port

CLUSTER = "demo"
GROUP = "cpu"
WORKER_GROUP = f"ray-demo-{GROUP}"
EXAMPLE = REPO / "manifests" / "kuberay" / "example"
CRD = REPO / "manifests" / "kuberay" / "crd"
RWG = ("keda-ray-scaler.io", "v1alpha1", "rayworkergroups")
RC = ("ray.io", "v1", "rayclusters")
#: figures of the KubeRay-mode test, printed as one ``e2e-kuberay:`` line (tests/conftest.py)
FIGURES: dict[str, str] = {}
_KRS = str(Path(sys.executable).with_name("keda-ray-scaler"))


def install_crds(cp: ControlPlane, bin_dir: Path) -> None:
    """KubeRay's CRDs (server-side: RayCluster's is too large for the last-applied annotation)
    and the RayWorkerGroup CRD, waited until established."""
    cp.kubectl("apply", "--server-side", "-f", str((bin_dir / "kuberay-crds").resolve()))
    cp.kubectl("apply", "-k", str(CRD))
    for name in ("rayclusters.ray.io", "rayworkergroups.keda-ray-scaler.io"):
        wait_until(
            lambda name=name: (
                cp.kubectl(
                    "wait",
                    "--for=condition=Established",
                    f"crd/{name}",
                    "--timeout=10s",
                    check=False,
                ).returncode
                == 0
            ),
            timeout_s=60,
            what=f"CRD {name} established",
        )


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


def _overlay(workdir: Path, scaler_port: int) -> Path:
    """A user's overlay of manifests/kuberay/example: scaler address, timings, CPU-only workers."""
    overlay = workdir / "overlay"
    overlay.mkdir()
    so_ops = [
        ("replace", "/spec/triggers/0/metadata/scalerAddress", f"127.0.0.1:{scaler_port}"),
        ("replace", "/spec/pollingInterval", POLLING_INTERVAL_S),
        ("replace", "/spec/cooldownPeriod", COOLDOWN_S),
        (
            "replace",
            "/spec/advanced/horizontalPodAutoscalerConfig/behavior/scaleDown/stabilizationWindowSeconds",
            SCALE_DOWN_WINDOW_S,
        ),
    ]
    cpu = "/spec/workerGroupSpecs/0"
    resources = f"{cpu}/template/spec/containers/0/resources"
    rc_ops = [
        ("replace", f"{cpu}/idleTimeoutSeconds", IDLE_TIMEOUT_S),
        ("remove", f"{resources}/limits/memory", None),
        ("remove", f"{resources}/requests/memory", None),
    ]

    def ops(items: list[tuple[str, str, Any]]) -> str:
        return yaml.safe_dump(
            [{"op": o, "path": p, **({} if o == "remove" else {"value": v})} for o, p, v in items]
        )

    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(EXAMPLE, overlay)],
        "patches": [
            {"target": {"kind": "ScaledObject"}, "patch": ops(so_ops)},
            {"target": {"kind": "RayCluster"}, "patch": ops(rc_ops)},
        ],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return overlay


@dataclass
class KubeRayLoop:
    """What :func:`kuberay_loop` started; reads of the cluster for the test's steps."""

    base: RealLoop  # reused for start_scaler, submit, the scaler's process
    operator: Process
    ray: RayCluster
    kubelet: RayKubelet
    custom: client.CustomObjectsApi
    core: client.CoreV1Api

    @property
    def cp(self) -> ControlPlane:
        """The control plane."""
        return self.base.cp

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

    def operator_deletions(self) -> tuple[set[str], set[str]]:
        """From KubeRay's own log: pods it deleted because ``workersToDelete`` named them, and
        pods it deleted at random (more pods than replicas)."""
        named: set[str] = set()
        randomly: set[str] = set()
        for line in self.operator.log.read_text(errors="replace").splitlines():
            fields = line.split("\t")
            if len(fields) < 5:
                continue
            if fields[3] == "Deleting pod":
                named.add(json.loads(fields[4])["name"])
            elif fields[3] == "Randomly deleting Pod":
                randomly.add(json.loads(fields[4])["with name"])
        return named, randomly

    def wait_pods(self, count: int, timeout_s: float) -> float:
        """Wait until the group has ``count`` Running pods with a raylet; the time it took."""
        start = time.monotonic()

        def reached() -> bool:
            running = [p for p in self.pods().values() if p.status and p.status.phase == "Running"]
            return len(running) == count and len(self.kubelet.running_pods(GROUP)) == count

        wait_until(reached, timeout_s=timeout_s, what=f"{count} {GROUP} pods", interval_s=0.2)
        return time.monotonic() - start


@contextlib.contextmanager
def kuberay_loop(bin_dir: Path, *, nodes: int = 14) -> Iterator[KubeRayLoop]:
    """Start everything (module docstring); stop everything by PID on exit."""
    workdir = Path(tempfile.mkdtemp(prefix="krs-kuberay-"))
    with contextlib.ExitStack() as stack:
        cp = stack.enter_context(ControlPlane.start(workdir / "cp", bin_dir))
        cp.add_nodes(nodes, prefix="worker-node", cpu="16", memory="64Gi")
        install_crds(cp, bin_dir)
        (workdir / "logs").mkdir()
        operator = spawn(
            "kuberay-operator",
            [
                str(bin_dir / "bin" / "kuberay-operator"),
                f"--kubeconfig={cp.admin_kubeconfig}",
                "--enable-leader-election=false",
                f"--metrics-addr=127.0.0.1:{free_port()}",
                f"--health-probe-bind-address=127.0.0.1:{free_port()}",
                "--log-stdout-encoder=console",
            ],
            workdir / "logs",
        )
        stack.callback(operator.stop)
        ray = stack.enter_context(ray_cluster())
        api = config.new_client_from_config(config_file=str(cp.admin_kubeconfig))
        core = client.CoreV1Api(api)
        kubelet = RayKubelet(
            ray,
            core,
            NAMESPACE,
            f"ray.io/cluster={CLUSTER},ray.io/node-type=worker",
            {GROUP: GroupShape(num_cpus=10)},
        )
        stack.enter_context(kubelet)
        scaler_port, agent_port = free_port(), free_port()
        _scaler_pki(workdir)
        overlay = _overlay(workdir, scaler_port)
        pki = _client_tls_secret(cp, workdir)
        cp.kubectl("apply", "--server-side", "-k", str(overlay))
        (workdir / "prom").mkdir()
        prometheus = stack.enter_context(
            PrometheusServer(workdir / "prom", [f"127.0.0.1:{agent_port}"])
        )
        base = RealLoop(
            workdir=workdir,
            cp=cp,
            ray=ray,
            kubelet=kubelet,
            prometheus=prometheus,
            core=core,
            apps=client.AppsV1Api(api),
            custom=client.CustomObjectsApi(api),
            agent_port=agent_port,
            scaler_port=scaler_port,
            scaler_args=[
                "serve",
                "--host=127.0.0.1",
                f"--port={scaler_port}",
                "--metrics-port=-1",
                f"--tls-cert={pki / 'server.crt'}",
                f"--tls-key={pki / 'server.key'}",
                f"--tls-client-ca={pki / 'ca.crt'}",
                f"--prometheus-url={prometheus.url}",
                "--refresh-interval=1",
                "--log-format=json",
            ],
            agent_kubeconfig=cp.token_kubeconfig(NAMESPACE, "keda-ray-scaler-agent"),
            spec_file=overlay / "unused",
        )
        agent = spawn(
            "agent",
            [
                _KRS,
                "agent",
                f"--raycluster={CLUSTER}",
                f"--gcs-address={ray.gcs_address}",
                "--host=127.0.0.1",
                f"--port={agent_port}",
                f"--namespace={NAMESPACE}",
                f"--kubeconfig={base.agent_kubeconfig}",
                "--interval=1",
                "--settle-delay=1",
                "--log-format=json",
            ],
            workdir / "logs",
            ray.env,
        )
        base.agent = agent
        stack.callback(base.stop_scaler)
        stack.callback(base.stop_agent)
        wait_until(
            lambda: requests.get(base.agent_url, timeout=1).ok,
            timeout_s=60,
            what="the agent's /metrics",
            alive=[agent, operator],
        )
        base.start_scaler()
        stack.callback(kubelet.request_stop)  # first on the way out (see real_loop)
        yield KubeRayLoop(base, operator, ray, kubelet, client.CustomObjectsApi(api), core)


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
    ``workersToDelete`` (with the time first seen) and the largest ``replicas``."""

    def __init__(self, loop: KubeRayLoop, interval_s: float = 0.2) -> None:
        super().__init__(loop, interval_s, "group-recorder")
        self.named: dict[str, float] = {}  # pod -> time.monotonic() first seen
        self.max_replicas = 0

    def tick(self) -> None:
        group = self._loop.group_spec()
        now = time.monotonic()
        self.max_replicas = max(self.max_replicas, int(group.get("replicas", 0)))
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
