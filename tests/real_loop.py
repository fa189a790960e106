"""The whole loop for the real-control-plane test: Ray -> agent -> Prometheus -> scaler -> KEDA.

:func:`real_loop` starts, on 127.0.0.1 and in one temporary directory:

- the control plane and KEDA (:mod:`control_plane`), with kwok nodes sized like worker nodes;
- a Ray head with no CPUs (local) and :class:`ray_kubelet.RayKubelet` running a raylet per
  Running worker pod;
- the project's example Ray cluster applied **as a user would**: ``kubectl apply -k`` of an
  overlay of ``manifests/examples/ray-cluster`` (the agent's ServiceAccount and Role included)
  whose patches are what a user's overlay says: the scaler's address, a shorter idle timeout and
  HPA windows so that a test takes minutes; KEDA's client certificate in the Secret the
  TriggerAuthentication names;
- the agent (authenticated with a token of its own ServiceAccount, so the Role is what is
  tested), a real Prometheus scraping it, and the scaler installed from the Helm chart
  (``helm upgrade --install``; its pod is faked by kwok) and run as a local process with the
  chart Deployment's args, serving mTLS with certificates made here.

:class:`Timeline` samples what the test asserts on in the background: every Deployment change
(through a watch) and the agent's own /metrics (victims, busy pods, wrong-victim counter).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chart_install
import pytest
import requests
import yaml
from control_plane import REPO, Authority, ControlPlane, Process, spawn, wait_until
from kubernetes import client, config, watch
from prometheus_client.parser import text_string_to_metric_families
from prometheus_server import PrometheusServer, requires_prometheus
from ray_cluster import RayCluster, ray_cluster
from ray_kubelet import GroupShape, RayKubelet

from keda_ray_scaler.demo.raylets import free_port

#: The seed example both real-loop modules run: 20 tasks of {CPU: 5} on 10-CPU pods, 16 of them
#: SHORT_S long and the rest held until released (at most HOLD_S); exactly 10 pods needed.
SEED_TASKS = 20
SEED_SHORT = 16
SHORT_S = 20.0
HOLD_S = 600.0
EXPECTED_PODS = 10
SEED_WAVES = [(0.0, [SHORT_S] * SEED_SHORT + [-HOLD_S] * (SEED_TASKS - SEED_SHORT))]

#: Marks of a module that runs a real loop (control plane, Ray, Prometheus).
REAL_LOOP_MARKS = [
    pytest.mark.controlplane,
    pytest.mark.ray,
    pytest.mark.prometheus,
    pytest.mark.timeout(900),
    requires_prometheus,
]

NAMESPACE = "ray"
CLUSTER = "demo"
GROUP = "cpu"
DEPLOYMENT = f"ray-demo-{GROUP}"
SCALED_OBJECT = f"ray-demo-{GROUP}"
IDLE_TIMEOUT_S = 5
SCALE_DOWN_WINDOW_S = 10
POLLING_INTERVAL_S = 2
COOLDOWN_S = 10
WORKLOAD = Path(__file__).with_name("ray_workload.py")
#: figures of the real-control-plane test, printed as one ``e2e-local:`` line (tests/conftest.py)
FIGURES: dict[str, str] = {}
_KRS = str(Path(sys.executable).with_name("keda-ray-scaler"))


# ---------------------------------------------------------------------------------------------
# what the test watches


@dataclass(frozen=True)
class DeploymentSample:
    """One observed state of a Deployment."""

    at: float  # time.time()
    name: str
    replicas: int
    ready: int


@dataclass(frozen=True)
class AgentSample:
    """One read of the agent's /metrics."""

    at: float
    victims: frozenset[str]
    busy: frozenset[str]
    pods: frozenset[str]
    wrong_victims: float


@dataclass
class Timeline:
    """Background samplers: Deployment changes (watch) and the agent's /metrics (polled)."""

    apps: client.AppsV1Api
    agent_url: str
    deployments: list[DeploymentSample] = field(default_factory=list)
    agent: list[AgentSample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Timeline:
        """Start both samplers."""
        for target in (self._watch_deployments, self._poll_agent):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def request_stop(self) -> None:
        """Ask both samplers to stop (the watch ends within its 5 s timeout); no wait."""
        self._stop.set()

    def stop(self) -> None:
        """Stop both samplers."""
        self.request_stop()
        for thread in self._threads:
            thread.join(10)

    def _watch_deployments(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # API server hiccup: re-list and watch again
                listed = self.apps.list_namespaced_deployment(NAMESPACE)
                for d in listed.items:
                    self._record(d)
                for event in watch.Watch().stream(
                    self.apps.list_namespaced_deployment,
                    NAMESPACE,
                    resource_version=listed.metadata.resource_version,
                    timeout_seconds=5,
                ):
                    self._record(event["object"])
                    if self._stop.is_set():
                        return
            time.sleep(0.2)

    def _record(self, d: Any) -> None:
        self.deployments.append(
            DeploymentSample(
                time.time(), d.metadata.name, d.spec.replicas or 0, d.status.ready_replicas or 0
            )
        )

    def _poll_agent(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(requests.RequestException):
                text = requests.get(self.agent_url, timeout=2).text
                self.agent.append(_agent_sample(time.time(), text))
            self._stop.wait(0.25)

    # -- reading -------------------------------------------------------------------------------

    def replicas(self, name: str = DEPLOYMENT, since: float = 0.0) -> list[DeploymentSample]:
        """Samples of Deployment ``name`` at or after ``since``."""
        return [s for s in list(self.deployments) if s.name == name and s.at >= since]

    def ever_victim(self, pod: str, before: float) -> bool:
        """True if the agent published ``pod`` as a victim in a sample taken before ``before``."""
        return any(pod in s.victims for s in list(self.agent) if s.at <= before)

    def busy_at(self, pod: str, at: float, margin_s: float = 1.0) -> bool:
        """True if the agent saw a resource in use on ``pod`` within ``margin_s`` of ``at``."""
        return any(pod in s.busy for s in list(self.agent) if abs(s.at - at) <= margin_s)

    def last_agent(self) -> AgentSample | None:
        """The newest agent sample."""
        return self.agent[-1] if self.agent else None


def _agent_sample(at: float, text: str) -> AgentSample:
    victims: set[str] = set()
    pods: set[str] = set()
    total: dict[str, float] = {}
    available: dict[str, float] = {}
    wrong = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "ray_scaler_node_info":  # every group's
                pods.add(labels["pod"])
                if labels.get("state") == "victim":
                    victims.add(labels["pod"])
            elif (
                sample.name == "ray_scaler_node_resource_total" and labels.get("resource") == "CPU"
            ):
                total[labels["pod"]] = sample.value
            elif (
                sample.name == "ray_scaler_node_resource_available"
                and labels.get("resource") == "CPU"
            ):
                available[labels["pod"]] = sample.value
            elif sample.name == "ray_scaler_wrong_victims_total":
                wrong += sample.value
    busy = {pod for pod, cpus in total.items() if available.get(pod, cpus) < cpus}
    return AgentSample(at, frozenset(victims), frozenset(busy), frozenset(pods), wrong)


# ---------------------------------------------------------------------------------------------
# a Ray driver


@dataclass
class Workload:
    """A running :mod:`ray_workload` driver; its JSON lines are read from its output file."""

    popen: subprocess.Popen[bytes]
    out: Path
    release_file: Path
    markers: Path
    submitted_at: float

    def events(self) -> list[dict[str, Any]]:
        """Every JSON line so far."""
        lines = self.out.read_text().splitlines() if self.out.exists() else []
        return [json.loads(line) for line in lines if line.startswith("{")]

    def count(self, event: str) -> int:
        """How many lines of that event."""
        return sum(1 for e in self.events() if e["event"] == event)

    def busy_pods(self) -> set[str]:
        """Pods running a task of this workload now: started (marker written), not done."""
        done = {e["task"] for e in self.events() if e["event"] in ("done", "failed")}
        return {
            m.read_text()
            for m in self.markers.iterdir()
            if int(m.name.split(".")[0]) not in done and not m.name.endswith(".tmp")
        }

    def release(self) -> None:
        """End the held tasks."""
        self.release_file.touch()

    def finished(self) -> bool:
        """True once the driver exited."""
        return self.popen.poll() is not None

    def wait(self, timeout_s: float) -> list[dict[str, Any]]:
        """Wait for the driver to exit; its events."""
        self.popen.wait(timeout_s)
        return self.events()

    def stop(self) -> None:
        """Stop the driver if it still runs."""
        from keda_ray_scaler.demo.raylets import stop_group

        stop_group(self.popen, 5)


# ---------------------------------------------------------------------------------------------
# the loop


@dataclass
class RealLoop:
    """Everything :func:`real_loop` started; methods for the test's steps."""

    workdir: Path
    cp: ControlPlane
    ray: RayCluster
    kubelet: RayKubelet
    prometheus: PrometheusServer
    core: client.CoreV1Api
    apps: client.AppsV1Api
    custom: client.CustomObjectsApi
    agent_port: int
    scaler_port: int
    scaler_args: list[str]
    agent_kubeconfig: Path
    spec_file: Path
    timeline: Timeline | None = None
    agent: Process | None = None
    scaler: Process | None = None
    _workloads: int = 0

    @property
    def agent_url(self) -> str:
        """The agent's /metrics."""
        return f"http://127.0.0.1:{self.agent_port}/metrics"

    # -- processes -----------------------------------------------------------------------------

    def start_agent(self) -> None:
        """``keda-ray-scaler agent`` with its ServiceAccount's token, polling Ray every second."""
        self.agent = spawn(
            "agent",
            [
                _KRS,
                "agent",
                f"--cluster-spec={self.spec_file}",
                f"--gcs-address={self.ray.gcs_address}",
                "--host=127.0.0.1",
                f"--port={self.agent_port}",
                f"--namespace={NAMESPACE}",
                f"--kubeconfig={self.agent_kubeconfig}",
                "--interval=1",
                "--settle-delay=1",
                "--log-format=json",
            ],
            self.workdir / "logs",
            self.ray.env,
        )
        agent = self.agent
        wait_until(
            lambda: requests.get(self.agent_url, timeout=1).ok,
            timeout_s=60,
            what="the agent's /metrics",
            alive=[agent],
        )

    def restart_agent_with(self, **group_fields: Any) -> None:
        """Rewrite the group's fields in the cluster spec and restart the agent (it reads the spec
        at start, as the sidecar container does)."""
        spec = yaml.safe_load(self.spec_file.read_text())
        for group in spec["workerGroups"]:
            if group["name"] == GROUP:
                group.update(group_fields)
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        self.stop_agent()
        self.start_agent()

    def stop_agent(self) -> None:
        """SIGTERM the agent by its PID."""
        if self.agent is not None:
            self.agent.stop()

    def start_scaler(self) -> None:
        """``keda-ray-scaler serve`` with the args of the chart's Deployment (installed with helm),
        its mounted TLS files and listening flags made local: what the chart runs in a pod."""
        log = self.workdir / "logs" / "scaler.log"
        offset = log.stat().st_size if log.exists() else 0
        self.scaler = spawn("scaler", [_KRS, *self.scaler_args], self.workdir / "logs")
        scaler = self.scaler
        wait_until(
            lambda: "scaler serving" in log.read_text(errors="replace")[offset:],
            timeout_s=60,
            what="the scaler",
            alive=[scaler],
        )

    def stop_scaler(self) -> None:
        """SIGTERM the scaler by its PID."""
        if self.scaler is not None:
            self.scaler.stop()

    # -- reading the cluster -------------------------------------------------------------------

    def deployment(self, name: str = DEPLOYMENT) -> tuple[int, int]:
        """``(spec.replicas, status.readyReplicas)`` of a Deployment."""
        d = self.apps.read_namespaced_deployment(name, NAMESPACE)
        return d.spec.replicas or 0, d.status.ready_replicas or 0

    def worker_pods(self, group: str = GROUP) -> dict[str, Any]:
        """Worker pods of ``group`` that are not being deleted, by name."""
        pods = self.core.list_namespaced_pod(
            NAMESPACE, label_selector=f"ray.io/cluster={CLUSTER},ray.io/group={group}"
        ).items
        return {p.metadata.name: p for p in pods if p.metadata.deletion_timestamp is None}

    def scaled_object(self, name: str = SCALED_OBJECT) -> dict[str, Any]:
        """The ScaledObject, as a dict."""
        obj: dict[str, Any] = self.custom.get_namespaced_custom_object(
            "keda.sh", "v1alpha1", NAMESPACE, "scaledobjects", name
        )
        return obj

    def condition(self, type_: str, name: str = SCALED_OBJECT) -> str:
        """A ScaledObject condition's status ("True", "False", "Unknown" or "" if absent)."""
        for c in self.scaled_object(name).get("status", {}).get("conditions", []):
            if c["type"] == type_:
                return str(c["status"])
        return ""

    def hpa_condition(self, type_: str, name: str = f"keda-hpa-{SCALED_OBJECT}") -> tuple[str, str]:
        """``(status, reason)`` of a condition of the HPA KEDA made (``("", "")`` if absent)."""
        hpa = self.cp.get_json("hpa", name, f"--namespace={NAMESPACE}")
        for c in hpa.get("status", {}).get("conditions", []):
            if c["type"] == type_:
                return str(c["status"]), str(c.get("reason", ""))
        return "", ""

    def patch_scaled_object(self, patch: dict[str, Any], name: str = SCALED_OBJECT) -> None:
        """A merge patch of the ScaledObject (as ``kubectl patch --type=merge``)."""
        self.cp.kubectl(
            "patch",
            "scaledobject",
            name,
            f"--namespace={NAMESPACE}",
            "--type=merge",
            f"--patch={json.dumps(patch)}",
        )

    def wait_replicas(
        self, count: int, timeout_s: float, *, ready: bool = True, name: str = DEPLOYMENT
    ) -> float:
        """Wait until the Deployment has ``count`` replicas (and Ready pods); the time it took."""
        start = time.monotonic()

        def reached() -> bool:
            replicas, ready_count = self.deployment(name)
            return replicas == count and (not ready or ready_count == count)

        wait_until(reached, timeout_s=timeout_s, what=f"{name} at {count} replicas", interval_s=0.2)
        return time.monotonic() - start

    # -- work ----------------------------------------------------------------------------------

    def submit(self, waves: Sequence[tuple[float, Sequence[float]]]) -> Workload:
        """Start a driver submitting ``waves`` (see :mod:`ray_workload`)."""
        self._workloads += 1
        n = self._workloads
        out = self.workdir / f"workload-{n}.jsonl"
        release = self.workdir / f"release-{n}"
        markers = self.workdir / f"markers-{n}"
        markers.mkdir()
        with (
            out.open("wb") as stdout,
            (self.workdir / "logs" / f"workload-{n}.log").open("wb") as err,
        ):
            popen = subprocess.Popen(
                [
                    sys.executable,
                    str(WORKLOAD),
                    self.ray.gcs_address,
                    self.ray.head_ip,
                    json.dumps([[a, list(d)] for a, d in waves]),
                ],
                env={**self.ray.env, "RELEASE_FILE": str(release), "MARKER_DIR": str(markers)},
                stdout=stdout,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return Workload(popen, out, release, markers, time.time())


def _overlay(workdir: Path, scaler_port: int) -> Path:
    """A user's overlay of the example Ray cluster: the scaler's address and test timings."""
    overlay = workdir / "overlay"
    overlay.mkdir()
    example = REPO / "manifests" / "examples" / "ray-cluster"
    spec = yaml.safe_load((example / "cluster.yaml").read_text())
    for group in spec["workerGroups"]:
        group["idleTimeoutSeconds"] = IDLE_TIMEOUT_S
    (overlay / "cluster.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    ops = [
        ("replace", "/spec/triggers/0/metadata/scalerAddress", f"127.0.0.1:{scaler_port}"),
        ("replace", "/spec/pollingInterval", POLLING_INTERVAL_S),
        ("replace", "/spec/cooldownPeriod", COOLDOWN_S),
        (
            "replace",
            "/spec/advanced/horizontalPodAutoscalerConfig/behavior/scaleDown/stabilizationWindowSeconds",
            SCALE_DOWN_WINDOW_S,
        ),
    ]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(example, overlay)],
        "configMapGenerator": [
            {"name": "ray-demo-cluster-spec", "behavior": "replace", "files": ["cluster.yaml"]}
        ],
        "patches": [
            {
                "target": {"kind": "ScaledObject"},
                "patch": yaml.safe_dump([{"op": op, "path": p, "value": v} for op, p, v in ops]),
            }
        ],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return overlay


def _client_tls_secret(cp: ControlPlane, workdir: Path) -> Path:
    """The namespace, and in it the Secret with KEDA's client certificate from ``_scaler_pki``
    (what the TriggerAuthentication mounts); the PKI directory."""
    cp.kubectl("create", "namespace", NAMESPACE)
    pki = workdir / "scaler-pki"
    cp.kubectl(
        "create",
        "secret",
        "generic",
        "keda-ray-scaler-client-tls",
        f"--namespace={NAMESPACE}",
        f"--from-file=ca.crt={pki / 'ca.crt'}",
        f"--from-file=tls.crt={pki / 'client.crt'}",
        f"--from-file=tls.key={pki / 'client.key'}",
    )
    return pki


def _scaler_pki(workdir: Path) -> Authority:
    """The scaler's server certificate and KEDA's client certificate, from one CA made here;
    ``scaler-tls/`` holds the server's as its Secret's keys (tls.crt, tls.key, ca.crt)."""
    pki = workdir / "scaler-pki"
    pki.mkdir()
    ca = Authority.create("keda-ray-scaler-e2e-scaler-ca")
    ca.pair.write(pki, "ca")
    server = ca.issue("keda-ray-scaler", server=True, hosts=["127.0.0.1", "localhost"])
    server.write(pki, "server")
    ca.issue("keda-operator", client=True).write(pki, "client")
    tls = workdir / "scaler-tls"
    tls.mkdir()
    server.write(tls, "tls")
    (tls / "ca.crt").write_bytes(ca.pair.cert)
    return ca


#: the chart's values in the real-control-plane test: one replica, a fast refresh; the Ray
#: cluster's TriggerAuthentication and agent RBAC come from its own kustomization
CHART_VALUES = {"replicas": "1", "refreshIntervalSeconds": "1"}


def _install_chart(cp: ControlPlane, workdir: Path, bin_dir: Path) -> None:
    """``helm upgrade --install`` the scaler's chart; the server Secret made by hand (no
    cert-manager here), as docs/getting-started.md says."""
    tls = workdir / "scaler-tls"
    cp.kubectl("create", "namespace", chart_install.NAMESPACE)
    cp.kubectl(
        "create",
        "secret",
        "generic",
        "keda-ray-scaler-tls",
        f"--namespace={chart_install.NAMESPACE}",
        *[f"--from-file={tls / name}" for name in ("tls.crt", "tls.key", "ca.crt")],
    )
    chart_install.install(str(bin_dir / "bin" / "helm"), cp.admin_kubeconfig, CHART_VALUES)


@contextlib.contextmanager
def real_loop(bin_dir: Path, *, nodes: int = 14) -> Iterator[RealLoop]:
    """Start everything (module docstring); stop everything by PID on exit."""
    workdir = Path(tempfile.mkdtemp(prefix="krs-cp-"))
    with contextlib.ExitStack() as stack:
        cp = stack.enter_context(ControlPlane.start(workdir / "cp", bin_dir))
        cp.add_nodes(nodes, prefix="worker-node", cpu="16", memory="64Gi")
        # the example's gpu-inference group: its pods must run (a pod pending forever holds demand)
        cp.add_nodes(2, prefix="gpu-node", cpu="16", memory="128Gi", gpus=1)
        ray = stack.enter_context(ray_cluster())
        api = config.new_client_from_config(config_file=str(cp.admin_kubeconfig))
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        kubelet = RayKubelet(
            ray,
            core,
            NAMESPACE,
            "ray.io/node-type=worker",
            {GROUP: GroupShape(num_cpus=10), "gpu-inference": GroupShape(num_cpus=8, num_gpus=1)},
        )
        stack.enter_context(kubelet)
        scaler_port, agent_port = free_port(), free_port()
        _scaler_pki(workdir)
        _install_chart(cp, workdir, bin_dir)
        overlay = _overlay(workdir, scaler_port)
        _client_tls_secret(cp, workdir)
        cp.kubectl("apply", "-k", str(overlay))
        (workdir / "logs").mkdir(exist_ok=True)
        (workdir / "prom").mkdir()
        prometheus = stack.enter_context(
            PrometheusServer(workdir / "prom", [f"127.0.0.1:{agent_port}"])
        )
        loop = RealLoop(
            workdir=workdir,
            cp=cp,
            ray=ray,
            kubelet=kubelet,
            prometheus=prometheus,
            core=core,
            apps=apps,
            custom=client.CustomObjectsApi(api),
            agent_port=agent_port,
            scaler_port=scaler_port,
            scaler_args=chart_install.local_serve_args(
                str(bin_dir / "bin" / "helm"),
                CHART_VALUES,
                tls_dir=workdir / "scaler-tls",
                prometheus_url=prometheus.url,
                port=scaler_port,
            ),
            agent_kubeconfig=cp.token_kubeconfig(NAMESPACE, "keda-ray-scaler-agent"),
            spec_file=overlay / "cluster.yaml",
        )
        stack.callback(loop.stop_scaler)
        stack.callback(loop.stop_agent)
        loop.start_agent()
        loop.start_scaler()
        loop.timeline = Timeline(apps, loop.agent_url).start()
        stack.callback(loop.timeline.stop)
        # First on the way out: the watch threads wind down while the processes stop.
        stack.callback(kubelet.request_stop)
        stack.callback(loop.timeline.request_stop)
        yield loop
