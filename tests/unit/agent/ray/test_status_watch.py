"""The look between polls (issue 39): against what the last poll read, a GCS reply that moved
only what Ray moves at every call, and the head raylet's queue as it was, are the same; any other
change, a failed call to the GCS, or no poll read yet, is not."""

from __future__ import annotations

from typing import Any, cast

import pytest
from ray_input_fakes import SPEC, FakeGcs, node, status

from keda_ray_scaler.agent.ray.ray_state import DemandRead, RayReader
from keda_ray_scaler.agent.ray.status_memo import steady_part
from keda_ray_scaler.agent.ray.status_nodes import HEAD_RESOURCE
from keda_ray_scaler.agent.ray.status_watch import Look, StatusWatch
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.gcs._generated import gcs_pb2, gcs_service_pb2
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.gcs.steady import look_form, look_form_of_state


def answer(call: int) -> pb.GetClusterStatusReply:
    """The GCS's ``call``-th reply of one cluster: node w-a busy, w-b idle since 2 minutes before
    the first call, 20 pending {CPU: 5} tasks, a placement group, a constraint, labels."""
    reply = status(node(b"a", "w-a", "10.0.0.1", free=0), node(b"b", "w-b", "10.0.0.2"))
    state = reply.cluster_resource_state
    state.cluster_resource_state_version = call
    state.last_seen_autoscaler_state_version = call // 2
    for ns in state.node_states:
        ns.node_state_version = call
        ns.labels.update({"ray.io/market-type": "spot", "zone": "b"})
        ns.dynamic_labels["ray.io/node-group"] = "cpu"
        if ns.idle_duration_ms:
            ns.idle_duration_ms = 120_000 + 500 * call
    gang = state.pending_gang_resource_requests.add(details="pg:STRICT_SPREAD|PENDING")
    gang.requests.add().resources_bundle.update({"CPU": 2.0, "memory": 1e9})
    constraint = state.cluster_resource_constraints.add().resource_requests.add(count=3)
    constraint.request.resources_bundle["CPU"] = 1.0
    reply.autoscaling_state.autoscaler_state_version = call
    return reply


class HeadRaylet:
    """The head's raylet: ``queue`` ({CPU: n} -> tasks queued), or a failure when ``fail``."""

    def __init__(self) -> None:
        self.queue: dict[float, int] = {}
        self.fail = False
        self.reads = 0

    async def resource_load(self, gcs: object, node_id: str, timeout_s: float) -> Any:
        self.reads += 1
        if self.fail:
            raise RayError("raylet 10.0.0.9:1: GetResourceLoad: raylet unavailable")
        data = gcs_pb2.ResourcesData(node_id=bytes.fromhex(node_id))
        for cpus, n in self.queue.items():
            data.resource_load_by_shape.resource_demands.add(
                shape={"CPU": cpus}, num_ready_requests_queued=n
            )
        return data


class R1Gcs(FakeGcs):
    """The fake GCS with rule R1's node loads (no other node queues anything)."""

    async def get_all_resource_usage(self, timeout_s: float) -> Any:
        return gcs_service_pb2.GetAllResourceUsageReply()


class Watched:
    """A reader and a watch on one fake GCS and head raylet, as the builder wires them."""

    def __init__(
        self, *replies: pb.GetClusterStatusReply, demand: DemandRead = DemandRead.GCS
    ) -> None:
        self.gcs = R1Gcs(None, replies=replies)
        self.raylet = HeadRaylet()
        self.connection = GcsConnection("fake:0", factory=lambda _: cast(Any, self.gcs))
        self.reader = RayReader(self.connection, SPEC, demand=demand, raylet=self.raylet)
        reader = self.reader
        self.watch = StatusWatch(
            self.connection, lambda: reader.seen, self.raylet, every_s=0.5, timeout_s=5.0
        )


def test_the_look_form_of_the_bytes_is_that_of_the_polls_steady_part() -> None:
    """The look's form of a reply and the form of the poll's memo of it are equal, or no look
    could match a poll."""
    reply = answer(7)
    steady, _ = steady_part(reply.cluster_resource_state)
    assert look_form(reply.SerializeToString()) == look_form_of_state(steady)
    assert reply.cluster_resource_state.cluster_resource_state_version == 7  # left as it was


async def test_a_reply_that_moved_only_counters_and_idle_times_is_the_same() -> None:
    """Versions counted up, the idle node idle longer, the autoscaler's state moved: same."""
    watched = Watched(answer(1), answer(2), answer(3))
    await watched.reader.read()
    assert [await watched.watch.look(), await watched.watch.look()] == [Look.SAME, Look.SAME]
    assert watched.watch.seen[Look.SAME] == 2


def changed(edit: str) -> pb.GetClusterStatusReply:
    """``answer(2)`` with one change that a poll must read."""
    reply = answer(2)
    state = reply.cluster_resource_state
    if edit == "demand":
        state.pending_resource_requests[0].count = 21
    elif edit == "free cpus":
        state.node_states[0].available_resources["CPU"] = 5.0
    elif edit == "demand fell":
        state.pending_resource_requests[0].count = 19
    elif edit == "activity":
        state.node_states[0].node_activity.append("CPU in use")
    elif edit == "new shape":
        rc = state.pending_resource_requests.add(count=1)
        rc.request.resources_bundle["CPU"] = 1.0
    elif edit == "status":
        state.node_states[1].status = pb.IDLE
    elif edit == "node added":
        state.node_states.append(node(b"c", "w-c", "10.0.0.3"))
    elif edit == "label":
        state.node_states[0].labels["zone"] = "c"
    elif edit == "placement group":
        state.pending_gang_resource_requests.add(details="pg2:PACK|PENDING")
    elif edit == "session":
        state.cluster_session_name = "session_2"
    return reply


@pytest.mark.parametrize(
    "edit",
    ["demand", "new shape", "status", "node added", "label", "placement group", "session"],
)
async def test_rising_demand_and_changed_nodes_are_a_change(edit: str) -> None:
    """Each change a poll must plan at once makes the look say so."""
    watched = Watched(answer(1), changed(edit))
    await watched.reader.read()
    assert await watched.watch.look() is Look.CHANGED


@pytest.mark.parametrize("edit", ["free cpus", "demand fell", "activity"])
async def test_use_that_moved_and_demand_that_fell_wait_for_the_next_poll(edit: str) -> None:
    """A task that started or ended (a node's free CPUs, its activity) and fewer pending tasks
    raise nothing: the look says the same, the poll at the interval reads them."""
    watched = Watched(answer(1), changed(edit))
    await watched.reader.read()
    assert await watched.watch.look() is Look.SAME


async def test_a_failed_call_is_failed_never_same_and_drops_the_channel() -> None:
    """The GCS does not answer: unknown, and the next call makes a new client."""
    watched = Watched(answer(1), answer(2))
    await watched.reader.read()
    assert watched.connection.held() is not None
    watched.gcs.fail = True
    assert await watched.watch.look() is Look.FAILED
    assert watched.connection.held() is None
    assert await watched.watch.look() is Look.SAME


async def test_before_a_poll_read_anything_and_after_a_failed_read_every_look_is_a_change() -> None:
    """No reply to compare with: a change, so the loop polls."""
    watched = Watched(answer(1), answer(2), answer(3))
    assert await watched.watch.look() is Look.CHANGED
    watched.gcs.fail = True
    with pytest.raises(Exception, match="DEADLINE_EXCEEDED"):
        await watched.reader.read()
    assert await watched.watch.look() is Look.CHANGED


async def test_the_victims_recheck_does_not_move_what_a_look_compares_with() -> None:
    """A re-check read between polls (``nodes()``) reads the change; the export does not hold
    it, so the look still says changed."""
    watched = Watched(answer(1), changed("demand"), changed("demand"))
    await watched.reader.read()
    await watched.reader.nodes()
    assert await watched.watch.look() is Look.CHANGED


async def test_bytes_that_are_no_reply_are_a_change_for_the_poll_to_refuse() -> None:
    """Garbage from the GCS: not the same (the poll reads and refuses it)."""
    watched = Watched(answer(1))
    await watched.reader.read()

    async def garbage(timeout_s: float) -> bytes:
        return b"\xff\xff\xff"

    watched.gcs.get_cluster_status_bytes = garbage  # type: ignore[method-assign]
    assert await watched.watch.look() is Look.CHANGED


def with_head(call: int) -> pb.GetClusterStatusReply:
    """``answer(call)`` with the head node (0 CPUs), whose raylet R1 reads."""
    reply = answer(call)
    head = node(b"h", "", "10.0.0.9", free=0)
    head.total_resources.clear()
    head.total_resources[HEAD_RESOURCE] = 1.0
    reply.cluster_resource_state.node_states.append(head)
    return reply


async def test_a_task_queued_at_the_head_is_a_change_before_the_gcs_reply_shows_it() -> None:
    """Rule R1: the head raylet's queue is read at each look; a new task there is a change
    though the GCS's reply (pulled every second) still says what the poll read."""
    watched = Watched(with_head(1), with_head(2), with_head(3), demand=DemandRead.EXACT)
    await watched.reader.read()
    assert await watched.watch.look() is Look.SAME
    watched.raylet.queue = {5.0: 1}
    assert await watched.watch.look() is Look.CHANGED
    assert watched.raylet.reads == 3  # the poll's, then one per look


async def test_the_heads_queue_in_another_order_is_the_same() -> None:
    """Two shapes queued at the head, listed the other way round at the look: the same."""
    watched = Watched(with_head(1), with_head(2), demand=DemandRead.EXACT)
    watched.raylet.queue = {5.0: 3, 1.0: 2}
    await watched.reader.read()
    watched.raylet.queue = {1.0: 2, 5.0: 3}
    assert await watched.watch.look() is Look.SAME


async def test_fewer_tasks_queued_at_the_head_wait_for_the_next_poll() -> None:
    """Three tasks queued at the head at the poll, two at the look (one started): the same; a
    second shape queued: a change."""
    watched = Watched(with_head(1), with_head(2), with_head(3), demand=DemandRead.EXACT)
    watched.raylet.queue = {5.0: 3}
    await watched.reader.read()
    watched.raylet.queue = {5.0: 2}
    assert await watched.watch.look() is Look.SAME
    watched.raylet.queue = {5.0: 2, 1.0: 1}
    assert await watched.watch.look() is Look.CHANGED


def changed_with_head() -> pb.GetClusterStatusReply:
    """``with_head(3)`` with one more task pending at the GCS."""
    reply = with_head(3)
    reply.cluster_resource_state.pending_resource_requests[0].count = 21
    return reply


async def test_a_head_raylet_that_cannot_be_read_leaves_it_to_the_gcs_reply() -> None:
    """No word from the head raylet decides nothing: the GCS's reply does, either way."""
    replies = (with_head(1), with_head(2), changed_with_head())
    watched = Watched(*replies, demand=DemandRead.EXACT)
    await watched.reader.read()
    watched.raylet.fail = True
    assert await watched.watch.look() is Look.SAME
    assert await watched.watch.look() is Look.CHANGED


async def test_with_demand_from_the_gcs_no_raylet_is_asked() -> None:
    """``--demand-read gcs``: the poll reads no raylet, so neither does a look."""
    watched = Watched(with_head(1), with_head(2))
    await watched.reader.read()
    assert await watched.watch.look() is Look.SAME
    assert watched.raylet.reads == 0


async def test_with_the_heads_queue_answering_the_gcs_reply_is_read_every_second() -> None:
    """Looks every 0.5 s: the head's queue at each, the GCS's reply every other (the GCS pulls
    the raylets' loads every second); a change only the GCS shows is seen by the second look."""
    replies = (with_head(1), with_head(2), changed_with_head(), changed_with_head())
    watched = Watched(*replies, demand=DemandRead.EXACT)
    await watched.reader.read()
    assert await watched.watch.look() is Look.SAME  # the first look reads both
    assert watched.watch.status_reads == 1
    assert await watched.watch.look() is Look.SAME  # the head's queue only: the GCS not asked
    assert watched.watch.status_reads == 1
    assert await watched.watch.look() is Look.CHANGED  # the GCS's reply again: 21 pending
    assert (watched.watch.status_reads, watched.raylet.reads) == (2, 4)


async def test_looks_a_second_apart_read_the_gcs_reply_at_each() -> None:
    """``--watch-interval 1``: every look is a second after the last, so each reads both."""
    watched = Watched(with_head(1), with_head(2), changed_with_head(), demand=DemandRead.EXACT)
    reader = watched.reader
    watched.watch = StatusWatch(
        watched.connection, lambda: reader.seen, watched.raylet, every_s=1.0, timeout_s=5.0
    )
    await reader.read()
    assert await watched.watch.look() is Look.SAME
    assert await watched.watch.look() is Look.CHANGED
    assert watched.watch.status_reads == 2
