"""The agent's read and drain against real Ray heads of every supported version, both modes.

Each case is one Ray version (its own venv from PyPI, ``tools/ray_venvs.py``, outside the
repository) and one autoscaler mode (``RAY_enable_autoscaler_v2=0`` or ``1`` on every process):
a head with 0 CPUs and two workers of 4 CPUs standing for pods ``ray-cpu-a`` and ``ray-cpu-b``
of group ``cpu`` (KubeRay's ``RAY_CLOUD_INSTANCE_ID``/``RAY_NODE_TYPE_NAME``), and a driver run
by that venv's Python that submits 20 tasks of ``{CPU: 5}``, a PACK placement group of two
``{CPU: 8}`` bundles (neither fits a 4-CPU node: all of it stays pending) and
``request_resources(num_cpus=8)``. The agent's own reader (this process: no Ray library of
that version, only the GCS stubs of Ray 2.60) then reads the exact demand, placement group,
floor, node mapping and Ray version, and its drainer drains an idle worker, accepted, after
which the node is dead in the GCS. On Ray 2.60 the cluster runs with token authentication.

Which versions: the oldest and the newest of :data:`tools.ray_venvs.MATRIX` (``make test``,
CI), all of them with ``KRS_RAY_VERSIONS=all`` (``make test-ray-versions``). The venvs need
PyPI, which the suite's network namespace cannot reach: ``make ray-venvs`` makes them before;
a missing one skips the case naming that target, or fails it under ``KRS_REQUIRE_SHARED=1``
(CI), as the shared reference copies do (``tests/harness/shared_ref.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from keda_ray_scaler.agent.interfaces import DrainResult
from keda_ray_scaler.agent.ray.drain import RayDrainer
from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.agent.ray.ray_status import V1_REQUEST_KEY, RayState
from keda_ray_scaler.agent.ray.task_load_read import Fallback
from keda_ray_scaler.demo.raylets import stop_group
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs.client import GcsClient, GcsConnection
from keda_ray_scaler.gcs.raylet import HeadRaylet, RayletClient
from keda_ray_scaler.gcs.versions import UnsupportedRayVersion
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    PlacementGroup,
    Resources,
    Strategy,
    WorkerGroup,
)
from tests.harness.ray_cluster import RayCluster, ray_cluster
from tests.harness.ray_venv import venv_or_skip
from tools import ray_venvs

pytestmark = pytest.mark.ray

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=4), max_replicas=50),))
#: The versions whose clusters run with token authentication (Ray has it since 2.52).
TOKEN_VERSIONS = frozenset({"2.60.0"})
#: What the driver asks, as the agent must read it.
EXPECTED = Demand(
    bundles=(Bundle(Resources.of(CPU=5), 20),),
    placement_groups=(PlacementGroup(Strategy.PACK, (Resources.of(CPU=8), Resources.of(CPU=8))),),
    constraints=(Bundle(Resources.of(CPU=1), 8),),
)
#: The versions whose ``request_resources`` writes the v1 KV key under autoscaler v2 as well
#: (as measured; 2.60 writes the GCS only).
V2_ALSO_WRITES_KV = frozenset({"2.10.0", "2.30.0", "2.47.1"})
#: Ray's report delay, a 2-core machine busy with other work: generous, polled, never slept.
DEADLINE_S = 120.0

_DRIVER = """
import json, sys
import ray
from ray.autoscaler.sdk import request_resources
from ray.util.placement_group import placement_group

ray.init(address=sys.argv[1], _node_ip_address=sys.argv[2], log_to_driver=False,
         configure_logging=False)

@ray.remote(num_cpus=5)
def work():
    return 1

refs = [work.remote() for _ in range(20)]
pg = placement_group([{"CPU": 8}, {"CPU": 8}], strategy="PACK")
request_resources(num_cpus=8)
with open(sys.argv[3] + ".tmp", "w") as f:
    json.dump({"ray_version": ray.__version__}, f)
import os
os.replace(sys.argv[3] + ".tmp", sys.argv[3])
sys.stdin.read()  # hold the tasks and the group until the test closes stdin
ray.shutdown()
"""


def selected() -> tuple[str, ...]:
    """The versions this run covers: CI's two, or the whole matrix (``KRS_RAY_VERSIONS=all``)."""
    return ray_venvs.MATRIX if os.environ.get("KRS_RAY_VERSIONS") == "all" else ray_venvs.CI


CASES = [(version, v2) for version in selected() for v2 in (False, True)]


def case_id(param: tuple[str, bool]) -> str:
    return f"{param[0]}-{'v2' if param[1] else 'v1'}"


@dataclass
class Case:
    """One running cluster of one Ray version and mode, with its driver."""

    version: str
    v2: bool
    cluster: RayCluster
    driver_version: str
    timings: dict[str, float]

    @property
    def token(self) -> str | None:
        return self.cluster.auth_token


def start_driver(cluster: RayCluster, venv: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The driver, run by the venv's Python; returns it and its ``ray.__version__`` once it
    has submitted everything (its ready file written)."""
    ready = cluster.root / "driver.json"
    log = cluster.root / "driver.log"
    python = str(venv / "bin" / "python")
    with log.open("wb") as out:
        driver = subprocess.Popen(
            [python, "-c", _DRIVER, cluster.gcs_address, cluster.head_ip, str(ready)],
            env=cluster.env,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cluster.root,
        )
    deadline = time.monotonic() + DEADLINE_S
    while not ready.exists():
        if driver.poll() is not None or time.monotonic() > deadline:
            stop_group(driver)
            raise RuntimeError(f"the driver did not submit: {log.read_text()[-3000:]}")
        time.sleep(0.2)
    return driver, str(json.loads(ready.read_text())["ray_version"])


def stop_driver(driver: subprocess.Popen[bytes]) -> None:
    """Close its stdin (it shuts Ray down and exits), then stop its group by its PID."""
    if driver.stdin is not None:
        driver.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        driver.wait(15)
    stop_group(driver)


@pytest.fixture(scope="module", params=CASES, ids=case_id)
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    """The case's cluster and driver, stopped (by PID) after the case's tests."""
    version, v2 = request.param
    venv = venv_or_skip(version)
    token = secrets.token_hex(32) if version in TOKEN_VERSIONS else None
    started = time.monotonic()
    with ray_cluster(
        [("ray-cpu-a", "cpu"), ("ray-cpu-b", "cpu")],
        auth_token=token,
        num_cpus=4,
        venv=venv,
        extra_env={"RAY_enable_autoscaler_v2": "1" if v2 else "0"},
    ) as cluster:
        driver, driver_version = start_driver(cluster, venv)
        timings = {"start": time.monotonic() - started}
        try:
            yield Case(version, v2, cluster, driver_version, timings)
        finally:
            stop_driver(driver)
            print(
                f"\nray-versions: {case_id(request.param)} "
                + " ".join(f"{k}={v:.1f}s" for k, v in timings.items())
            )


def refuse(exc: UnsupportedRayVersion) -> None:
    raise AssertionError(f"a supported version refused: {exc}")


@pytest_asyncio.fixture
async def gcs(case: Case) -> AsyncIterator[GcsConnection]:
    """The agent's connection to the case's GCS, with the cluster's token (if any)."""
    connection = GcsConnection(
        case.cluster.gcs_address, factory=lambda a: GcsClient(a, token=case.token)
    )
    yield connection
    await connection.close()


async def read_until(reader: RayReader, ok: Callable[[RayState], bool]) -> RayState:
    """Poll the agent's reader until ``ok(state)`` (Ray reports demand with a delay)."""
    deadline = time.monotonic() + DEADLINE_S
    state = await reader.read()
    while not ok(state) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        state = await reader.read()
    return state


async def test_the_agent_reads_the_exact_demand_floor_nodes_and_version(
    case: Case, gcs: GcsConnection
) -> None:
    """20 x {CPU: 5}, the PACK group, the floor of 8 CPUs, both pods mapped, the version."""
    started = time.monotonic()
    reader = RayReader(gcs, SPEC, on_unsupported=refuse)
    state = await read_until(reader, lambda s: s.demand == EXPECTED and len(s.nodes) == 2)
    case.timings["read"] = time.monotonic() - started
    assert state.demand == EXPECTED
    assert [(n.pod, n.group, n.total.get("CPU")) for n in state.nodes] == [
        ("ray-cpu-a", "cpu", 40_000),
        ("ray-cpu-b", "cpu", 40_000),
    ]
    assert state.unmapped == 0
    assert all(len(n.node_id) == 56 for n in state.nodes)
    assert reader.ray_version == case.version == case.driver_version
    assert await reader.read_version() == case.version


async def test_the_floor_is_in_the_gcs_with_v2_and_in_the_kv_key_with_v1(
    case: Case, gcs: GcsConnection
) -> None:
    """Where ``request_resources`` lands: the GCS's ``cluster_resource_constraints`` with v2
    (``min_bundles`` before 2.41, at the field number of ``resource_requests``), the KV key
    ``autoscaler_resource_request`` with v1; before 2.60 a v2 driver writes the key too."""
    reply = await gcs.get().get_cluster_status(timeout_s=10)
    constraints = [
        (dict(r.request.resources_bundle), r.count)
        for c in reply.cluster_resource_state.cluster_resource_constraints
        for r in c.resource_requests
    ]
    assert constraints == ([({"CPU": 1.0}, 8)] if case.v2 else [])
    raw = await gcs.get().internal_kv_get(V1_REQUEST_KEY, None, timeout_s=10)
    if case.v2 and case.version not in V2_ALSO_WRITES_KV:
        assert raw is None
    else:
        assert raw is not None and json.loads(raw) == [{"CPU": 1}] * 8


async def test_the_token_is_needed_where_token_auth_is_on_and_ignored_where_it_is_not(
    case: Case, gcs: GcsConnection
) -> None:
    """Ray 2.60 with token authentication: no token is UNAUTHENTICATED and a wrong one refused,
    each said clearly; the agent's reader with the token reads. A head without token
    authentication (every other version here) answers a client that sends one all the same."""
    if case.token is None:
        client = GcsClient(case.cluster.gcs_address, token="not-needed")
        try:
            reply = await client.get_cluster_status(timeout_s=10)
        finally:
            await client.close()
        assert len(reply.cluster_resource_state.node_states) >= 3  # the head and two workers
        return
    bare = GcsClient(case.cluster.gcs_address)
    try:
        with pytest.raises(RayError, match="Ray token authentication failed, no token was sent"):
            await bare.get_cluster_status(timeout_s=10)
    finally:
        await bare.close()
    wrong = GcsClient(case.cluster.gcs_address, token="not-" + case.token)
    try:
        with pytest.raises(RayError, match="the token sent was refused"):
            await wrong.internal_kv_get(b"CLUSTER_METADATA", b"cluster", timeout_s=10)
    finally:
        await wrong.close()
    reader = RayReader(gcs, SPEC, on_unsupported=refuse)
    assert (await reader.read()).nodes


async def test_the_head_raylet_answers_get_resource_load_so_r1_reads_without_fallback(
    case: Case, gcs: GcsConnection
) -> None:
    """Rule R1 on every version: the head raylet found through GetAllNodeInfo (2.10-2.47 ignore
    2.60's node selector and answer every node) answers GetResourceLoad, and the demand R1
    reads is the driver's, with no fallback. With token authentication (2.60) the raylet
    checks the token too: without it the read falls back to the GCS's sum, counted as
    ``raylet``, and the poll still succeeds."""
    raylet = HeadRaylet(lambda a: RayletClient(a, token=case.token))
    reader = RayReader(gcs, SPEC, on_unsupported=refuse, raylet=raylet)
    state = await read_until(reader, lambda s: s.demand == EXPECTED and s.fallback is None)
    assert (state.fallback, state.fallback_error) == (None, "")
    assert state.demand == EXPECTED
    assert raylet.address is not None and raylet.address.host == case.cluster.head_ip
    if case.token is None:
        return
    bare = RayReader(gcs, SPEC, raylet=HeadRaylet(lambda a: RayletClient(a, token=None)))
    state = await read_until(bare, lambda s: s.demand == EXPECTED)
    assert state.fallback is Fallback.RAYLET
    assert "Ray token authentication failed, no token was sent" in state.fallback_error
    assert state.demand == EXPECTED  # the GCS's sum, the poll not failed


async def test_an_idle_worker_drain_is_accepted_and_its_node_is_dead_in_the_gcs(
    case: Case, gcs: GcsConnection
) -> None:
    """DrainNode with a deadline (a minute ahead) for idle termination: accepted at once, and
    the node is DEAD in the GCS afterwards (the agent then reports its pod as dead)."""
    reader = RayReader(gcs, SPEC, on_unsupported=refuse)
    state = await read_until(reader, lambda s: len(s.nodes) == 2)
    victim = next(n for n in state.nodes if n.pod == "ray-cpu-b")
    started = time.monotonic()
    deadline_ms = int(time.time() * 1000) + 60_000
    result = await RayDrainer(gcs.get).drain(victim.node_id, "test: idle", deadline_ms)
    assert result == DrainResult(True, "")
    state = await read_until(reader, lambda s: "ray-cpu-b" in s.dead)
    case.timings["drain"] = time.monotonic() - started
    assert [n.pod for n in state.nodes] == ["ray-cpu-a"]
    assert state.dead == frozenset({"ray-cpu-b"})
    assert state.demand == EXPECTED  # still read whole after the drain
