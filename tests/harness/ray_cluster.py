"""A real Ray cluster on 127.0.0.1 for tests: one head, worker raylets standing for pods.

Reusable by any test module (and the demo)::

    with ray_cluster(workers=[("ray-cpu-a", "cpu")]) as cluster:
        cluster.gcs_address             # "127.0.0.1:<port>"
        cluster.env                     # environment to talk to it (HOME, RAY_AUTH_*)
        cluster.add_worker("ray-cpu-b", "cpu", num_cpus=10)

The head has ``--num-cpus 0`` (as in KubeRay, it runs nothing). Each worker is
``ray start --block`` (the command of a KubeRay worker container) with
``RAY_CLOUD_INSTANCE_ID`` = pod name and ``RAY_NODE_TYPE_NAME`` = group in its environment, the
variables KubeRay sets from the downward API. Every process gets its own session (process group)
and is stopped by its own PID. ``HOME``, Ray's temp dir and logs live under one temp dir, so
nothing depends on (or writes to) the real home directory. With ``auth_token`` set, the
cluster runs with Ray token authentication (``RAY_AUTH_MODE=token``); otherwise it is
explicitly ``disabled``, whatever token files exist. With ``venv``, the processes are that
venv's ``ray`` (another Ray version, ``tools/ray_venvs.py``) and the fixture asks the GCS for
nodes with the agent's own client (no Ray library of the test process's version involved).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from keda_ray_scaler.demo.raylets import (
    distinct_free_ports,
    free_port,
    signal_group,
    stop_group,
)
from keda_ray_scaler.errors import RayError

_RAY = str(Path(sys.executable).with_name("ray"))
# Waits end on the event (every node alive); the bound is only for a cluster that never forms.
_START_TIMEOUT_S = 180.0
_STOP_TIMEOUT_S = 15.0
#: What ``ray start`` prints when its raylet did not register with the GCS within Ray's own
#: limit (``ray/_private/node.py``: ``raylet_start_wait_time_s = 30``, not configurable). On a
#: busy machine (CI: two cores, two test workers, control planes beside) that limit is sometimes
#: passed and ``ray start`` exits; a kubelet restarts such a container, and so does the fixture.
_RAY_START_TIMED_OUT = "timed out during startup"
_START_RESTARTS = 2


@dataclass
class RayProcess:
    """One ``ray start --block`` process: the head or a worker "pod"."""

    pod: str
    group: str
    popen: subprocess.Popen[bytes]
    log: Path
    ip: str = ""
    #: ``ray start`` arguments and extra environment, to start it again the same way.
    args: tuple[str, ...] = ()
    extra_env: dict[str, str] = field(default_factory=dict)
    #: Times it was started again after Ray's own startup limit (``_RAY_START_TIMED_OUT``).
    restarts: int = 0

    @property
    def pid(self) -> int:
        """The PID of ``ray start --block`` (the pod's main process)."""
        return self.popen.pid

    def alive(self) -> bool:
        """True while ``ray start --block`` runs."""
        return self.popen.poll() is None

    def stop(self) -> int | None:
        """SIGTERM the process group led by our PID, then SIGKILL it; return the exit code."""
        return stop_group(self.popen, _STOP_TIMEOUT_S)


@dataclass
class RayCluster:
    """A head plus worker raylets; build it with :func:`ray_cluster`."""

    root: Path
    auth_token: str | None = None
    port: int = 0
    head_ip: str = "127.0.0.2"
    head: RayProcess | None = None
    workers: dict[str, RayProcess] = field(default_factory=dict)
    #: Another Ray's venv (its ``bin/ray``); None: this interpreter's Ray.
    venv: Path | None = None
    #: More environment for every process of the cluster (e.g. ``RAY_enable_autoscaler_v2``).
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def ray(self) -> str:
        """The ``ray`` command of the cluster's Ray."""
        return str(self.venv / "bin" / "ray") if self.venv is not None else _RAY

    @property
    def gcs_address(self) -> str:
        """``host:port`` of the GCS."""
        return f"{self.head_ip}:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """Environment for any process that talks to this cluster (Ray CLI, drivers, agent)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("RAY_AUTH", "RAY_CLOUD_INSTANCE_ID", "RAY_NODE_TYPE_NAME"))
        }
        env.update(
            HOME=str(self.root / "home"),
            RAY_USAGE_STATS_ENABLED="0",
            RAY_ADDRESS=self.gcs_address,
            # Keep the raylets light: no prestarted Python workers.
            RAY_num_prestart_python_workers="0",
            RAY_prestart_worker_first_driver="0",
            # Stop at once on SIGTERM instead of Ray's 30 s "drain before shutdown".
            RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0",
        )
        env.update(self.extra_env)
        if self.auth_token is None:
            env["RAY_AUTH_MODE"] = "disabled"
        else:
            env["RAY_AUTH_MODE"] = "token"
            env["RAY_AUTH_TOKEN"] = self.auth_token
        return env

    def _spawn(
        self, name: str, group: str, args: Sequence[str], extra_env: dict[str, str]
    ) -> RayProcess:
        log = self.root / f"{name}.log"
        log.write_bytes(b"")
        proc = RayProcess(pod=name, group=group, popen=self._popen(log, args, extra_env), log=log)
        proc.args, proc.extra_env = tuple(args), extra_env
        return proc

    def _popen(
        self, log: Path, args: Sequence[str], extra_env: dict[str, str]
    ) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            return subprocess.Popen(
                [self.ray, "start", "--block", "--disable-usage-stats", *args],
                env=self.env | extra_env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.root,
            )

    def _restarted(self, proc: RayProcess) -> bool:
        """Start ``proc`` again (same arguments, same log) if Ray's own startup limit ended it."""
        if proc.restarts >= _START_RESTARTS or _RAY_START_TIMED_OUT not in _tail(proc.log):
            return False
        signal_group(proc.pid, signal.SIGKILL)  # a raylet it left behind, if any
        proc.restarts += 1
        print(
            f"ray_cluster: {proc.pod}: ray start passed Ray's startup limit; "
            f"started again ({proc.restarts} of {_START_RESTARTS})",
            file=sys.stderr,
        )
        proc.popen = self._popen(proc.log, proc.args, proc.extra_env)
        return True

    def start_head(self) -> None:
        """Start the head (0 CPUs, no dashboard) and wait for the GCS.

        Every port is given, all distinct (:func:`distinct_free_ports` says why)."""
        self.port, dashboard, agent, metrics = distinct_free_ports(4)
        (self.root / "home").mkdir(parents=True, exist_ok=True)
        self.head = self._spawn(
            "head",
            "headgroup",
            [
                "--head",
                f"--port={self.port}",
                f"--node-ip-address={self.head_ip}",
                "--num-cpus=0",
                "--include-dashboard=false",
                f"--dashboard-port={dashboard}",
                f"--dashboard-agent-listen-port={agent}",
                f"--metrics-export-port={metrics}",
                f"--temp-dir={self.root / 'ray'}",
                *(self._venv_head_args() if self.venv is not None else self._head_args()),
            ],
            {},
        )
        self.wait_for_nodes(1)

    @staticmethod
    def _head_args() -> list[str]:
        return [f"--ray-client-server-port={free_port()}"]

    @staticmethod
    def _venv_head_args() -> list[str]:
        # The venvs' plain `ray` has no Ray Client (`ray[client]`): no server, no port. No
        # autoscaler monitor, as KubeRay starts a head with autoscaling on (the autoscaler is a
        # sidecar; here the agent): Ray's own v2 monitor, given no autoscaling config, exits at
        # once on a local cluster (2.10-2.30: its read-only provider's defaults file is missing
        # from the wheel), and `ray start --block` then stops the head.
        return ["--no-monitor"]

    def add_worker(
        self,
        pod: str,
        group: str,
        num_cpus: int = 10,
        resources: str | None = None,
        labelled: bool = True,
        ip: str | None = None,
        num_gpus: int = 0,
        temp_dir: Path | None = None,
        instance_id: str | None = None,
        labels: str | None = None,
    ) -> RayProcess:
        """Start one worker raylet standing for pod ``pod`` of worker group ``group``.

        ``labelled=False`` leaves out ``RAY_CLOUD_INSTANCE_ID``/``RAY_NODE_TYPE_NAME`` (a node
        only its IP can map); worker ``n`` (from 0) listens on ``127.0.0.<3 + n>`` unless ``ip``
        says otherwise. A ``temp_dir`` of its own (as a pod has) lets workers start at once.
        ``instance_id`` is the pod name the raylet claims when it is not ``pod`` (an impostor).
        ``labels``: the node's Ray labels, ``ray start --labels`` (``k1=v1,k2=v2``, Ray 2.49+).
        """
        ip = ip or f"127.0.0.{3 + len(self.workers)}"
        args = [
            f"--address={self.gcs_address}",
            f"--node-ip-address={ip}",
            f"--num-cpus={num_cpus}",
            f"--dashboard-agent-listen-port={free_port()}",
        ]
        if resources is not None:
            args.append(f"--resources={resources}")
        if num_gpus:
            args.append(f"--num-gpus={num_gpus}")
        if temp_dir is not None:
            args.append(f"--temp-dir={temp_dir}")
        if labels is not None:
            args.append(f"--labels={labels}")
        claimed = instance_id or pod
        labels = {"RAY_CLOUD_INSTANCE_ID": claimed, "RAY_NODE_TYPE_NAME": group} if labelled else {}
        proc = self._spawn(pod, group, args, labels)
        proc.ip = ip
        self.workers[pod] = proc
        return proc

    def alive_nodes(self) -> list[dict[str, object]]:
        """Alive Ray nodes as ``{"node_id", "ip", "group"}`` dicts (asked in a subprocess, or
        with the agent's client when the cluster is another venv's Ray)."""
        if self.venv is not None:
            return _grpc_nodes(self.gcs_address, self.auth_token)
        return _gcs_nodes(self.gcs_address, self.env)

    def node_id(self, pod: str) -> str:
        """The Ray node id (hex) of worker ``pod``, found by its IP."""
        ip = self.workers[pod].ip
        return next(str(n["node_id"]) for n in self.alive_nodes() if n["ip"] == ip)

    def wait_for_nodes(self, count: int, timeout_s: float = _START_TIMEOUT_S) -> None:
        """Block until ``count`` nodes (head included) are alive; fail with the logs otherwise."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            procs = [self.head, *self.workers.values()]
            for proc in procs:
                if proc is None or proc.alive():
                    continue
                if not self._restarted(proc):
                    raise RuntimeError(f"{proc.pod} exited: {_tail(proc.log)}")
                deadline = max(deadline, time.monotonic() + timeout_s)
            try:
                if len(self.alive_nodes()) >= count:
                    return
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired, RayError):
                pass  # the GCS is not up yet, or the machine too busy to ask it in time
            time.sleep(0.5)
        raise TimeoutError(f"Ray: {count} nodes not alive after {timeout_s}s")

    def stop(self) -> None:
        """Stop every worker, then the head, each by its own PID."""
        for proc in self.workers.values():
            if proc.alive():
                signal_group(proc.pid, signal.SIGTERM)
        for proc in self.workers.values():
            proc.stop()
        if self.head is not None:
            self.head.stop()


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


_NODES_SCRIPT = """
import json, sys
from ray._raylet import GcsClient
from ray.core.generated import gcs_pb2
client = GcsClient(address=sys.argv[1])
out = []
for node_id, info in client.get_all_node_info(timeout=5).items():
    if info.state == gcs_pb2.GcsNodeInfo.ALIVE:
        out.append({"node_id": node_id.hex(), "ip": info.node_manager_address,
                    "group": info.labels.get("ray.io/node-group", "")})
print(json.dumps(out))
"""


def _gcs_nodes(address: str, env: dict[str, str]) -> list[dict[str, object]]:
    # A subprocess, so the test process's own Ray/auth state is never touched by the fixture.
    import json

    out = subprocess.run(
        [sys.executable, "-c", _NODES_SCRIPT, address],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,  # importing Ray alone took 30 s on CI's busy cores (stop 47)
    ).stdout
    nodes: list[dict[str, object]] = json.loads(out)
    return nodes


def _grpc_nodes(address: str, token: str | None) -> list[dict[str, object]]:
    # The agent's own GCS client, in a thread of its own (a test's event loop may be running).
    from keda_ray_scaler.gcs.client import GcsClient

    async def ask() -> list[dict[str, object]]:
        client = GcsClient(address, token=token)
        try:
            reply = await client.get_cluster_status(timeout_s=10)
        finally:
            await client.close()
        return [
            {"node_id": n.node_id.hex(), "ip": n.node_ip_address, "group": n.ray_node_type_name}
            for n in reply.cluster_resource_state.node_states
            if n.status != 2  # DEAD
        ]

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, ask()).result()


@contextlib.contextmanager
def ray_cluster(
    workers: Sequence[tuple[str, str]] = (),
    auth_token: str | None = None,
    num_cpus: int = 10,
    unlabelled: Sequence[tuple[str, str]] = (),
    venv: Path | None = None,
    extra_env: dict[str, str] | None = None,
) -> Iterator[RayCluster]:
    """A head plus one worker per ``(pod, group)``, all stopped (by PID) on exit.

    ``unlabelled`` workers are started after the others, without the KubeRay variables;
    ``venv`` and ``extra_env`` as :class:`RayCluster`'s.
    """
    root = Path(tempfile.mkdtemp(prefix="krs-ray-"))  # short: Ray's unix socket paths
    cluster = RayCluster(
        root=root, auth_token=auth_token, venv=venv, extra_env=dict(extra_env or {})
    )
    try:
        cluster.start_head()
        all_workers = [(p, g, True) for p, g in workers] + [(p, g, False) for p, g in unlabelled]
        for n, (pod, group, labelled) in enumerate(all_workers, start=2):
            # One at a time: raylets starting together race for the same socket names.
            cluster.add_worker(pod, group, num_cpus=num_cpus, labelled=labelled)
            cluster.wait_for_nodes(n)
        yield cluster
    finally:
        cluster.stop()
        if not os.environ.get("KRS_KEEP_RAY"):  # keep logs for debugging when set
            shutil.rmtree(root, ignore_errors=True)


_CLIENT_VARS = ("HOME", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")


@contextlib.contextmanager
def client_env(cluster: RayCluster) -> Iterator[None]:
    """Make THIS process a client of ``cluster`` (HOME, auth mode and token), then restore.

    Ray caches its auth mode and token in C++ singletons: both are refreshed on entry and exit.
    """
    from ray._private.authentication_test_utils import reset_auth_token_state

    saved = {k: os.environ.get(k) for k in _CLIENT_VARS}
    env = cluster.env
    for k in _CLIENT_VARS:
        if k in env:
            os.environ[k] = env[k]
        else:
            os.environ.pop(k, None)
    reset_auth_token_state()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        reset_auth_token_state()


@contextlib.contextmanager
def ray_driver(cluster: RayCluster) -> Iterator[None]:
    """``ray.init`` this process as a driver of ``cluster`` (inside :func:`client_env`)."""
    import ray

    ray.init(
        address=cluster.gcs_address,
        _node_ip_address=cluster.head_ip,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        yield
    finally:
        ray.shutdown()


_State = TypeVar("_State")


class _Reader(Protocol[_State]):
    def read(self) -> Awaitable[_State]: ...


async def read_until(
    reader: _Reader[_State],
    ok: Callable[[_State], bool],
    deadline_s: float = 30.0,
    every_s: float = 0.25,
) -> _State:
    """Poll ``reader`` (the agent's RayReader) until ``ok(state)`` or ``deadline_s``; the last
    state either way. Ray reports demand and use with its resource-report delay."""
    deadline = time.monotonic() + deadline_s
    state = await reader.read()
    while not ok(state) and time.monotonic() < deadline:
        await asyncio.sleep(every_s)
        state = await reader.read()
    return state
