"""The worker nodes of one ``GetClusterStatusReply``, mapped to pods and groups (pure; read by
:func:`~keda_ray_scaler.agent.ray.ray_status.parse_status`).

KubeRay sets ``instance_id`` to the pod name and ``ray_node_type_name`` to the worker group; a
node lacking either is looked up by its IP among the pods Kubernetes reports (:class:`PodRef`).
Dead nodes count only by their pod name; a pod that lists two live nodes keeps its newest
(:mod:`~keda_ray_scaler.agent.ray.node_ages`), the others are superseded, and the pod is
contested: never a victim while they are listed.

Any process that reaches the GCS can start a raylet under any instance id, so a name is taken
only when it may be a pod's (:func:`~keda_ray_scaler.agent.ray.refusals.is_pod_name`) and, when
the pod's IP is known, only from that IP: a node breaking either rule maps to no pod (group
``""``, pod = its node id), alive or dead, and is refused (counted). A pod a live node names
from another IP is contested too: were that node the pod's own (a raylet whose IP is not its
pod's), the pod would look absent from Ray, and an absent pod may be removed without a drain.
Where the pod's IP is not known (no pod source, the demo's raylets on 127.0.0.1, a pod not yet
given an IP) the name is taken as before. A node whose id is empty or too long is left out.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from keda_ray_scaler.agent.ray.refusals import (
    Refusal,
    Refused,
    is_pod_name,
    node_id_ok,
    same_ip,
)
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
    #: pods two or more live nodes name, or one from another IP (an impostor, or a raylet
    #: whose IP is not its pod's): never victims, whichever node is the pod's own
    contested: set[str] = field(default_factory=set)
    #: what was left out, and why
    refused: list[Refused] = field(default_factory=list)
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
        ip_of = {ref.pod: ip for ip, ref in by_ip.items()}
        dead_ids: dict[str, list[str]] = {}
        for ns in states:
            if HEAD_RESOURCE in ns.total_resources and ns.status != _DEAD:
                continue
            if not node_id_ok(ns.node_id):
                read.refused.append(Refused(Refusal.NODE_ID_INVALID, ns.node_id[:128].hex()))
                continue
            name = read.claimed(ns, ip_of)
            if ns.status == _DEAD:
                if name:  # never by IP: a new pod may have the dead one's address
                    read.dead.add(name)
                    dead_ids.setdefault(name, []).append(ns.node_id.hex())
            else:
                if name is None and ns.instance_id in ip_of:  # a pod's name from another IP
                    read.contested.add(ns.instance_id)
                read.add(ns, name, by_ip, known)
        read.keep_newest(first_seen, dead_ids, stale)
        return read

    def claimed(self, ns: NodeState, ip_of: Mapping[str, str]) -> str | None:
        """The pod ``ns`` names ("" when none), or None when its name is refused."""
        name = ns.instance_id
        if not name:
            return ""
        if not is_pod_name(name):
            self.refused.append(Refused(Refusal.POD_NAME_INVALID, name, f"node {ns.node_id.hex()}"))
            return None
        ip = ip_of.get(name)
        if ip is not None and not same_ip(ip, ns.node_ip_address):
            detail = f"node {ns.node_id.hex()} at {ns.node_ip_address[:64]!r}; the pod is at {ip}"
            self.refused.append(Refused(Refusal.NODE_IP_MISMATCH, name, detail))
            return None
        return name

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
        per_pod = Counter(n.pod for n in self.nodes if n.group)
        for pod in sorted(p for p, count in per_pod.items() if count > 1):
            self.contested.add(pod)
            self.refused.append(Refused(Refusal.TWO_LIVE_NODES, pod, f"{per_pod[pod]} live nodes"))
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

    def add(
        self, ns: NodeState, name: str | None, by_ip: Mapping[str, PodRef], known: set[str]
    ) -> None:
        """One live worker node naming pod ``name`` ("": none, None: a name refused)."""
        node_id = ns.node_id.hex()
        pod, group = name or "", ns.ray_node_type_name
        ref = by_ip.get(ns.node_ip_address)
        if ref is not None and name is not None and pod in ("", ref.pod):
            pod = ref.pod
            group = group or ref.group
        if name is None or not pod or not group or group not in known:
            self.unmapped += 1
            group = "" if group not in known or name is None else group
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
