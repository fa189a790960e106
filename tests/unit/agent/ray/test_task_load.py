"""Rule R1's combination of node loads (pure, plain values) and its place in ``parse_status``."""

from __future__ import annotations

from keda_ray_scaler.agent.ray.ray_status import parse_status
from keda_ray_scaler.agent.ray.task_load import (
    NodeLoad,
    QueuedShape,
    node_load,
    queued_count,
    task_load,
)
from keda_ray_scaler.agent.ray.task_load_read import head_node_id, read_task_load
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.gcs._generated import gcs_pb2, gcs_service_pb2
from keda_ray_scaler.model import Bundle, ClusterSpec, Resources, WorkerGroup

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
HEAD, WORKER, OTHER = "aa" * 28, "bb" * 28, "cc" * 28
CPU5 = QueuedShape.of({"CPU": 5.0}, 1)


def q(count: int, **shape: float) -> QueuedShape:
    return QueuedShape.of(shape, count)


def test_a_node_read_fresh_replaces_its_cached_entry() -> None:
    """The spill race: the head's cached load still has 3 tasks its fresh read no longer has
    (spilled, allocated on a worker in the snapshot); only the fresh read counts."""
    fresh = [NodeLoad(HEAD, (q(17, CPU=5),))]
    cached = [NodeLoad(HEAD, (q(20, CPU=5),)), NodeLoad(WORKER, ())]
    assert task_load(fresh, cached) == (q(17, CPU=5),)


def test_other_nodes_queues_come_from_the_cache_and_equal_shapes_add_up() -> None:
    """Tasks owned by workers (queued at their nodes) are demand too, summed per shape."""
    fresh = [NodeLoad(HEAD, (q(4, CPU=5), q(1, GPU=1)))]
    cached = [
        NodeLoad(HEAD, (q(9, CPU=5),)),
        NodeLoad(WORKER, (q(2, CPU=5),)),
        NodeLoad(OTHER, (q(3, CPU=1),)),
    ]
    assert task_load(fresh, cached) == (q(3, CPU=1), q(6, CPU=5), q(1, GPU=1))


def test_no_queue_anywhere_is_no_demand() -> None:
    assert task_load([NodeLoad(HEAD, ())], [NodeLoad(WORKER, ())]) == ()
    assert task_load([], []) == ()


def test_a_shape_is_the_same_whatever_the_order_of_its_resources() -> None:
    a = QueuedShape.of({"CPU": 1.0, "GPU": 1.0}, 1)
    b = QueuedShape.of({"GPU": 1.0, "CPU": 1.0}, 2)
    assert task_load([NodeLoad(HEAD, (a,))], [NodeLoad(WORKER, (b,))]) == (
        QueuedShape.of({"CPU": 1.0, "GPU": 1.0}, 3),
    )


def test_the_count_is_ready_plus_infeasible_plus_backlog_as_the_gcs_sums_it() -> None:
    entry = gcs_pb2.ResourceDemand(
        num_ready_requests_queued=2, num_infeasible_requests_queued=3, backlog_size=10
    )
    assert queued_count(entry) == 15
    assert queued_count(gcs_pb2.ResourceDemand(backlog_size=-1)) == 0


def test_a_raylet_reply_becomes_a_node_load_without_empty_shapes() -> None:
    data = gcs_pb2.ResourcesData(node_id=bytes.fromhex(HEAD))
    full = data.resource_load_by_shape.resource_demands.add(num_ready_requests_queued=4)
    full.shape["CPU"] = 5.0
    data.resource_load_by_shape.resource_demands.add(backlog_size=0).shape["GPU"] = 1.0
    assert node_load(data) == NodeLoad(HEAD, (q(4, CPU=5),))


def status_with_head(dead_head: bool = False) -> pb.GetClusterStatusReply:
    reply = pb.GetClusterStatusReply()
    state = reply.cluster_resource_state
    head = state.node_states.add(
        node_id=bytes.fromhex(HEAD), status=pb.DEAD if dead_head else pb.RUNNING
    )
    head.total_resources["node:__internal_head__"] = 1.0
    worker = state.node_states.add(
        node_id=bytes.fromhex(WORKER), instance_id="ray-cpu-a", ray_node_type_name="cpu"
    )
    worker.total_resources["CPU"] = 10.0
    worker.available_resources["CPU"] = 0.0
    state.pending_resource_requests.add(count=9).request.resources_bundle["CPU"] = 5.0
    return reply


def test_the_head_is_found_in_the_snapshot_and_a_dead_one_is_none() -> None:
    assert head_node_id(status_with_head()) == HEAD
    assert head_node_id(status_with_head(dead_head=True)) is None
    assert head_node_id(pb.GetClusterStatusReply()) is None


def test_parse_status_takes_r1s_tasks_in_place_of_the_gcs_sum() -> None:
    """Nodes as read; task demand R1's (placement-group shapes still dropped and counted)."""
    reply = status_with_head()
    pg_shape = QueuedShape.of({"CPU_group_" + "0" * 36: 1.0}, 1)
    state = parse_status(reply, SPEC, tasks=[q(7, CPU=5), pg_shape])
    assert state.demand.bundles == (Bundle(Resources.of(CPU=5), 7),)
    assert state.dropped_pg_shapes == 1
    assert [n.pod for n in state.nodes] == ["ray-cpu-a"]
    assert parse_status(reply, SPEC).demand.bundles == (Bundle(Resources.of(CPU=5), 9),)
    assert parse_status(reply, SPEC, tasks=[]).demand.bundles == ()


class _SpillBetweenReads:
    """A head that spills a {CPU: 5} lease to WORKER between the agent's two reads: whichever
    read comes second sees it moved (the head's queue without it, WORKER's entry with it)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def _spilled(self) -> bool:
        return len(self.calls) > 1  # the second read sees the spill

    async def get_all_resource_usage(
        self, timeout_s: float
    ) -> gcs_service_pb2.GetAllResourceUsageReply:
        self.calls.append("gcs")
        reply = gcs_service_pb2.GetAllResourceUsageReply()
        entry = reply.resource_usage_data.batch.add(node_id=bytes.fromhex(WORKER))
        if self._spilled():
            demand = entry.resource_load_by_shape.resource_demands.add(num_ready_requests_queued=1)
            demand.shape["CPU"] = 5.0
        return reply

    async def resource_load(
        self, gcs: object, node_id: str, timeout_s: float
    ) -> gcs_pb2.ResourcesData:
        self.calls.append("head")
        data = gcs_pb2.ResourcesData(node_id=bytes.fromhex(HEAD))
        if not self._spilled():
            demand = data.resource_load_by_shape.resource_demands.add(num_ready_requests_queued=1)
            demand.shape["CPU"] = 5.0
        return data


async def test_destinations_are_read_before_the_source_so_a_spill_between_is_never_twice() -> None:
    """R1 reads the GCS's node loads, then the head: a lease spilled between the two reads is
    counted nowhere for one poll (the head had it, then WORKER), never at both."""
    fake = _SpillBetweenReads()
    read = await read_task_load(fake, fake, status_with_head(), 5.0)  # type: ignore[arg-type]
    assert fake.calls == ["gcs", "head"]
    assert read.fallback is None and read.queued == ()
