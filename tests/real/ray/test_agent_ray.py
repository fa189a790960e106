"""The agent's Ray side against a real Ray 2.60 cluster on loopback (token auth off), read
through the agent's own GCS client.

One cluster for the module: a head with 0 CPUs, two workers standing for pods ``ray-cpu-a`` and
``ray-cpu-b`` of group ``cpu`` (KubeRay's ``RAY_CLOUD_INSTANCE_ID``/``RAY_NODE_TYPE_NAME`` set),
and one worker without them (only its IP can map it), each with 10 CPUs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from bench.vs_ray_idle import IdleWatch
from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.agent_health import HealthProbe
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.http.metrics_server import start_metrics_server
from keda_ray_scaler.agent.loop import AgentLoop, LoopSettings
from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.agent.ray.resource_names import StandInLog
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.decisions import UnplaceableReason
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs.client import GcsClient, GcsConnection
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    NodeStatus,
    PlacementGroup,
    Resources,
    Strategy,
    WorkerGroup,
    total_count,
)
from keda_ray_scaler.planner import plan
from keda_ray_scaler.schema import decoding
from tests.harness.control_plane import wait_until
from tests.harness.ray_cluster import RayCluster, client_env, free_port, ray_cluster, ray_driver

pytestmark = pytest.mark.ray

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
UNLABELLED = "ray-cpu-c"


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    """The module's Ray cluster, this process its client and driver."""
    with (
        ray_cluster(
            [("ray-cpu-a", "cpu"), ("ray-cpu-b", "cpu")], unlabelled=[(UNLABELLED, "cpu")]
        ) as c,
        client_env(c),
        ray_driver(c),
    ):
        yield c


@pytest.fixture(scope="module")
def gcs(cluster: RayCluster) -> GcsConnection:
    """One GCS connection for the module."""
    return GcsConnection(cluster.gcs_address)


async def read_until(
    reader: RayReader, ok: Callable[[RayState], bool], timeout_s: float = 30.0
) -> RayState:
    """Poll until ``ok(state)``; Ray reports demand with its resource-report delay."""
    deadline = time.monotonic() + timeout_s
    state = await reader.read()
    while not ok(state) and time.monotonic() < deadline:
        await asyncio.sleep(0.25)
        state = await reader.read()
    return state


@pytest.fixture
def busy_cluster(cluster: RayCluster) -> Iterator[list[Any]]:
    """Every worker's 10 CPUs held by an actor, so new demand stays pending; freed after."""
    import ray

    @ray.remote(num_cpus=10)
    class Blocker:
        def node(self) -> str:
            return str(ray.get_runtime_context().get_node_id())

    blockers = [Blocker.remote() for _ in range(3)]
    assert len(set(ray.get([b.node.remote() for b in blockers]))) == 3
    yield blockers
    for b in blockers:
        ray.kill(b)


async def test_worker_nodes_map_to_pods_and_groups_and_the_head_is_no_worker(
    gcs: GcsConnection,
) -> None:
    """Labelled workers map to pod and group; the IP-only one is exported with group "", counted."""
    reader = RayReader(gcs, SPEC)
    state = await read_until(reader, lambda s: len(s.nodes) == 3)
    mapped = sorted((n.pod, n.group, n.total.get("CPU")) for n in state.nodes if n.group)
    assert mapped == [("ray-cpu-a", "cpu", 100_000), ("ray-cpu-b", "cpu", 100_000)]
    unmapped = [n for n in state.nodes if not n.group]
    assert len(unmapped) == 1
    assert unmapped[0].pod == unmapped[0].node_id
    assert len(unmapped[0].node_id) == 56
    assert state.unmapped == 1
    assert all(not k.startswith("node:") for n in state.nodes for k, _ in n.total)
    assert [n.pod for n in await reader.nodes()] == ["ray-cpu-a", "ray-cpu-b"]


async def test_a_node_without_kuberay_variables_maps_by_pod_ip(
    cluster: RayCluster, gcs: GcsConnection
) -> None:
    """The IP fallback: a node with no instance id or type name maps through the pod IP."""
    ip = cluster.workers[UNLABELLED].ip
    reader = RayReader(gcs, SPEC, pods=lambda: [PodRef(UNLABELLED, "cpu", (ip,))])
    state = await read_until(reader, lambda s: len(s.nodes) == 3)
    assert sorted(n.pod for n in state.nodes) == ["ray-cpu-a", "ray-cpu-b", "ray-cpu-c"]
    assert {n.group for n in state.nodes} == {"cpu"}
    assert state.unmapped == 0


async def test_idle_seconds_come_from_the_raw_node_state(gcs: GcsConnection) -> None:
    """Idle workers report Ray's idle_duration_ms (not the parsed status' 0): the reader keeps
    it as the time each became idle, so each is idle >= 2 s now."""
    reader = RayReader(gcs, SPEC)
    state = await read_until(reader, lambda s: all(n.idle_at(time.time()) >= 2.0 for n in s.nodes))
    assert all(0 < n.idle_since_s < time.time() - 2.0 for n in state.nodes)
    assert {n.status for n in state.nodes} == {NodeStatus.RUNNING}


async def test_busy_nodes_have_no_idle_time_and_no_free_cpu(
    gcs: GcsConnection, busy_cluster: list[Any]
) -> None:
    """A node whose CPUs are all held is idle 0 s with 0 CPU available."""
    reader = RayReader(gcs, SPEC)
    state = await read_until(reader, lambda s: all(n.idle_since_s == 0 for n in s.nodes))
    now = time.time()
    assert [(n.idle_at(now), n.available.get("CPU")) for n in state.nodes] == [(0.0, 0)] * 3
    # their workers run: Ray says so in node_activity, so no pod is "starting"
    state = await read_until(reader, lambda s: not s.starting)
    assert state.starting == frozenset()


async def test_twenty_pending_tasks_of_five_cpus_export_as_one_shape_with_count_20(
    gcs: GcsConnection, busy_cluster: list[Any]
) -> None:
    """The seed example: 20 pending @ray.remote(num_cpus=5) tasks are ONE shape CPU=5 x 20."""
    import ray

    @ray.remote(num_cpus=5)
    def work() -> int:
        return 1

    refs = [work.remote() for _ in range(20)]
    try:
        reader = RayReader(gcs, SPEC)
        # Ray reports lease requests first and the caller's backlog a report later.
        state = await read_until(reader, lambda s: total_count(s.demand.bundles) >= 20)
        assert state.demand.bundles == (Bundle(Resources.of(CPU=5), 20),)

        registry = CollectorRegistry()
        loop = AgentLoop(
            SPEC,
            reader,
            SnapshotCollector(registry),
            AgentMetrics(registry, "demo"),
            SystemClock(),
            LoopSettings(scale_down=False),
        )
        snapshot = await loop.poll_once()
        assert snapshot.success
        text = generate_latest(registry).decode()
        line = (
            'ray_scaler_demand_bundles{cluster="demo",kind="task",shape="CPU=5",strategy=""} 20.0'
        )
        assert line in text.splitlines()
        assert 'ray_scaler_snapshot_success{cluster="demo"} 1.0' in text.splitlines()
    finally:
        for ref in refs:
            ray.cancel(ref, force=True)


#: Names Ray 2.60 accepts for a custom resource, each a way to break a label or a shape.
HOSTILE_NAMES = ("a,b", "c;d", "e=f", "g\nh", "x" * 5_000)
#: Ray 2.60 refuses a non-ASCII resource name when the task is submitted (the unit tests of
#: schema.encode_name cover unicode all the same).
UNICODE_NAME = "GPU型-ü"


def scrape_url(url: str) -> schema.ClusterSnapshot:
    """The agent's /metrics over HTTP, decoded as the scaler's scrape source decodes it."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    samples = [
        schema.Sample(s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith(schema.PREFIX)
    ]
    return decoding.decode(samples)["demo"]


async def snapshot_until(
    url: str, ok: Callable[[schema.ClusterSnapshot], bool], timeout_s: float = 30.0
) -> schema.ClusterSnapshot:
    """Scrape until ``ok``: Ray reports demand with its resource-report delay."""
    deadline = time.monotonic() + timeout_s
    snap = await asyncio.to_thread(scrape_url, url)
    while not ok(snap) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        snap = await asyncio.to_thread(scrape_url, url)
    return snap


def http_status(url: str) -> int:
    """The status of a GET."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def names_asked(snap: schema.ClusterSnapshot) -> set[str]:
    """Every resource name in the snapshot's task demand."""
    return {n for b in snap.input.demand.bundles for n, _ in b.resources}


async def test_hostile_resource_names_beside_the_seed_never_stop_the_agent(
    gcs: GcsConnection, busy_cluster: list[Any]
) -> None:
    """Tasks asking `,` `;` `=` newline and 5,000-character resources, beside the seed.

    The agent's loop polls on: the scrape carries the seed (10 new pods) and each hostile bundle
    (exact names, the long one as its stand-in) as unplaceable, /healthz answers 200; after the
    hostile tasks end the loop still polls successfully and exports the seed alone. A unicode
    name Ray itself refuses at submission.
    """
    import ray

    @ray.remote(num_cpus=5)
    def work() -> int:
        return 1

    @ray.remote(num_cpus=1)
    def odd() -> int:
        return 1

    stand_ins = {*HOSTILE_NAMES[:-1], schema.stand_in(HOSTILE_NAMES[-1])}
    with pytest.raises(UnicodeEncodeError):
        odd.options(resources={UNICODE_NAME: 1}).remote()
    hostile = [odd.options(resources={name: 1}).remote() for name in HOSTILE_NAMES]
    refs = [work.remote() for _ in range(20)]
    registry = CollectorRegistry()
    clock = SystemClock()
    loop = AgentLoop(
        SPEC,
        RayReader(gcs, SPEC),
        SnapshotCollector(registry, StandInLog(registry, "demo")),
        AgentMetrics(registry, "demo"),
        clock,
        LoopSettings(interval_s=1.0, scale_down=False),
    )
    server = start_metrics_server("127.0.0.1", 0, registry, HealthProbe(loop, clock, 30.0))
    base = f"http://127.0.0.1:{server.server_port}"
    polling = asyncio.create_task(loop.run())
    try:
        snap = await snapshot_until(
            base + "/metrics",
            lambda s: total_count(s.input.demand.bundles) >= 25 and stand_ins <= names_asked(s),
        )
        assert snap.success
        assert Bundle(Resources.of(CPU=5), 20) in snap.input.demand.bundles
        assert names_asked(snap) == {"CPU", *stand_ins}
        decided = plan(snap.input)
        assert decided.groups["cpu"].new == 10
        unplaceable = {n for u in decided.unplaceable for n, _ in u.resources} - {"CPU"}
        assert unplaceable == stand_ins
        assert {u.reason for u in decided.unplaceable} == {UnplaceableReason.NO_GROUP_FITS}
        assert await asyncio.to_thread(http_status, base + "/healthz") == 200
        for ref in hostile:
            ray.cancel(ref, force=True)
        snap = await snapshot_until(base + "/metrics", lambda s: names_asked(s) == {"CPU"})
        assert snap.success
        assert snap.input.demand.bundles == (Bundle(Resources.of(CPU=5), 20),)
        assert plan(snap.input).groups["cpu"].new == 10
        lines = generate_latest(registry).decode().splitlines()
        assert 'ray_scaler_agent_poll_errors_total{cluster="demo"} 0.0' in lines
        assert 'ray_scaler_agent_resource_names_stood_in_total{cluster="demo"} 1.0' in lines
        assert not polling.done()
    finally:
        polling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await polling
        server.shutdown()
        server.server_close()
        for ref in [*hostile, *refs]:
            ray.cancel(ref, force=True)


async def test_pending_placement_groups_export_strategy_and_ordered_bundles(
    gcs: GcsConnection, busy_cluster: list[Any]
) -> None:
    """Pending placement groups come with strategy and bundles; identical ones are counted."""
    from ray.util.placement_group import placement_group, remove_placement_group

    pgs = [
        placement_group([{"CPU": 4}, {"CPU": 4}], strategy="STRICT_SPREAD"),
        placement_group([{"CPU": 2, "GPU": 1}, {"CPU": 1}], strategy="PACK"),
        placement_group([{"CPU": 6}, {"CPU": 3}], strategy="STRICT_PACK"),
        placement_group([{"CPU": 6}, {"CPU": 3}], strategy="STRICT_PACK"),
    ]
    try:
        reader = RayReader(gcs, SPEC)
        # tasks an earlier test cancelled may linger in Ray's demand for a moment
        state = await read_until(
            reader, lambda s: len(s.demand.placement_groups) == 3 and not s.demand.bundles
        )
        assert state.demand.placement_groups == (
            PlacementGroup(Strategy.PACK, (Resources.of(CPU=2, GPU=1), Resources.of(CPU=1))),
            PlacementGroup(
                Strategy.STRICT_PACK, (Resources.of(CPU=6), Resources.of(CPU=3)), count=2
            ),
            PlacementGroup(Strategy.STRICT_SPREAD, (Resources.of(CPU=4), Resources.of(CPU=4))),
        )
        assert state.demand.bundles == ()
    finally:
        for pg in pgs:
            remove_placement_group(pg)


async def test_request_resources_constraints_from_the_v1_kv_key(gcs: GcsConnection) -> None:
    """request_resources() without autoscaler v2 writes the KV key; it becomes constraints."""
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=[{"GPU": 1}] * 4 + [{"CPU": 3}])
    try:
        reader = RayReader(gcs, SPEC)
        state = await read_until(reader, lambda s: bool(s.demand.constraints))
        assert state.demand.constraints == (
            Bundle(Resources.of(CPU=3), 1),
            Bundle(Resources.of(GPU=1), 4),
        )
    finally:
        request_resources(bundles=[])
    state = await read_until(reader, lambda s: not s.demand.constraints)
    assert state.demand.constraints == ()


async def test_request_resources_constraints_from_the_gcs_with_autoscaler_v2(
    cluster: RayCluster, gcs: GcsConnection
) -> None:
    """The v2 path (GCS cluster_resource_constraints) is read the same way."""
    from ray.autoscaler.v2.sdk import request_cluster_resources

    request_cluster_resources(
        cluster.gcs_address,
        [{"resources": {"CPU": 2}}] * 3 + [{"resources": {"CPU": 8, "GPU": 1}}],
    )
    try:
        reader = RayReader(gcs, SPEC)
        state = await read_until(reader, lambda s: bool(s.demand.constraints))
        assert state.demand.constraints == (
            Bundle(Resources.of(CPU=2), 3),
            Bundle(Resources.of(CPU=8, GPU=1), 1),
        )
    finally:
        request_cluster_resources(cluster.gcs_address, [])


async def test_a_token_sent_to_a_head_without_token_auth_is_ignored(cluster: RayCluster) -> None:
    """A GCS with token authentication off answers a client that sends a token all the same
    (the client sends one it finds unless RAY_AUTH_MODE=disabled)."""
    client = GcsClient(cluster.gcs_address, token="not-needed")
    try:
        reply = await client.get_cluster_status(timeout_s=5)
    finally:
        await client.close()
    assert len(reply.cluster_resource_state.node_states) == 4  # the head and three workers


async def test_unreachable_gcs_is_a_ray_error_and_success_zero_keeps_the_old_time() -> None:
    """No GCS: RayError from the reader; the loop exports success=0 and no fresh time."""
    registry = CollectorRegistry()
    gcs = GcsConnection(f"127.0.0.1:{free_port()}")
    reader = RayReader(gcs, SPEC)
    started = time.monotonic()
    with pytest.raises(RayError, match="GetClusterStatus: GCS unavailable"):
        await reader.read()
    assert time.monotonic() - started < 5.0  # no wait for the GCS to come up
    loop = AgentLoop(
        SPEC, reader, SnapshotCollector(registry), AgentMetrics(registry, "demo"), SystemClock()
    )
    snapshot = await loop.poll_once()
    assert (snapshot.success, snapshot.snapshot_time_s) == (False, 0.0)
    lines = generate_latest(registry).decode().splitlines()
    assert 'ray_scaler_snapshot_success{cluster="demo"} 0.0' in lines
    assert 'ray_scaler_agent_poll_errors_total{cluster="demo"} 1.0' in lines
    await gcs.close()


#: how long after the task's end the bench's idle watch first reads the GCS (the test below)
IDLE_READ_GAP_S = 8.0


async def test_the_bench_s_idle_watch_dates_a_pod_s_idle_start_back_to_its_task_s_end(
    cluster: RayCluster, gcs: GcsConnection
) -> None:
    """``bench.vs_ray_idle`` against real Ray 2.60: after a task held ``ray-cpu-a``'s 10 CPUs,
    the watch, first reading the GCS seconds later, puts the node's idle start at the task's end
    (Ray's ``idle_duration_ms`` back from the read), not at its read."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    state = await read_until(
        RayReader(gcs, SPEC), lambda s: any(n.pod == "ray-cpu-a" for n in s.nodes)
    )
    node_id = next(n.node_id for n in state.nodes if n.pod == "ray-cpu-a")
    strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)

    @ray.remote(num_cpus=10, scheduling_strategy=strategy)
    def hold() -> float:
        time.sleep(1.0)
        return time.time()

    ended = ray.get(hold.remote(), timeout=120)
    await asyncio.sleep(IDLE_READ_GAP_S)  # the gap the watch must date back over (no event)
    read_from = time.time()
    with IdleWatch(cluster.gcs_address, None) as watch:
        wait_until(
            lambda: watch.starts.reads > 0 or watch.errors > 0, timeout_s=60, what="a first read"
        )
    assert watch.errors == 0, watch.last_error
    since = watch.starts.since["ray-cpu-a"]
    assert ended - 1.0 <= since < read_from - 1.0, (ended, since, read_from)
