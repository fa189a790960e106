"""Ray processes on 127.0.0.1 for the demo: one head and worker raylets standing for pods.

Each process is ``ray start --block`` (the command of a KubeRay container) in its own session,
so stopping it by its PID's process group also stops its raylet and workers. Workers get
``RAY_CLOUD_INSTANCE_ID`` (the pod name) and ``RAY_NODE_TYPE_NAME`` (the group), as the example
manifests set them from the downward API. Everything (HOME, Ray's temp dir, logs) lives under
one directory the caller owns.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog

log = structlog.get_logger(__name__)

_STOP_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    return distinct_free_ports(1)[0]


#: Ports handed out (Linux's default ``ip_local_port_range`` starts at 32768): below the range
#: the kernel picks outgoing connections' source ports from, so none of those takes one.
PORT_RANGE: Final = (20000, 32767)


def distinct_free_ports(n: int) -> list[int]:
    """``n`` TCP ports free on 127.0.0.1 now, all different (held open together while chosen),
    drawn from :data:`PORT_RANGE`.

    A Ray head is given every port it would otherwise pick at random: left to itself Ray 2.10
    picked the GCS's own port for ``metrics_export`` and refused to start (CI, 2026-11-27). Not
    a port the kernel chose (``bind(0)``): that is one of its ephemeral ports, and a Ray
    process's own outgoing connection took one as its source port before the head bound it
    (``ray_client_server`` "Address already in use", CI, 2026-11-28)."""
    draw = random.Random()
    with contextlib.ExitStack() as stack:
        ports: list[int] = []
        while len(ports) < n:
            sock = stack.enter_context(socket.socket())
            port = draw.randint(*PORT_RANGE)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            ports.append(port)
        return ports


@dataclass
class RayProcess:
    """One ``ray start --block`` process."""

    name: str
    popen: subprocess.Popen[bytes]
    log_file: Path

    @property
    def pid(self) -> int:
        """PID of ``ray start --block``, also its process group id."""
        return self.popen.pid

    def alive(self) -> bool:
        """True while the process runs."""
        return self.popen.poll() is None

    def terminate(self) -> None:
        """SIGTERM the process group (Ray then drains the node, up to its own grace period)."""
        if self.popen.poll() is None:
            signal_group(self.pid, signal.SIGTERM)

    def stop(self, grace_s: float = _STOP_TIMEOUT_S) -> int | None:
        """SIGTERM the process group, wait ``grace_s``, SIGKILL what is left; the exit code."""
        return stop_group(self.popen, grace_s)


def stop_group(popen: subprocess.Popen[bytes], grace_s: float = _STOP_TIMEOUT_S) -> int | None:
    """Stop the process group ``popen`` leads (started with ``start_new_session``).

    SIGTERM, wait ``grace_s``, then SIGKILL whatever is left of the group (a raylet and its
    workers share it), so no child outlives its ``ray start``; returns the exit code.
    """
    if popen.poll() is None:
        signal_group(popen.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(grace_s)
    signal_group(popen.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        popen.wait(_STOP_TIMEOUT_S)
    return popen.returncode


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to a process group; a group already gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class RayProcesses:
    """Starts and stops the demo's Ray processes; :meth:`stop_all` at exit."""

    def __init__(self, ray_bin: Path, root: Path, base_env: Mapping[str, str]) -> None:
        self._ray = ray_bin
        self.root = root
        self.port = 0
        self._base_env = dict(base_env)
        self.head: RayProcess | None = None
        self.workers: dict[str, RayProcess] = {}

    @property
    def gcs_address(self) -> str:
        """``127.0.0.1:<port>`` of the GCS."""
        return f"127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """Environment for any process talking to this cluster: HOME under root, no auth."""
        env = {
            k: v
            for k, v in self._base_env.items()
            if not k.startswith(("RAY_AUTH", "RAY_CLOUD_INSTANCE_ID", "RAY_NODE_TYPE_NAME"))
        }
        env.update(
            HOME=str(self.root / "home"),
            RAY_USAGE_STATS_ENABLED="0",
            RAY_AUTH_MODE="disabled",
            RAY_num_prestart_python_workers="0",
            RAY_prestart_worker_first_driver="0",
        )
        if self.port:
            env["RAY_ADDRESS"] = self.gcs_address
        return env

    def start_head(self) -> RayProcess:
        """The head: no CPUs (as in KubeRay it runs no work), no dashboard."""
        (self.root / "home").mkdir(parents=True, exist_ok=True)
        self.port, client, agent, metrics = distinct_free_ports(4)
        self.head = self._spawn(
            "head",
            [
                "--head",
                f"--port={self.port}",
                "--node-ip-address=127.0.0.1",
                "--num-cpus=0",
                "--include-dashboard=false",
                f"--ray-client-server-port={client}",
                f"--dashboard-agent-listen-port={agent}",
                f"--metrics-export-port={metrics}",
                f"--temp-dir={self.root / 'ray'}",
            ],
            {},
        )
        return self.head

    def start_worker(self, pod: str, group: str, num_cpus: int) -> RayProcess:
        """One worker raylet standing for pod ``pod`` of worker group ``group``."""
        proc = self._spawn(
            pod,
            [
                f"--address={self.gcs_address}",
                "--node-ip-address=127.0.0.1",
                f"--num-cpus={num_cpus}",
                "--include-log-monitor=false",
                f"--dashboard-agent-listen-port={free_port()}",
            ],
            {"RAY_CLOUD_INSTANCE_ID": pod, "RAY_NODE_TYPE_NAME": group},
        )
        self.workers[pod] = proc
        return proc

    def sockets(self) -> tuple[int, int]:
        """Plasma store and raylet sockets bound in the session so far (one each per raylet).

        Raylets on one host pick their socket names by "first free name" in the shared
        session directory, a check-then-bind race: start the next one only once both of the
        previous one's sockets exist.
        """
        directory = self.root / "ray" / "session_latest" / "sockets"
        try:
            names = [p.name for p in directory.iterdir()]
        except OSError:
            return 0, 0
        return (
            sum(1 for n in names if n.startswith("plasma_store")),
            sum(1 for n in names if n.startswith("raylet")),
        )

    def exited(self) -> list[str]:
        """Workers whose ``ray start --block`` is no longer running."""
        return [pod for pod, proc in self.workers.items() if not proc.alive()]

    def restart_worker(self, pod: str, group: str, num_cpus: int) -> RayProcess:
        """Start a worker again in the same "pod" (the kubelet restarting a container)."""
        old = self.workers.pop(pod, None)
        if old is not None:
            old.stop()
        return self.start_worker(pod, group, num_cpus)

    def stop_worker(self, pod: str) -> None:
        """Stop one worker by its PID (its process group)."""
        proc = self.workers.pop(pod, None)
        if proc is not None:
            proc.stop()

    def stop_all(self, grace_s: float = 5.0) -> None:
        """Every worker, then the head, each by its own PID: SIGTERM all, then SIGKILL."""
        workers = list(self.workers.values())
        self.workers.clear()
        for proc in workers:
            proc.terminate()
        for proc in workers:
            proc.stop(grace_s)
        if self.head is not None:
            self.head.stop(grace_s)
            self.head = None

    def _spawn(self, name: str, args: Sequence[str], extra_env: Mapping[str, str]) -> RayProcess:
        log_file = self.root / f"{name}.log"
        with log_file.open("wb") as out:
            popen = subprocess.Popen(
                [str(self._ray), "start", "--block", "--disable-usage-stats", *args],
                env=self.env | dict(extra_env),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.root,
            )
        log.debug("ray process started", name=name, pid=popen.pid)
        return RayProcess(name, popen, log_file)
