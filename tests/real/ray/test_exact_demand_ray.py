"""Rule R1 against a real Ray 2.60: a task starting on a fresh node is never pending and running.

A head with 0 CPUs (as in KubeRay) and a driver on it (in its own process, as the demo's)
that submits ``TASKS`` tasks of ``{CPU: 5}`` that run for a minute; they wait at the head
(nothing fits) until worker nodes of 10 CPUs join, one at a time, and the head spills them
there, where each waits for a fresh worker process: at once, or 30 s late (the demo's
``--worker-start-delay``, a ``worker_process_setup_hook`` that sleeps, as a ``runtime_env``
that installs packages would). Meanwhile two readers poll every ~200 ms, one after the other:
the agent's R1 read (the default) and the old read of the GCS's sum alone (``DemandRead.GCS``),
until every task has run for a while. For each poll,
pending tasks (the demand's ``{CPU: 5}`` bundles) plus running tasks (CPUs in use on the
workers / 5) is at most ``TASKS`` with R1; the old read's highest sum is printed (it exceeds
``TASKS`` when the GCS's cut of the head's load is older than a worker's usage, which depends on
the timing of the GCS's 1 s pulls: seen, not asserted).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from keda_ray_scaler.agent.ray.ray_state import DemandRead, RayReader
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.demo.raylets import stop_group
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.model import ClusterSpec, Resources, WorkerGroup
from tests.harness.ray_cluster import RayCluster, ray_cluster

pytestmark = pytest.mark.ray

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
SHAPE = Resources.of(CPU=5)
TASKS = 8
WORKERS = 4  # 2 tasks each
POLL_S = 0.2
DEADLINE_S = 240.0


@dataclass
class Seen:
    """One reader's polls: (seconds since the burst, pending, running) each."""

    polls: list[tuple[float, int, int]] = field(default_factory=list)
    fallbacks: int = 0

    def add(self, at_s: float, state: RayState) -> None:
        pending = sum(b.count for b in state.demand.bundles if b.resources == SHAPE)
        used = sum(n.total.get("CPU") - n.available.get("CPU") for n in state.nodes)
        self.polls.append((at_s, pending, used // SHAPE.get("CPU")))
        self.fallbacks += state.fallback is not None

    @property
    def peak(self) -> int:
        return max((p + r for _, p, r in self.polls), default=0)

    def over(self, limit: int) -> list[tuple[float, int, int]]:
        return [(round(t, 1), p, r) for t, p, r in self.polls if p + r > limit]


@pytest.fixture
def cluster() -> Iterator[RayCluster]:
    """A head alone (workers join during the test)."""
    with ray_cluster([]) as c:
        yield c


_DRIVER = """
import sys, time
import ray
from keda_ray_scaler.demo.workload import SLOW_START_HOOK, START_DELAY_ENV

delay = float(sys.argv[3])
env = {"env_vars": {START_DELAY_ENV: str(delay)}, "worker_process_setup_hook": SLOW_START_HOOK}
ray.init(address=sys.argv[1], _node_ip_address=sys.argv[2], log_to_driver=False,
         runtime_env=env if delay > 0 else None)

@ray.remote(num_cpus=5)
def hold():
    time.sleep(60)

refs = [hold.remote() for _ in range(int(sys.argv[4]))]
print("submitted", flush=True)
sys.stdin.read()
"""


def start_driver(cluster: RayCluster, start_delay_s: float) -> subprocess.Popen[bytes]:
    """A driver on the head (as the demo's): TASKS tasks of {CPU: 5}, each a minute long, whose
    workers start ``start_delay_s`` late (the demo's slow-start hook)."""
    log = (cluster.root / "driver.log").open("wb")
    args = [cluster.gcs_address, cluster.head_ip, str(start_delay_s), str(TASKS)]
    return subprocess.Popen(
        [sys.executable, "-c", _DRIVER, *args],
        env=cluster.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.PIPE,
        start_new_session=True,
        cwd=cluster.root,
    )


def add_workers(cluster: RayCluster, count: int) -> None:
    """Start ``count`` workers of 10 CPUs, one at a time (raylets starting together race)."""
    for n in range(count):
        cluster.add_worker(f"ray-cpu-{n}", "cpu", num_cpus=10)
        cluster.wait_for_nodes(2 + n)


async def poll_both(
    exact: RayReader, old: RayReader, seen: dict[str, Seen], started: float, done: asyncio.Event
) -> None:
    """Read with both readers every ~POLL_S until ``done``."""
    while not done.is_set():
        for name, reader in (("exact", exact), ("gcs", old)):
            seen[name].add(time.monotonic() - started, await reader.read())
        await asyncio.sleep(POLL_S)


async def wait_for_demand(reader: RayReader) -> None:
    """Until the driver's tasks show (its start takes a while on a busy machine)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        state = await reader.read()
        if sum(b.count for b in state.demand.bundles if b.resources == SHAPE) >= TASKS:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"the driver's {TASKS} tasks never showed as demand")


@pytest.mark.parametrize("start_delay_s", [0.0, 30.0], ids=["start-now", "start-30s"])
async def test_r1_never_counts_a_task_both_pending_and_running(
    cluster: RayCluster, start_delay_s: float
) -> None:
    gcs = GcsConnection(cluster.gcs_address)
    exact = RayReader(gcs, SPEC)
    old = RayReader(gcs, SPEC, demand=DemandRead.GCS)
    seen = {"exact": Seen(), "gcs": Seen()}
    driver = start_driver(cluster, start_delay_s)
    done = asyncio.Event()
    poller: asyncio.Task[None] | None = None
    try:
        await wait_for_demand(exact)
        started = time.monotonic()
        poller = asyncio.create_task(poll_both(exact, old, seen, started, done))
        await asyncio.to_thread(add_workers, cluster, WORKERS)
        while time.monotonic() - started < DEADLINE_S:
            polls = seen["exact"].polls
            if polls and polls[-1][2] == TASKS and len(polls) > 10:
                break
            await asyncio.sleep(1.0)
        await asyncio.sleep(start_delay_s + 5.0)  # until the last workers run their tasks
    finally:
        done.set()
        if poller is not None:
            await poller
        stop_group(driver)
        await gcs.close()
    for name, s in seen.items():
        print(
            f"\nexact-demand: start {start_delay_s:g}s: {name}: {len(s.polls)} polls, peak "
            f"pending+running {s.peak} of {TASKS}, over (s, pending, running) at "
            f"{s.over(TASKS)}, fallbacks {s.fallbacks}"
        )
    assert seen["exact"].polls[-1][2] == TASKS, seen["exact"].polls[-5:]
    assert seen["exact"].fallbacks == 0
    assert seen["exact"].over(TASKS) == []
