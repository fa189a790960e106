"""Task and actor demand by rule R1, "destinations before sources": each node's queue once.

Ray's pending task demand (``GetClusterStatus``' ``pending_resource_requests``) is the GCS's sum,
over every node, of the load in that node's last ``GetResourceLoad`` reply, ``ready + infeasible
+ backlog`` per shape (``GcsAutoscalerStateManager::GetPendingResourceRequests``). The GCS pulls
each raylet on its own every second and keeps each node's reply, load and usage together, so the
cut across nodes is not consistent: a task the head spilled to a fresh worker node can still be
queued in the head's cached load while the worker node's newer entry already shows its resources
allocated, and the task is counted pending and running at once until the head's next reply is
applied (``docs/concepts/demand.md``).

R1 reads usage first (the poll's ``GetClusterStatus``) and the sources' load after it, fresh from
their raylets (:mod:`keda_ray_scaler.gcs.raylet`): a source erases a lease from its queue before
it spills it, so a lease allocated in the earlier snapshot can no longer be queued at its source
in the later read. The source raylet read directly is the head's (drivers and Ray Client run
there, the head has no CPU); other nodes' queues (tasks owned by workers) are the GCS's cached
entries of those nodes, read after the snapshot too (``GetAllResourceUsage``: one pulled reply
per node, never the head's share subtracted from an aggregate taken at another moment).

Pure: plain values in, plain values out; :func:`node_load` converts one raylet's reply.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from keda_ray_scaler.agent.ray.label_read import RawSelectors, raw_selectors
from keda_ray_scaler.gcs._generated.gcs_pb2 import ResourceDemand, ResourcesData


@dataclass(frozen=True, slots=True)
class QueuedShape:
    """``count`` tasks or actors of one shape queued (ready, infeasible or in an owner's
    backlog) at one node, the shape as Ray names its resources, with their label selectors as
    read (checked later, :mod:`~keda_ray_scaler.agent.ray.label_read`)."""

    shape: tuple[tuple[str, float], ...]
    count: int
    selectors: RawSelectors = ()

    @classmethod
    def of(
        cls, shape: Mapping[str, float], count: int, selectors: RawSelectors = ()
    ) -> QueuedShape:
        """From a resource map (sorted, so equal shapes compare equal)."""
        return cls(tuple(sorted(shape.items())), count, selectors)

    def as_dict(self) -> dict[str, float]:
        """The shape as a resource map."""
        return dict(self.shape)


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """One node's queued shapes, as one reply of its raylet had them."""

    node_id: str  # hex
    queued: tuple[QueuedShape, ...]


def queued_count(entry: ResourceDemand) -> int:
    """How many of a shape count as pending: ready + infeasible + backlog, as the GCS sums them."""
    total = (
        entry.num_ready_requests_queued + entry.num_infeasible_requests_queued + entry.backlog_size
    )
    return max(int(total), 0)


def node_load(report: ResourcesData) -> NodeLoad:
    """One node's queued shapes from its ``ResourcesData``."""
    demands = report.resource_load_by_shape.resource_demands
    if not demands:  # most nodes: nothing queued (a thousand of them read every poll)
        return NodeLoad(report.node_id.hex(), ())
    queued = (
        QueuedShape.of(dict(e.shape), queued_count(e), raw_selectors(e.label_selectors))
        for e in demands
    )
    return NodeLoad(report.node_id.hex(), tuple(q for q in queued if q.count > 0))


def task_load(fresh: Sequence[NodeLoad], cached: Iterable[NodeLoad]) -> tuple[QueuedShape, ...]:
    """R1's task demand: every node's queue once, read fresh when there is a fresh read.

    ``fresh`` are the sources' loads read from their raylets after the snapshot; ``cached`` the
    GCS's entries of every node, read after the snapshot too. A node read fresh is taken from
    ``fresh`` only (its cached entry may predate a spill the snapshot already shows allocated).
    Equal shapes with equal selectors are summed; the result is sorted by shape.
    """
    read_fresh = {n.node_id for n in fresh}
    counts: dict[tuple[tuple[tuple[str, float], ...], RawSelectors], int] = {}
    for node in [*fresh, *(n for n in cached if n.node_id not in read_fresh)]:
        for q in node.queued:
            key = (q.shape, q.selectors)
            counts[key] = counts.get(key, 0) + q.count
    return tuple(
        QueuedShape(shape, n, sels) for (shape, sels), n in sorted(counts.items()) if n > 0
    )
