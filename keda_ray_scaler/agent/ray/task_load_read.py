"""The reads of rule R1 after the poll's snapshot: the GCS's node loads, then the head raylet.

:func:`read_task_load` runs after ``GetClusterStatus`` returned (the snapshot S): it finds the
head in S, reads every node's last pulled load from the GCS (``GetAllResourceUsage``), then the
head raylet's load directly (:class:`~keda_ray_scaler.gcs.raylet.HeadRaylet`), and combines
them (:func:`~keda_ray_scaler.agent.ray.task_load.task_load`). When any of these fails the
poll does not: it falls back to S's own aggregate (``pending_resource_requests``, Ray's demand as
before R1) and says why (:class:`Fallback`), for the loop to count and log.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Protocol

from keda_ray_scaler.agent.ray.status_nodes import HEAD_RESOURCE
from keda_ray_scaler.agent.ray.task_load import NodeLoad, QueuedShape, node_load, task_load
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import DEAD, GetClusterStatusReply
from keda_ray_scaler.gcs._generated.gcs_pb2 import ResourcesData
from keda_ray_scaler.gcs._generated.gcs_service_pb2 import GetAllResourceUsageReply
from keda_ray_scaler.gcs.raylet import NodeInfoApi


class Fallback(StrEnum):
    """Why a poll's task demand is S's aggregate instead of R1's (the metric's ``reason``)."""

    NO_HEAD = "no_head"  # no alive head node in the snapshot
    RAYLET = "raylet"  # the head raylet could not be found or read
    NODE_LOADS = "node_loads"  # the GCS's GetAllResourceUsage failed


@dataclass(frozen=True, slots=True)
class TaskLoadRead:
    """R1's task demand, or why there is none this poll (then ``error`` says it in one line);
    ``head``: the head raylet's own queue as read, summed and sorted (what a look between polls
    compares with, :mod:`~keda_ray_scaler.agent.ray.status_watch`), None when not read."""

    queued: tuple[QueuedShape, ...] | None
    fallback: Fallback | None = None
    error: str = ""
    head: NodeLoad | None = None


class RayletRead(Protocol):
    """The head raylet's read (:class:`~keda_ray_scaler.gcs.raylet.HeadRaylet`)."""

    async def resource_load(
        self, gcs: NodeInfoApi, node_id: str, timeout_s: float
    ) -> ResourcesData: ...


class LoadsApi(NodeInfoApi, Protocol):
    """The GCS calls R1 adds (:class:`~keda_ray_scaler.gcs.client.GcsClient`)."""

    async def get_all_resource_usage(self, timeout_s: float) -> GetAllResourceUsageReply: ...


def head_node_id(status: GetClusterStatusReply) -> str | None:
    """The alive head's node id (hex) in the snapshot, None when it has none."""
    for ns in status.cluster_resource_state.node_states:
        if ns.status != DEAD and HEAD_RESOURCE in ns.total_resources:
            node_id: str = ns.node_id.hex()
            return node_id
    return None


async def read_task_load(
    client: LoadsApi, raylet: RayletRead, status: GetClusterStatusReply, timeout_s: float
) -> TaskLoadRead:
    """R1's task demand after the snapshot ``status``; a :class:`Fallback` when it cannot be read.

    Both reads run after ``status`` returned, destinations before the source: the other nodes'
    loads as the GCS last pulled them first, then the head raylet fresh. A lease the head
    spills to a node Y between the two reads is then in neither (one poll counts it nowhere)
    rather than in both: read the other way round, the head's read held it and Y's entry,
    pulled after the spill, held it too (seen in CI on 2026-11-27: 9 tasks pending for 8, the
    seed example at 11 pods). A node's entry pulled before our read cannot hold a lease the
    head still queues at its fresh read: the head erases a lease before it spills it.
    """
    head = head_node_id(status)
    if head is None:
        return TaskLoadRead(None, Fallback.NO_HEAD, "no alive head node in GetClusterStatus")
    try:
        usage = await client.get_all_resource_usage(timeout_s)
    except RayError as exc:
        return TaskLoadRead(None, Fallback.NODE_LOADS, str(exc))
    try:
        fresh = await raylet.resource_load(client, head, timeout_s)
    except RayError as exc:
        return TaskLoadRead(None, Fallback.RAYLET, str(exc))
    cached = (node_load(r) for r in usage.resource_usage_data.batch)
    # The raylet names itself in its reply; the id it was asked for is the one that counts.
    own = replace(node_load(fresh), node_id=head)
    return TaskLoadRead(task_load([own], cached), head=NodeLoad(head, task_load([own], ())))
