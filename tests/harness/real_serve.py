"""A RayService on the bed, opted in with one label (see :mod:`real_optin`), and its load.

:func:`rayservice` is the shipped example's cluster spec on the real node (as a RayJob's) with
the Serve application :mod:`serve_app` (copied to the share, which is on the replicas'
``PYTHONPATH``): one deployment of ``{CPU: 5}`` replicas, Serve's own autoscaling on ongoing
requests (one per replica), 1 to :data:`MAX_REPLICAS`. The head is on the node's network, so its
Serve proxy answers at the node IP; :class:`Load` sends requests there from threads of the test,
bounded in count and time, and counts what failed. :func:`replicas` reads Serve's own account of
its replicas (the dashboard's REST API, with the cluster's Ray token).
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonpatch
import requests
import yaml
from bed import NAMESPACE, Bed, ray_namespace
from kuberay_examples import example_without_agent
from kubernetes import client
from pod_watch import PodWatch
from ray_on_node import (
    HEAD_RESOURCES,
    NODE_IP,
    SHARE_VOLUME_MOUNT,
    START_GATE,
    WORKER_RESOURCES,
    Op,
    container_ops,
    env,
    pod_ops,
    share_volume,
)
from real_loop import IDLE_TIMEOUT_S
from real_optin import cluster_spec, controller_release

from keda_ray_scaler.controller.optin import OPT_IN_LABEL

APP = Path(__file__).with_name("serve_app.py")
MAX_REPLICAS = 6
SERVE_URL = f"http://{NODE_IP}:8000/"
DASHBOARD = f"http://{NODE_IP}:8265"
RS = ("ray.io", "v1", "rayservices")
SERVICE = "echo"  # the RayService the tests make
#: KubeRay's readiness probe of a RayService worker (``initLivenessAndReadinessProbe``: the
#: raylet's health, then the Serve proxy's ``/-/healthz``, period 5 s, one failure), in Python:
#: the bed's operator injects no probes (its image has no ``wget``: ``bed.OPERATOR_ENV``), and
#: without it a worker is a serve Service endpoint before its proxy listens and while it drains
#: (measured: 269 of 1,189 requests refused through the Service in an upgrade run). A user's
#: cluster has KubeRay's own; a user without ``wget`` in the image writes this one.
SERVE_READINESS: dict[str, Any] = {
    "exec": {
        "command": [
            "python3",
            "-c",
            "import urllib.request as u\n"
            "for url in ('http://localhost:52365/api/local_raylet_healthz',"
            " 'http://localhost:8000/-/healthz'):\n"
            "    assert b'success' in u.urlopen(url, timeout=2).read()",
        ]
    },
    "initialDelaySeconds": 2,
    "timeoutSeconds": 5,  # a Python start on a busy bed; KubeRay's wget has 2 s
    "periodSeconds": 5,
    "successThreshold": 1,
    "failureThreshold": 1,
}
#: figures of the RayService test, printed as one ``e2e-rayservice:`` line (tests/conftest.py)
FIGURES: dict[str, str] = {}
#: figures of the upgrade test, one ``e2e-rayservice-upgrade:`` line
UPGRADE_FIGURES: dict[str, str] = {}

SERVE_CONFIG = {
    "http_options": {"host": "0.0.0.0", "port": 8000},
    "applications": [
        {
            "name": "echo",
            "import_path": "serve_app:app",
            "route_prefix": "/",
            "runtime_env": {"env_vars": {"PYTHONPATH": "/krs-e2e"}},
            "deployments": [
                {
                    "name": "Echo",
                    "ray_actor_options": {"num_cpus": 5},
                    "max_ongoing_requests": 4,
                    "autoscaling_config": {
                        "min_replicas": 1,
                        "max_replicas": MAX_REPLICAS,
                        "target_ongoing_requests": 1,
                        "upscale_delay_s": 2,
                        "downscale_delay_s": 10,
                        "metrics_interval_s": 1,
                        "look_back_period_s": 2,
                    },
                }
            ],
        }
    ],
}


def pod_network_spec(share: Path, refs: dict[str, str]) -> dict[str, Any]:
    """The example's cluster spec without the agent with every pod on the pod network, as on a
    cluster: workers join the head at its Service's name (KubeRay's default address; CoreDNS and
    kube-proxy on the bed, :mod:`service_network`), the agent reaches the API server at the
    ``kubernetes`` ClusterIP. Two such clusters run side by side (a RayService's upgrade); on
    the node's network their heads' ports would collide. Ray's own address probe needs a route
    out, so each Ray node is told its pod IP. Workers are Service endpoints only while their
    Serve proxy is healthy (:data:`SERVE_READINESS`)."""
    doc = {"spec": example_without_agent()["spec"]}
    head = "/spec/headGroupSpec"
    head_pod = f"{head}/template/spec"
    ray_head = f"{head_pod}/containers/0"
    cpu = "/spec/workerGroupSpecs/0"
    worker = f"{cpu}/template/spec/containers/0"
    pod_ip = [env("MY_POD_IP", field="status.podIP")]
    ops: list[Op] = [
        *pod_ops(head_pod, host_network=False),
        ("add", f"{head}/rayStartParams/node-ip-address", "$MY_POD_IP"),
        ("remove", f"{head}/rayStartParams/dashboard-host", None),  # KubeRay's 0.0.0.0
        *container_ops(ray_head, HEAD_RESOURCES),
        ("add", f"{ray_head}/env", pod_ip),
        ("add", f"{head_pod}/volumes/-", share_volume(share)),
        ("add", f"{ray_head}/volumeMounts", [SHARE_VOLUME_MOUNT]),
        ("replace", f"{cpu}/idleTimeoutSeconds", IDLE_TIMEOUT_S),
        *pod_ops(f"{cpu}/template/spec", host_network=False),
        ("add", f"{cpu}/rayStartParams/node-ip-address", "$MY_POD_IP"),
        *container_ops(worker, WORKER_RESOURCES),
        ("add", f"{worker}/command", START_GATE),
        ("add", f"{worker}/env", pod_ip),
        ("add", f"{worker}/readinessProbe", SERVE_READINESS),
        ("add", f"{cpu}/template/spec/volumes", [share_volume(share)]),
        ("add", f"{worker}/volumeMounts", [SHARE_VOLUME_MOUNT]),
    ]
    patch = jsonpatch.JsonPatch(
        [{"op": o, "path": p, **({} if o == "remove" else {"value": v})} for o, p, v in ops]
    )
    spec: dict[str, Any] = patch.apply(doc)["spec"]
    for group in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
        for container in group["template"]["spec"]["containers"]:
            container["image"] = refs["ray"]
    return spec


def rayservice(
    name: str, share: Path, refs: dict[str, str], *, pod_network: bool = False
) -> dict[str, Any]:
    """The RayService, opted in by its label only (module docstring); with ``pod_network``, its
    clusters as :func:`pod_network_spec` says."""
    shutil.copy(APP, share / APP.name)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {OPT_IN_LABEL: "enabled"}},
        "spec": {
            "serveConfigV2": yaml.safe_dump(SERVE_CONFIG, sort_keys=False),
            "rayClusterConfig": (
                pod_network_spec(share, refs) if pod_network else cluster_spec(share, refs)
            ),
        },
    }


def replicas(token: str) -> dict[str, str]:
    """Serve's RUNNING replicas of the application: replica id -> node IP (the pod's)."""
    return replica_states(token)[0]


def replica_states(token: str) -> tuple[dict[str, str], int]:
    """Serve's RUNNING replicas (replica id -> node IP) and its replicas in every state (those
    it asked for and has not stopped: STARTING ones wait for room)."""
    reply = requests.get(
        f"{DASHBOARD}/api/serve/applications/",
        headers={"Authorization": f"Bearer {token}"},
        timeout=5,
    )
    reply.raise_for_status()
    out: dict[str, str] = {}
    asked = 0
    for app in (reply.json().get("applications") or {}).values():
        for deployment in (app.get("deployments") or {}).values():
            for replica in deployment.get("replicas") or ():
                asked += replica.get("state") != "STOPPING"
                if replica.get("state") == "RUNNING":
                    out[str(replica.get("replica_id"))] = str(replica.get("node_ip"))
    return out, asked


Samples = list[tuple[float, frozenset[str]]]  # (time, pods holding a RUNNING replica)


class Held:
    """Which pods hold a RUNNING Serve replica (by pod IP), sampled every 0.5 s in a thread, so
    that a deletion can be checked against what its pod held just before."""

    def __init__(self, core: client.CoreV1Api, token: str) -> None:
        self._core, self._token = core, token
        self.samples: Samples = []
        self.count = 0  # RUNNING replicas at the last sample
        self.asked: list[tuple[float, int]] = []  # (time, replicas not stopping) at each sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="held", daemon=True)

    def __enter__(self) -> Held:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            with contextlib.suppress(Exception):  # a sample missed
                running, asked = replica_states(self._token)
                ips = set(running.values())
                pods = self._core.list_namespaced_pod(
                    NAMESPACE, label_selector="ray.io/group"
                ).items
                held = frozenset(p.metadata.name for p in pods if p.status.pod_ip in ips)
                now = time.time()
                self.samples.append((now, held))
                self.asked.append((now, asked))
                self.count = len(running)

    def held_before(self, at: float) -> frozenset[str]:
        """The pods that held a replica at the last sample before ``at``."""
        before = [held for t, held in self.samples if t <= at]
        return before[-1] if before else frozenset()


@dataclass
class Load:
    """``clients`` threads each sending ``GET /?s=seconds`` one after another until stopped, at
    most ``limit`` requests in all and ``max_s`` seconds. Every answer counted by outcome."""

    clients: int
    url: str = SERVE_URL
    seconds: float = 1.0
    limit: int = 5000
    max_s: float = 600.0
    outcomes: Counter[str] = field(default_factory=Counter)
    pods: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        deadline = time.monotonic() + self.max_s
        for n in range(self.clients):
            thread = threading.Thread(target=self._run, args=(deadline,), name=f"load-{n}")
            thread.daemon = True
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(15)

    @property
    def failed(self) -> int:
        with self._lock:
            return sum(n for outcome, n in self.outcomes.items() if outcome != "200")

    @property
    def sent(self) -> int:
        with self._lock:
            return sum(self.outcomes.values())

    def _run(self, deadline: float) -> None:
        # One connection per request: a pooled keep-alive connection outlives the backend it was
        # routed to (measured: in an upgrade, when KubeRay deleted the old cluster 60 s after
        # the switch, each of 12 keep-alive clients failed once, at one instant, on a connection
        # to the old cluster's proxy); what is counted here is requests the serving pods failed.
        while not self._stop.is_set() and time.monotonic() < deadline and self.sent < self.limit:
            try:
                reply = requests.get(
                    self.url,
                    params={"s": self.seconds},
                    headers={"Connection": "close"},
                    timeout=30,
                )
                outcome, pod = str(reply.status_code), reply.text.strip()
            except requests.RequestException as exc:
                outcome, pod = type(exc).__name__, ""
            with self._lock:
                self.outcomes[outcome] += 1
                if outcome == "200":
                    self.pods[pod] += 1
                elif len(self.failures) < 20:
                    self.failures.append(f"{time.time():.1f} {outcome} {pod[:200]}")


def service_of(custom: client.CustomObjectsApi) -> dict[str, Any]:
    obj: dict[str, Any] = custom.get_namespaced_custom_object(*RS[:2], NAMESPACE, RS[2], SERVICE)
    return obj


def app_running(custom: client.CustomObjectsApi) -> bool:
    status = service_of(custom).get("status") or {}
    apps = (status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}
    return (apps.get("echo") or {}).get("status") == "RUNNING"


@contextlib.contextmanager
def stage(bed: Bed, logs: Path) -> Iterator[tuple[client.CustomObjectsApi, PodWatch]]:
    core = client.CoreV1Api(bed.api)
    with (
        ray_namespace(bed.cp, logs),
        controller_release(bed),
        PodWatch(core, NAMESPACE, "ray.io/node-type=worker") as pods,
    ):
        yield client.CustomObjectsApi(bed.api), pods
