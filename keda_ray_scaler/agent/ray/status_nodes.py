"""The worker nodes of one ``GetClusterStatusReply``, mapped to pods and groups (pure; read by
:func:`~keda_ray_scaler.agent.ray.ray_status.parse_status`).

KubeRay sets ``instance_id`` to the pod name and ``ray_node_type_name`` to the worker group; a
node lacking either is looked up by its IP among the pods Kubernetes reports (:class:`PodRef`).
Dead nodes count only by their pod name; a pod that lists two live nodes keeps its newest
(:mod:`~keda_ray_scaler.agent.ray.node_ages`), the others are superseded.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from keda_ray_scaler.gcs._generated import autoscaler_pb2
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import NodeState
from keda_ray_scaler.model import NodeStatus, Resources, WorkerNode, to_units

# Placement-group resources ("CPU_group_<pg>", "CPU_group_<i>_<pg>", "bundle_group_<pg>"):
# reserved inside a placement group, never capacity a new pod could add.
PG_RESOURCE = re.compile(r"^.+_group_(\d+_)?[0-9a-f]{36}$")

# The status numbers of ray.rpc.autoscaler.NodeStatus, as the generated module names them.
_RUNNING, _DEAD, _IDLE, _DRAINING = (
    autoscaler_pb2.RUNNING,
    autoscaler_pb2.DEAD,
    autoscaler_pb2.IDLE,
    autoscaler_pb2.DRAINING,
)

#: The ``NodeState.node_activity`` line Ray reports while a worker process runs on the node (as
#: read from Ray 2.60: a node whose leases wait for their workers shows only its resources in
#: use, ``"Resource: CPU currently in use."``).
BUSY_WORKERS_ACTIVITY = "Busy workers on node."

#: ``node:__internal_head__`` marks the head (``ray.autoscaler.v2.utils.is_head_node``).
HEAD_RESOURCE = "node:__internal_head__"


@functools.lru_cache(maxsize=4096)  # pure; the same few names recur on every node
def is_internal_resource(name: str) -> bool:
    """``node:<ip>`` / head markers and placement-group resources: not pod capacity."""
    return name.startswith("node:") or bool(PG_RESOURCE.match(name))


@dataclass(frozen=True, slots=True)
class PodRef:
    """A pod as Kubernetes knows it: used to map Ray nodes by IP when they carry no name."""

    pod: str
    group: str


def resources_of(entries: Mapping[str, float]) -> Resources:
    """Ray's resource map as :class:`Resources`, without its internal resources."""
    plain = dict(entries)  # one C-level copy: iterating a protobuf map in Python is slow
    return Resources.from_units(
        {k: to_units(v) for k, v in plain.items() if not is_internal_resource(k)}
    )


@dataclass
class NodeRead:
    """The worker nodes of one status reply, mapped to pods and groups (``parse_status``)."""

    nodes: list[WorkerNode] = field(default_factory=list)
    unmapped: int = 0
    dead: set[str] = field(default_factory=set)
    starting: set[str] = field(default_factory=set)
    #: live nodes of a pod that lists a newer one (its restarted raylet's)
    superseded: list[WorkerNode] = field(default_factory=list)
    _starting_nodes: set[str] = field(default_factory=set)

    @classmethod
    def of(
        cls,
        states: Iterable[NodeState],
        by_ip: Mapping[str, PodRef],
        known: set[str],
        first_seen: Mapping[str, int],
        stale: frozenset[str] = frozenset(),
    ) -> NodeRead:
        """Every live worker node of ``states``, at most one per pod (its newest, module
        :mod:`~keda_ray_scaler.agent.ray.node_ages`); dead ones only by their pod name."""
        read = cls()
        dead_ids: dict[str, list[str]] = {}
        for ns in states:
            if ns.status == _DEAD:
                if ns.instance_id:  # never by IP: a new pod may have the dead one's address
                    read.dead.add(ns.instance_id)
                    dead_ids.setdefault(ns.instance_id, []).append(ns.node_id.hex())
            elif HEAD_RESOURCE not in ns.total_resources:
                read.add(ns, by_ip, known)
        read.keep_newest(first_seen, dead_ids, stale)
        return read

    def keep_newest(
        self,
        first_seen: Mapping[str, int],
        dead_ids: Mapping[str, Sequence[str]],
        stale: frozenset[str],
    ) -> None:
        """Of each pod's live nodes, keep the one first seen last, unless a node of the pod
        seen later is dead (its restarted raylet's node, drained or gone: the pod has no live
        node then) or the node was superseded before (``stale``); the others are superseded."""
        newest: dict[str, WorkerNode] = {}
        for node in self.nodes:
            held = newest.get(node.pod)
            if node.node_id in stale:
                continue
            if held is None or _age_key(node, first_seen) > _age_key(held, first_seen):
                newest[node.pod] = node
        for pod, ids in dead_ids.items():
            held = newest.get(pod)
            if held is not None and any(
                _id_key(i, first_seen) > _age_key(held, first_seen) for i in ids
            ):
                del newest[pod]
        if len(newest) == len(self.nodes):
            return
        kept = {id(n) for n in newest.values()}
        self.superseded = [n for n in self.nodes if id(n) not in kept]
        self.nodes = [n for n in self.nodes if id(n) in kept]
        self.starting = {
            p for p in self.starting if p in newest and newest[p].node_id in self._starting_nodes
        }

    def add(self, ns: NodeState, by_ip: Mapping[str, PodRef], known: set[str]) -> None:
        """One live worker node."""
        node_id = ns.node_id.hex()
        pod, group = ns.instance_id, ns.ray_node_type_name
        ref = by_ip.get(ns.node_ip_address)
        if ref is not None:
            pod = pod or ref.pod
            group = group or ref.group
        if not pod or not group or group not in known:
            self.unmapped += 1
            group = "" if group not in known else group
            pod = pod or node_id
        node = WorkerNode(
            pod=pod,
            group=group,
            total=resources_of(ns.total_resources),
            available=resources_of(ns.available_resources),
            idle_s=ns.idle_duration_ms / 1000.0,
            status=NodeStatus.DRAINING if ns.status == _DRAINING else NodeStatus.RUNNING,
            node_id=node_id,
        )
        self.nodes.append(node)
        # resources allocated, no worker busy yet: a lease whose task is still starting
        if node.available != node.total and BUSY_WORKERS_ACTIVITY not in ns.node_activity:
            self.starting.add(pod)
            self._starting_nodes.add(node_id)


def _age_key(node: WorkerNode, first_seen: Mapping[str, int]) -> tuple[int, str]:
    """Newer sorts higher: first seen later, then (seen in the same poll) the larger node id."""
    return _id_key(node.node_id, first_seen)


def _id_key(node_id: str, first_seen: Mapping[str, int]) -> tuple[int, str]:
    return first_seen.get(node_id, 0), node_id
