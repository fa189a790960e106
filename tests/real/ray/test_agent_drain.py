"""Draining real Ray nodes, and the agent command, with Ray token authentication ON.

One cluster for the module, started with ``RAY_AUTH_MODE=token`` and a random token (HOME is a
temp dir, so no token file of the machine is involved): a head with 0 CPUs and three workers of
10 CPUs standing for pods ``ray-cpu-a``, ``ray-cpu-b`` and ``ray-cpu-c`` of group ``cpu``. This
process is a client and driver with the same token. Tests run in file order: the accepted drain
(which ends a node) comes last.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from keda_ray_scaler.agent.interfaces import Drainer, DrainResult
from keda_ray_scaler.agent.ray.drain import RayDrainer
from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs.client import GcsClient, GcsConnection
from keda_ray_scaler.model import ClusterSpec, NodeStatus, Resources, WorkerGroup, WorkerNode
from tests.harness.ray_cluster import RayCluster, client_env, free_port, ray_cluster, ray_driver

pytestmark = pytest.mark.ray

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
NOT_IDLE = "The node to be idle terminated is no longer idle."


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    """The module's token-auth Ray cluster, this process its client and driver."""
    with (
        ray_cluster(
            [("ray-cpu-a", "cpu"), ("ray-cpu-b", "cpu"), ("ray-cpu-c", "cpu")],
            auth_token=secrets.token_hex(32),
        ) as c,
        client_env(c),
        ray_driver(c),
    ):
        yield c


@pytest.fixture(scope="module")
def gcs(cluster: RayCluster) -> GcsConnection:
    """One GCS connection for the module."""
    return GcsConnection(cluster.gcs_address)


async def node_of(reader: RayReader, pod: str, ok: Callable[[WorkerNode], bool]) -> WorkerNode:
    """Pod ``pod``'s node once ``ok(node)`` holds (60 s at most)."""
    deadline = time.monotonic() + 60
    while True:
        found = [n for n in await reader.nodes() if n.pod == pod]
        if (found and ok(found[0])) or time.monotonic() > deadline:
            assert found, f"{pod} has no Ray node"
            return found[0]
        await asyncio.sleep(0.25)


def scrape(port: int) -> list[str]:
    """The agent's /metrics lines."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return [line for line in r.read().decode().splitlines() if not line.startswith("#")]


def run_agent(
    cluster: RayCluster, tmp_path: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], int]:
    """``keda-ray-scaler agent --no-scale-down`` against ``cluster``, as a subprocess."""
    spec = tmp_path / "cluster.yaml"
    spec.write_text(
        json.dumps(
            {
                "cluster": "demo",
                "workerGroups": [{"name": "cpu", "resources": {"CPU": 10}, "maxReplicas": 50}],
            }
        )
    )
    port = free_port()
    cmd = [sys.executable, "-m", "keda_ray_scaler", "agent", "--cluster-spec", str(spec)]
    cmd += ["--gcs-address", cluster.gcs_address, "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--interval", "0.5", "--ray-timeout", "3", "--no-scale-down"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "agent.log").open("wb")
    )
    return proc, port


def wait_for_line(port: int, proc: subprocess.Popen[bytes], line: str, log: Path) -> list[str]:
    """Scrape until ``line`` shows (60 s at most: Ray's client may wait 30 s to connect)."""
    deadline = time.monotonic() + 60
    lines: list[str] = []
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            lines = scrape(port)
        except OSError:
            lines = []
        if line in lines:
            return lines
        time.sleep(0.5)
    raise AssertionError(f"{line!r} not in {lines}\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM the agent by its PID and return its exit code."""
    proc.terminate()
    try:
        return proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(15)


def test_the_drainer_implements_the_port(gcs: GcsConnection) -> None:
    """RayDrainer satisfies ports.Drainer (runtime-checkable protocol)."""
    assert isinstance(RayDrainer(gcs.get), Drainer)


def test_agent_command_exports_nodes_with_token_auth(cluster: RayCluster, tmp_path: Path) -> None:
    """The agent subprocess with the cluster's token polls Ray and serves fresh metrics."""
    proc, port = run_agent(cluster, tmp_path, cluster.env)
    try:
        lines = wait_for_line(
            port, proc, 'ray_scaler_snapshot_success{cluster="demo"} 1.0', tmp_path / "agent.log"
        )
        pods = sorted(
            line.split('pod="')[1].split('"')[0]
            for line in lines
            if line.startswith("ray_scaler_node_info{")
        )
        assert pods == ["ray-cpu-a", "ray-cpu-b", "ray-cpu-c"]
        assert (
            'ray_scaler_node_resource_total{cluster="demo",pod="ray-cpu-a",resource="CPU"} 10.0'
            in lines
        )
    finally:
        assert stop(proc) == 0


@pytest.mark.parametrize("token", ["wrong", "missing"])
def test_agent_command_with_a_wrong_token_reports_failure(
    cluster: RayCluster, tmp_path: Path, token: str
) -> None:
    """A wrong or missing token (a pod without the Secret's env): the agent keeps running,
    success 0, poll errors counted, no fresh data; its log says why on one line per poll,
    with no traceback."""
    env = cluster.env | {"RAY_AUTH_TOKEN": secrets.token_hex(32)}
    if token == "missing":
        env = {k: v for k, v in cluster.env.items() if not k.startswith("RAY_AUTH_")}
    proc, port = run_agent(cluster, tmp_path, env)
    try:
        lines = wait_for_line(
            port,
            proc,
            'ray_scaler_agent_poll_errors_total{cluster="demo"} 1.0',
            tmp_path / "agent.log",
        )
        assert 'ray_scaler_snapshot_success{cluster="demo"} 0.0' in lines
        assert 'ray_scaler_snapshot_timestamp_seconds{cluster="demo"} 0.0' in lines
        assert not [line for line in lines if line.startswith("ray_scaler_node_info{")]
    finally:
        assert stop(proc) == 0
    log = (tmp_path / "agent.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    failed = [line for line in log.splitlines() if "ray poll failed" in line]
    assert failed and all("uthentication" in line for line in failed), log[-3000:]


async def test_the_gcs_client_reads_a_token_auth_head_only_with_its_token(
    cluster: RayCluster,
) -> None:
    """The agent's own gRPC client against Ray 2.60 with ``RAY_AUTH_MODE=token``: with the
    cluster's token it reads the status and the KV; without one, or with a wrong one, the GCS
    answers UNAUTHENTICATED and the error says so."""
    assert cluster.auth_token is not None
    good = GcsClient(cluster.gcs_address, token=cluster.auth_token)
    try:
        reply = await good.get_cluster_status(timeout_s=5)
        assert await good.internal_kv_get(b"no-such-key", None, timeout_s=5) is None
    finally:
        await good.close()
    pods = {n.instance_id for n in reply.cluster_resource_state.node_states if n.instance_id}
    assert pods == {"ray-cpu-a", "ray-cpu-b", "ray-cpu-c"}
    for token in (None, secrets.token_hex(32)):
        bad = GcsClient(cluster.gcs_address, token=token)
        try:
            with pytest.raises(RayError, match="Ray token authentication failed") as caught:
                await bad.get_cluster_status(timeout_s=5)
        finally:
            await bad.close()
        sent = "the token sent was refused" if token else "no token was sent"
        assert sent in str(caught.value)


async def test_busy_worker_drain_is_rejected_with_rays_message(
    cluster: RayCluster, gcs: GcsConnection
) -> None:
    """A worker running a task refuses an idle-termination drain and stays alive."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    reader = RayReader(gcs, SPEC)
    node = await node_of(reader, "ray-cpu-b", lambda n: n.available.get("CPU") == 100_000)

    @ray.remote(num_cpus=1)
    def hold() -> None:
        time.sleep(300)

    ref = hold.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False)
    ).remote()
    try:
        await node_of(reader, "ray-cpu-b", lambda n: n.available.get("CPU") == 90_000)
        result = await RayDrainer(gcs.get).drain(node.node_id, "test: busy", 0)
        assert result == DrainResult(False, NOT_IDLE)
        after = await node_of(reader, "ray-cpu-b", lambda n: True)
        assert (after.node_id, after.status) == (node.node_id, NodeStatus.RUNNING)
    finally:
        ray.cancel(ref, force=True)


async def test_a_task_landing_on_a_victim_after_selection_makes_the_drain_fail(
    cluster: RayCluster, gcs: GcsConnection
) -> None:
    """Selected idle, then given work before the drain: Ray rejects it, the node stays."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    reader = RayReader(gcs, SPEC)
    victim = await node_of(reader, "ray-cpu-c", lambda n: n.idle_s > 0)  # selection: idle

    @ray.remote(num_cpus=2)
    def late_work() -> None:
        time.sleep(300)

    ref = late_work.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(victim.node_id, soft=False)
    ).remote()
    try:
        await node_of(reader, "ray-cpu-c", lambda n: n.idle_s == 0)
        result = await RayDrainer(gcs.get).drain(victim.node_id, "test: victim", 0)
        assert result == DrainResult(False, NOT_IDLE)
        after = await node_of(reader, "ray-cpu-c", lambda n: True)
        assert (after.node_id, after.status) == (victim.node_id, NodeStatus.RUNNING)
    finally:
        ray.cancel(ref, force=True)


async def test_a_fenced_busy_node_keeps_its_task_and_gets_no_new_work(
    cluster: RayCluster, gcs: GcsConnection
) -> None:
    """The fence (a pod being deleted): Ray accepts a preemption drain of a busy node, the
    node turns DRAINING, its task runs on, and a task that prefers the node runs elsewhere."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    reader = RayReader(gcs, SPEC)
    # Free first: the test before cancelled its task on this node, and a cancel frees the CPU
    # later. This wait did not cure the test's CI-only failure ("no Ray node" after the fence,
    # session 29): its cause is not found, and the module runs in e2e-local only (Makefile).
    node = await node_of(reader, "ray-cpu-b", lambda n: n.available.get("CPU") == 100_000)
    assert node.status == NodeStatus.RUNNING

    @ray.remote(num_cpus=1)
    def hold() -> None:
        time.sleep(300)

    @ray.remote(num_cpus=1)
    def where() -> str:
        return str(ray.get_runtime_context().get_node_id())

    held = hold.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False)
    ).remote()
    try:
        await node_of(reader, "ray-cpu-b", lambda n: n.available.get("CPU") == 90_000)
        assert await RayDrainer(gcs.get).fence(node.node_id, "test: pod deleted") == (
            DrainResult(True, "")
        )
        fenced = await node_of(reader, "ray-cpu-b", lambda n: n.status == NodeStatus.DRAINING)
        assert (fenced.node_id, fenced.status) == (node.node_id, NodeStatus.DRAINING)
        assert ray.wait([held], timeout=0)[0] == []  # still running
        prefers = NodeAffinitySchedulingStrategy(node.node_id, soft=True)
        ran_on = await asyncio.to_thread(
            ray.get, where.options(scheduling_strategy=prefers).remote(), timeout=60
        )
        assert ran_on != node.node_id
    finally:
        ray.cancel(held, force=True)


async def test_a_malformed_node_id_is_refused_before_ray_accepts_it_as_nil(
    gcs: GcsConnection,
) -> None:
    """Ray decodes a malformed id to the nil id and says "accepted"; the drainer refuses it."""
    result = await RayDrainer(gcs.get).drain("not-hex", "test: bad id", 0)
    assert result == DrainResult(False, "not a Ray node id (56 hex digits): 'not-hex'")


async def test_a_failed_drain_call_is_a_result_not_an_exception() -> None:
    """A GCS that cannot be reached gives a rejected DrainResult carrying the error."""

    def unreachable() -> Any:
        raise RayError("cannot connect to GCS 127.0.0.1:1: timed out")

    result = await RayDrainer(unreachable).drain("ab" * 28, "test", 0)
    assert result == DrainResult(
        False, "drain_node failed: RayError: cannot connect to GCS 127.0.0.1:1: timed out"
    )


async def test_accepted_idle_drain_ends_the_node_at_once_but_not_the_pods_process(
    cluster: RayCluster, gcs: GcsConnection
) -> None:
    """Finding: the node goes DEAD at once, the raylet exits 0, `ray start --block` stays.

    So a drained pod's container neither exits nor restarts by itself: it idles until the
    ReplicaSet deletes it, whatever the drain deadline (here one minute ahead). The exit code is
    read from the raylet's zombie while its parent (`ray start`) is held with SIGSTOP.
    """
    reader = RayReader(gcs, SPEC)
    node = await node_of(reader, "ray-cpu-a", lambda n: n.idle_s > 0)
    pod = cluster.workers["ray-cpu-a"]
    [raylet] = _raylet_pids(pod.pid)
    assert _parent(raylet) == pod.pid
    os.kill(pod.pid, signal.SIGSTOP)  # `ray start` cannot reap the raylet meanwhile
    try:
        deadline_ms = int(time.time() * 1000) + 60_000
        result = await RayDrainer(gcs.get).drain(node.node_id, "test: idle", deadline_ms)
        assert result == DrainResult(True, "")
        state = await reader.read()
        assert "ray-cpu-a" not in [n.pod for n in state.nodes]  # DEAD at once, not exported
        status = await _zombie_status(raylet)
    finally:
        os.kill(pod.pid, signal.SIGCONT)
    assert (os.WIFEXITED(status), os.WEXITSTATUS(status)) == (True, 0)
    assert "Raylet graceful shutdown triggered with death info: reason: AUTOSCALER_DRAIN_IDLE" in (
        _raylet_out(cluster, pod.ip).read_text()
    )
    # `ray start --block` checks its children every second and exits 1 on an unexpected exit
    # code: give it three rounds, then it must still be running.
    await asyncio.sleep(3)
    assert pod.alive()
    assert _raylet_pids(pod.pid) == []
    assert "exited unexpectedly" not in pod.log.read_text()


def _stat(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` from field 3 (state) on."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _parent(pid: int) -> int:
    return int(_stat(pid)[1])


async def _zombie_status(pid: int) -> int:
    """The wait status of ``pid`` once it is a zombie (``/proc/<pid>/stat`` field 52)."""
    deadline = time.monotonic() + 30
    while True:
        fields = _stat(pid)
        if fields[0] == "Z" or time.monotonic() > deadline:
            assert fields[0] == "Z", f"raylet {pid} still {fields[0]}"
            return int(fields[49])  # field 52 of stat; fields here start at field 3
        await asyncio.sleep(0.1)


def _raylet_pids(group: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=,comm=", "-g", str(group)], capture_output=True, text=True
    ).stdout
    return [int(line.split()[0]) for line in out.splitlines() if line.split()[1:] == ["raylet"]]


def _raylet_out(cluster: RayCluster, ip: str) -> Path:
    logs = cluster.root / "ray" / "session_latest" / "logs"
    for path in sorted(logs.glob("raylet*.out")):
        if f"node_ip_address={ip}" in path.read_text() or f"{ip}" in path.read_text()[:20000]:
            return path
    raise AssertionError(f"no raylet log for {ip} in {os.listdir(logs)}")
