"""Ray's label selectors on real Ray heads: what the agent reads and what the plan makes.

Two cases, one cluster each: the project's own Ray (2.60) and Ray 2.51, the oldest whose
autoscaler v2 scales the worker group a selector asks for (its own venv from PyPI,
``tools/ray_venvs.py``; missing, the case is skipped naming ``make ray-venvs``, or fails under
``KRS_REQUIRE_SHARED=1``). Each cluster: a head with 0 CPUs and one worker of group
``on-demand`` (pod ``ray-od-a``, 10 CPUs, Ray labels ``market-type=on-demand``), and a driver of
that version's Python that submits what a test tells it; every process stopped by its PID. The
cluster spec has two CPU groups alike but for their labels, ``spot`` (the cheaper) and
``on-demand``: before, a task asking ``market-type: spot`` got a pod of whichever group was
cheapest, or counted the on-demand node's free CPUs as its capacity, and waited for ever.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.demo.raylets import stop_group
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.model import ClusterSpec, PlanningInput, Resources, WorkerGroup
from keda_ray_scaler.planner import plan
from tests.harness.ray_cluster import RayCluster, ray_cluster, read_until
from tests.harness.ray_venv import venv_or_skip
from tools import ray_venvs

pytestmark = pytest.mark.ray

SPEC = ClusterSpec(
    "demo",
    (
        WorkerGroup(
            "spot", Resources.of(CPU=10), max_replicas=10, cost=1.0, labels={"market-type": "spot"}
        ),
        WorkerGroup(
            "on-demand",
            Resources.of(CPU=10),
            max_replicas=10,
            cost=3.0,
            labels={"market-type": "on-demand"},
        ),
    ),
)
#: The project's own Ray (its venv's, the newest supported), and the oldest with selectors.
OWN = importlib.metadata.version("ray")
VERSIONS = (OWN, ray_venvs.LABELS_OLDEST)
#: The driver's answer (a task it runs waits up to 60 s), a 2-core machine busy with other work.
DEADLINE_S = 90.0
#: What the driver's answers start with (Ray may print lines of its own).
_MARK = "krs-driver "

_DRIVER = """
import json, sys
import ray

ray.init(address=sys.argv[1], _node_ip_address=sys.argv[2], log_to_driver=False,
         configure_logging=False)
MARK = "krs-driver "

def task(selector):
    @ray.remote(num_cpus=2, label_selector=selector)
    def work():
        return 1
    return work

held = {}
print(MARK + json.dumps({"ray_version": ray.__version__}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "submit":
        held[cmd["name"]] = [task(cmd["selector"]).remote() for _ in range(cmd["count"])]
        out = {"ok": True}
    elif cmd["op"] == "run":
        out = {"ok": ray.get(task(cmd["selector"]).remote(), timeout=60) == 1}
    else:  # cancel
        for ref in held.pop(cmd["name"], []):
            ray.cancel(ref, force=True)
        out = {"ok": True}
    print(MARK + json.dumps(out), flush=True)
ray.shutdown()
"""


@dataclass
class Driver:
    """A driver of the case's Ray, run by that version's Python, told what to submit."""

    popen: subprocess.Popen[str]
    log: Path

    def ask(self, **cmd: Any) -> dict[str, Any]:
        """Send one command; its answer (within DEADLINE_S)."""
        assert self.popen.stdin is not None
        self.popen.stdin.write(json.dumps(cmd) + "\n")
        self.popen.stdin.flush()
        return self.answer()

    def answer(self) -> dict[str, Any]:
        """The driver's next answer; fails with its log if it exits or is late."""
        out = self.popen.stdout
        assert out is not None
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if select.select([out], [], [], 0.5)[0]:
                line = out.readline()
                if line.startswith(_MARK):
                    answer: dict[str, Any] = json.loads(line[len(_MARK) :])
                    return answer
                if not line and self.popen.poll() is not None:
                    break
        raise RuntimeError(f"the driver did not answer: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        """Close its stdin (it shuts Ray down and exits), then stop its group by its PID."""
        if self.popen.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.popen.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(15)
        stop_group(self.popen)


@dataclass
class Case:
    """One running cluster of one Ray version and its driver."""

    version: str
    cluster: RayCluster
    driver: Driver


def start_driver(cluster: RayCluster, python: str) -> Driver:
    """The driver, by ``python``; its stderr goes to a log."""
    log = cluster.root / "driver.log"
    with log.open("w") as err:
        popen = subprocess.Popen(
            [python, "-c", _DRIVER, cluster.gcs_address, cluster.head_ip],
            env=cluster.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
            cwd=cluster.root,
        )
    return Driver(popen, log)


@pytest.fixture(scope="module", params=VERSIONS)
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    """The version's cluster and driver, stopped (by PID) after the module's tests."""
    version: str = request.param
    venv = None if version == OWN else venv_or_skip(version)
    python = sys.executable if venv is None else str(venv / "bin" / "python")
    with ray_cluster(venv=venv) as c:
        c.add_worker("ray-od-a", "on-demand", labels="market-type=on-demand")
        c.wait_for_nodes(2)
        driver = start_driver(c, python)
        try:
            assert driver.answer() == {"ray_version": version}
            yield Case(version, c, driver)
        finally:
            driver.stop()


@pytest.fixture(scope="module")
def gcs(case: Case) -> GcsConnection:
    return GcsConnection(case.cluster.gcs_address)


async def test_the_node_labels_ray_reports_are_read(gcs: GcsConnection) -> None:
    """NodeState.labels: the worker's own label, and Ray's defaults beside it."""
    state = await read_until(RayReader(gcs, SPEC), lambda s: bool(s.nodes))
    (node,) = state.nodes
    assert node.pod == "ray-od-a"
    assert dict(node.labels)["market-type"] == "on-demand"


async def test_a_spot_task_gets_a_spot_pod_not_the_free_on_demand_node(
    case: Case, gcs: GcsConnection
) -> None:
    """Three {CPU: 2} tasks asking market-type=spot: the on-demand node's 10 free CPUs do not
    count for them, the plan makes one spot pod and no on-demand pod; the reported attack's
    other half, an on-demand task, runs on the node it admits."""
    driver = case.driver
    assert driver.ask(op="submit", name="spot", selector={"market-type": "spot"}, count=3)["ok"]
    try:
        assert driver.ask(op="run", selector={"market-type": "on-demand"})["ok"]
        reader = RayReader(gcs, SPEC)
        state = await read_until(
            reader, lambda s: sum(b.count for b in s.demand.bundles if b.selectors) >= 3
        )
        (bundle,) = [b for b in state.demand.bundles if b.selectors]
        assert bundle.count == 3 and bundle.resources == Resources.of(CPU=2)
        assert [str(s) for s in bundle.selectors] == ["market-type=spot"]
        decided = plan(_input(state))
        assert decided.groups["spot"].new == 1
        assert decided.groups["on-demand"].new == 0
    finally:
        driver.ask(op="cancel", name="spot")


async def test_a_selector_no_group_satisfies_makes_no_pod(case: Case, gcs: GcsConnection) -> None:
    """market-type=gpu-spot: no group's labels satisfy it; listed unplaceable, naming the
    selector, no pod anywhere."""
    driver = case.driver
    assert driver.ask(op="submit", name="gpu", selector={"market-type": "gpu-spot"}, count=2)["ok"]
    try:
        state = await read_until(
            RayReader(gcs, SPEC), lambda s: _selectors(s) == ["market-type=gpu-spot"]
        )
        decided = plan(_input(state))
        assert all(g.new == 0 for g in decided.groups.values())
        (left,) = decided.unplaceable
        assert left.reason.value == "no_group_matches_selector"
        assert "market-type=gpu-spot" in left.detail
    finally:
        driver.ask(op="cancel", name="gpu")


def _selectors(state: RayState) -> list[str]:
    """The selectors of the demand read (the last test's, cancelled, may linger a poll)."""
    return [str(sel) for b in state.demand.bundles for sel in b.selectors]


def _input(state: RayState) -> PlanningInput:
    """What the planner gets from this poll (the agent's snapshot holds the same)."""
    return PlanningInput(SPEC, state.demand, state.nodes)
