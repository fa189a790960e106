"""Builders and a fake GCS for the tests of Ray's untrusted input (issue 35): worker nodes of
group ``cpu``, status replies carrying the seed's demand, a reader counting its refusals."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.ray.ray_state import DemandRead, RayReader
from keda_ray_scaler.agent.ray.ray_status import V1_REQUEST_KEY, RayState
from keda_ray_scaler.agent.ray.refusal_log import RefusalLog
from keda_ray_scaler.agent.ray.refusals import Refusal
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.gcs.versions import CLUSTER_METADATA_KEY, CLUSTER_NAMESPACE
from keda_ray_scaler.model import Bundle, ClusterSpec, Resources, WorkerGroup

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
SEED = Bundle(Resources.of(CPU=5), 20)
#: The memos' clock in the tests of the reader's memos: idle-since times are taken at it.
T = 1_700_000_000.0


def timed(state: RayState, at: float = T) -> RayState:
    """``state`` with each node's idle time at ``at`` as its own (to the millisecond, as Ray
    gives it) and no idle-since time: as ``parse_status`` gives it, with no clock."""
    nodes = tuple(replace(n, idle_s=round(n.idle_at(at), 3), idle_since_s=0.0) for n in state.nodes)
    return replace(state, nodes=nodes)


def node(
    nid: bytes, pod: str, ip: str, *, free: int = 10, status: int = pb.RUNNING
) -> pb.NodeState:
    """A worker node of group cpu with 10 CPUs, ``free`` of them available."""
    return pb.NodeState(
        node_id=nid.ljust(28, b"\0"),
        instance_id=pod,
        ray_node_type_name="cpu",
        status=status,
        total_resources={"CPU": 10},
        available_resources={"CPU": free},
        idle_duration_ms=0 if free < 10 else 120_000,
        node_ip_address=ip,
    )


def hexid(nid: bytes) -> str:
    """The hex node id :func:`node` gives ``nid``."""
    return nid.ljust(28, b"\0").hex()


def status(*nodes: pb.NodeState, session: str = "") -> pb.GetClusterStatusReply:
    """A reply with the seed's 20 pending {CPU: 5} tasks and ``nodes``, of GCS ``session``."""
    state = pb.ClusterResourceState(node_states=list(nodes), cluster_session_name=session)
    rc = state.pending_resource_requests.add(count=20)
    rc.request.resources_bundle["CPU"] = 5.0
    return pb.GetClusterStatusReply(cluster_resource_state=state)


class FakeGcs:
    """The GCS calls of a poll (``DemandRead.GCS``), answering what the test set: ``reply``
    (or the next of ``replies``), ``kv`` for the request key, ``metadata`` for the head's
    ``CLUSTER_METADATA``; ``fail`` makes the next status call fail; ``asked`` lists the keys."""

    def __init__(
        self,
        reply: pb.GetClusterStatusReply | None,
        kv: bytes | None = None,
        *,
        replies: tuple[pb.GetClusterStatusReply, ...] = (),
        metadata: bytes | None = None,
    ) -> None:
        self.reply, self.kv, self.metadata = reply, kv, metadata
        self.replies = list(replies)
        self.fail = False
        self.asked: list[bytes] = []

    async def get_cluster_status(self, timeout_s: float) -> pb.GetClusterStatusReply:
        if self.fail:
            self.fail = False
            raise RayError("GCS fake:0: GetClusterStatus: no answer within 5s (DEADLINE_EXCEEDED)")
        if self.replies:
            self.reply = self.replies.pop(0)
        assert self.reply is not None
        return self.reply

    async def get_cluster_status_bytes(self, timeout_s: float) -> bytes:
        """The next status reply as the GCS sends it (the look between polls)."""
        return (await self.get_cluster_status(timeout_s)).SerializeToString()

    async def internal_kv_get(
        self, key: bytes, namespace: bytes | None, timeout_s: float
    ) -> bytes | None:
        self.asked.append(key)
        if (key, namespace) == (CLUSTER_METADATA_KEY, CLUSTER_NAMESPACE):
            return self.metadata
        assert (key, namespace) == (V1_REQUEST_KEY, None)
        return self.kv

    async def close(self, grace_s: float | None = None) -> None:
        return None


def reader_of(gcs: FakeGcs, registry: CollectorRegistry, **kw: Any) -> RayReader:
    """A reader of ``gcs`` (task demand from the status), its refusals counted in ``registry``."""
    connection = GcsConnection("fake:0", factory=lambda _: cast(Any, gcs))
    refusals = RefusalLog(registry, "demo")
    return RayReader(connection, SPEC, demand=DemandRead.GCS, refusals=refusals, **kw)


def refused_total(registry: CollectorRegistry, reason: Refusal) -> float | None:
    """``ray_scaler_agent_ray_input_refused_total`` of cluster demo for ``reason``."""
    labels = {"cluster": "demo", "reason": reason.value}
    return registry.get_sample_value("ray_scaler_agent_ray_input_refused_total", labels)
