"""Ray's label selectors on a real Ray 2.60 head: what the agent reads and what the plan makes.

One cluster for the module: a head with 0 CPUs and one worker of group ``on-demand`` (pod
``ray-od-a``, 10 CPUs, Ray labels ``market-type=on-demand``), every process stopped by its PID.
The cluster spec has two CPU groups alike but for their labels, ``spot`` (the cheaper) and
``on-demand``: before, a task asking ``market-type: spot`` got a pod of whichever group was
cheapest, or counted the on-demand node's free CPUs as its capacity, and waited for ever.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.model import ClusterSpec, PlanningInput, Resources, WorkerGroup
from keda_ray_scaler.planner import plan
from tests.harness.ray_cluster import RayCluster, client_env, ray_cluster, ray_driver, read_until

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
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    with ray_cluster() as c:
        c.add_worker("ray-od-a", "on-demand", labels="market-type=on-demand")
        c.wait_for_nodes(2)
        with client_env(c), ray_driver(c):
            yield c


@pytest.fixture(scope="module")
def gcs(cluster: RayCluster) -> GcsConnection:
    return GcsConnection(cluster.gcs_address)


def task(selector: dict[str, str]) -> Any:
    import ray

    @ray.remote(num_cpus=2, label_selector=selector)
    def work() -> int:
        return 1

    return work


async def test_the_node_labels_ray_reports_are_read(gcs: GcsConnection) -> None:
    """NodeState.labels: the worker's own label, and Ray's defaults beside it."""
    state = await read_until(RayReader(gcs, SPEC), lambda s: bool(s.nodes))
    (node,) = state.nodes
    assert node.pod == "ray-od-a"
    assert dict(node.labels)["market-type"] == "on-demand"


async def test_a_spot_task_gets_a_spot_pod_not_the_free_on_demand_node(gcs: GcsConnection) -> None:
    """Three {CPU: 2} tasks asking market-type=spot: the on-demand node's 10 free CPUs do not
    count for them, the plan makes one spot pod and no on-demand pod; the reported attack's
    other half, an on-demand task, runs on the node it admits."""
    import ray

    spot = [task({"market-type": "spot"}).remote() for _ in range(3)]
    try:
        assert ray.get(task({"market-type": "on-demand"}).remote(), timeout=60) == 1
        reader = RayReader(gcs, SPEC)
        state = await read_until(
            reader, lambda s: sum(b.count for b in s.demand.bundles if b.selectors) >= 3
        )
        (bundle,) = [b for b in state.demand.bundles if b.selectors]
        assert bundle.count == 3 and bundle.resources == Resources.of(CPU=2)
        assert any(c.key == "market-type" for s in bundle.selectors for c in s.constraints)
        decided = plan(_input(state))
        assert decided.groups["spot"].new == 1
        assert decided.groups["on-demand"].new == 0
    finally:
        for ref in spot:
            ray.cancel(ref, force=True)


async def test_a_selector_no_group_satisfies_makes_no_pod(gcs: GcsConnection) -> None:
    """market-type=gpu-spot: no group's labels satisfy it; listed unplaceable, no pod anywhere."""
    import ray

    refs = [task({"market-type": "gpu-spot"}).remote() for _ in range(2)]
    try:
        state = await read_until(
            RayReader(gcs, SPEC), lambda s: any(b.selectors for b in s.demand.bundles)
        )
        decided = plan(_input(state))
        assert all(g.new == 0 for g in decided.groups.values())
        assert decided.unplaceable
    finally:
        for ref in refs:
            ray.cancel(ref, force=True)


def _input(state: RayState) -> PlanningInput:
    """What the planner gets from this poll (the agent's snapshot holds the same)."""
    return PlanningInput(SPEC, state.demand, state.nodes)
