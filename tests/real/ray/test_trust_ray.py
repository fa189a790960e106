"""Ray's input, untrusted, on a real Ray 2.60 head (issue 35, findings 3 and 4): a task writes
``not json`` into the KV key ``request_resources()`` writes, and a second raylet claims a busy
worker's pod name from another address.

One cluster for the module: a head with 0 CPUs and two workers standing for pods ``ray-cpu-a``
and ``ray-cpu-b`` of group ``cpu`` (KubeRay's ``RAY_CLOUD_INSTANCE_ID``/``RAY_NODE_TYPE_NAME``),
10 CPUs each, on 127.0.0.3 and 127.0.0.4; every process stopped by its PID.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.builder import build_agent
from keda_ray_scaler.agent.loop import LoopSettings
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.agent.ray.ray_status import V1_REQUEST_KEY
from keda_ray_scaler.agent.ray.refusals import Refusal
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.agent.settings import AgentSettings
from keda_ray_scaler.agent.victims.choose import Choice, GroupView, choose
from keda_ray_scaler.agent.victims.marks import VictimSettings
from keda_ray_scaler.agent.victims.verdicts import Outcome
from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.decisions import GroupPlan
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.model import Bundle, ClusterSpec, Resources, WorkerGroup, WorkerNode
from tests.harness.ray_cluster import RayCluster, client_env, ray_cluster, ray_driver, read_until

pytestmark = pytest.mark.ray

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
BUSY = "ray-cpu-a"
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    """The module's Ray cluster, this process its client and driver."""
    with (
        ray_cluster([(BUSY, "cpu"), ("ray-cpu-b", "cpu")]) as c,
        client_env(c),
        ray_driver(c),
    ):
        yield c


@pytest.fixture(scope="module")
def gcs(cluster: RayCluster) -> GcsConnection:
    """One GCS connection for the module."""
    return GcsConnection(cluster.gcs_address)


def blocker_class() -> Any:
    """An actor holding a whole worker's 10 CPUs."""
    import ray

    @ray.remote(num_cpus=10)
    class Blocker:
        def node(self) -> str:
            return str(ray.get_runtime_context().get_node_id())

    return Blocker


async def test_not_json_in_the_request_resources_key_is_counted_and_the_poll_goes_on(
    gcs: GcsConnection,
) -> None:
    """A task writes ``not json`` where ``request_resources()`` writes (v1's KV key, no
    namespace). Before: every poll failed (``snapshot_success`` 0 for as long as the key lives).
    Now the agent's next poll succeeds with the 20 pending ``{CPU: 5}`` tasks, no floor, and the
    value is counted by reason."""
    import ray
    from ray.autoscaler.sdk import request_resources

    @ray.remote(num_cpus=1)
    def poison() -> bool:
        from ray.experimental.internal_kv import _internal_kv_put

        return bool(_internal_kv_put(V1_REQUEST_KEY, b"not json", overwrite=True))

    @ray.remote(num_cpus=5)
    def work() -> int:
        return 1

    ray.get(poison.remote())
    blockers = [blocker_class().remote() for _ in range(2)]
    refs: list[Any] = []
    try:
        assert len(set(ray.get([b.node.remote() for b in blockers]))) == 2
        refs = [work.remote() for _ in range(20)]
        registry = CollectorRegistry()
        settings = AgentSettings(loop=LoopSettings(scale_down=False))
        agent = build_agent(SPEC, gcs, SystemClock(), settings, registry=registry)
        deadline = time.monotonic() + DEADLINE_S
        snap = await agent.loop.poll_once()
        while snap.input.demand.bundles != (Bundle(Resources.of(CPU=5), 20),):
            assert time.monotonic() < deadline, f"success={snap.success} {snap.input.demand}"
            await asyncio.sleep(0.25)
            snap = await agent.loop.poll_once()
        assert snap.success
        assert snap.input.demand.constraints == ()
        labels = {"cluster": "demo", "reason": Refusal.V1_REQUEST_NOT_JSON.value}
        refused = registry.get_sample_value("ray_scaler_agent_ray_input_refused_total", labels)
        assert refused is not None and refused >= 1
        assert registry.get_sample_value(
            "ray_scaler_agent_poll_errors_total", {"cluster": "demo"}
        ) == (0.0)
    finally:
        for ref in refs:
            ray.cancel(ref, force=True)
        for b in blockers:
            ray.kill(b)
        request_resources(bundles=[])


def candidate(nodes: tuple[WorkerNode, ...], contested: frozenset[str]) -> Choice:
    """The victim protocol's choice of the busy pod, on what the reader returned; no idle
    timeout, so an idle node would be taken at once."""
    gp = GroupPlan("cpu", target=1, desired=1, floor=0, current=2, busy=1, new=0, removable=(BUSY,))
    view = GroupView(
        gp,
        {BUSY: PodInfo(BUSY, group="cpu")},
        {n.pod: n for n in nodes},
        contested=contested,
        idle_timeout_s=0.0,
    )
    return choose(view, VictimSettings())


async def test_a_raylet_claiming_a_busy_workers_name_from_another_address_is_no_pod(
    cluster: RayCluster, gcs: GcsConnection
) -> None:
    """``ray start`` with ``RAY_CLOUD_INSTANCE_ID=ray-cpu-a`` on 127.0.0.5 while ray-cpu-a
    (127.0.0.3) runs an actor on all its CPUs. Before: the newest node seen for a pod won, so
    the idle impostor stood for ray-cpu-a and the victim protocol took it. Now, with the pods'
    IPs known, the impostor maps to no pod (counted) and ray-cpu-a keeps its own, busy node;
    with them or without (no pod source: both nodes name ray-cpu-a) the pod is contested, never
    a victim while the impostor runs."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    own_id = cluster.node_id(BUSY)
    pod_refs = [PodRef(w.pod, w.group, (w.ip,)) for w in cluster.workers.values()]
    blocker = blocker_class().options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(own_id, soft=False)
    )
    held = blocker.remote()
    assert ray.get(held.node.remote()) == own_id
    reader = RayReader(gcs, SPEC, pods=lambda: pod_refs)
    blind = RayReader(gcs, SPEC)  # no pod source: no pod IP known
    for r in (reader, blind):  # both see ray-cpu-a's own node first, busy
        await read_until(r, lambda s: any(n.available.get("CPU") == 0 for n in s.nodes))
    impostor = cluster.add_worker(
        "impostor", "cpu", instance_id=BUSY, temp_dir=cluster.root / "impostor"
    )
    try:
        cluster.wait_for_nodes(4)
        state = await read_until(reader, lambda s: len(s.nodes) == 3)
        mine = {n.pod: n for n in state.nodes if n.group}
        assert sorted(mine) == [BUSY, "ray-cpu-b"]
        assert (mine[BUSY].node_id, mine[BUSY].available.get("CPU")) == (own_id, 0)
        [stranger] = [n for n in state.nodes if not n.group]
        assert stranger.pod == stranger.node_id != own_id
        assert state.unmapped == 1
        assert [r.reason for r in state.refused] == [Refusal.NODE_IP_MISMATCH]
        assert state.contested == frozenset({BUSY})
        for r in (reader, blind):
            seen = await read_until(r, lambda s: BUSY in s.contested)
            assert seen.contested == frozenset({BUSY})
            choice = candidate(await r.nodes(), r.contested())
            assert choice.chosen == ()
            assert [(v.pod, v.outcome) for v in choice.verdicts] == [(BUSY, Outcome.TWO_RAY_NODES)]
    finally:
        impostor.stop()
        ray.kill(held)
