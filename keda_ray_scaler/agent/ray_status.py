"""One ``GetClusterStatusReply`` read as demand and worker nodes (pure: tests and the benchmark
feed it synthetic replies).

We read its raw ``cluster_resource_state`` instead of the SDK's parsed ``ClusterStatus``
because the parsed form drops what a scaler needs: it reports ``idle_time_ms = 0`` unless the
node is IDLE, merges placement-group bundles by shape (losing their order) and keeps the
strategy only inside a ``details`` string. From the raw state:

- ``pending_resource_requests``: task/actor demand, one ``(shape, count)`` per shape;
- ``pending_gang_resource_requests``: pending placement groups, bundles in order, strategy from
  ``details`` (``"<pg_id>:<STRATEGY>|<state>"``);
- ``cluster_resource_constraints``: ``request_resources()`` when autoscaler v2 is on; with v1
  (no ``RAY_enable_autoscaler_v2`` on the head) Ray writes the request as JSON to the internal
  KV key ``autoscaler_resource_request`` instead, which we read when the GCS has none;
- ``node_states``: per node ``instance_id`` (KubeRay: ``RAY_CLOUD_INSTANCE_ID`` = pod name),
  ``ray_node_type_name`` (``RAY_NODE_TYPE_NAME`` = worker group), status, total and available
  resources, ``idle_duration_ms``, ``node_ip_address``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from keda_ray_scaler.agent.task_load import QueuedShape
from keda_ray_scaler.agent.task_load_read import (
    HEAD_RESOURCE,
    Fallback,
)
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs._generated import autoscaler_pb2
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import (
    GangResourceRequest,
    GetClusterStatusReply,
    NodeState,
)
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    NodeStatus,
    PlacementGroup,
    Resources,
    Strategy,
    WorkerNode,
    to_units,
)

#: Ray's internal KV key where ``request_resources()`` writes with autoscaler v1.
V1_REQUEST_KEY = b"autoscaler_resource_request"

# Placement-group resources ("CPU_group_<pg>", "CPU_group_<i>_<pg>", "bundle_group_<pg>"):
# reserved inside a placement group, never capacity a new pod could add.
_PG_RESOURCE = re.compile(r"^.+_group_(\d+_)?[0-9a-f]{36}$")

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


@functools.lru_cache(maxsize=4096)  # pure; the same few names recur on every node
def is_internal_resource(name: str) -> bool:
    """``node:<ip>`` / head markers and placement-group resources: not pod capacity."""
    return name.startswith("node:") or bool(_PG_RESOURCE.match(name))


@dataclass(frozen=True, slots=True)
class PodRef:
    """A pod as Kubernetes knows it: used to map Ray nodes by IP when they carry no name."""

    pod: str
    group: str


@dataclass(frozen=True, slots=True)
class RayState:
    """One poll's result: demand, worker nodes and what could not be mapped."""

    demand: Demand
    nodes: tuple[WorkerNode, ...]
    unmapped: int = 0  # worker nodes exported with group "" (no pod name, group or known IP)
    dropped_pg_shapes: int = 0  # task shapes asking placement-group resources (not scalable)
    #: pods with a DEAD Ray node and no live one (the GCS keeps dead nodes for a while)
    dead: frozenset[str] = frozenset()
    #: pods whose node has resources in use and no busy worker: leases granted, workers starting
    starting: frozenset[str] = frozenset()
    #: why the task demand is the snapshot's sum although R1 was asked (None: as asked)
    fallback: Fallback | None = None
    #: the failure behind ``fallback``, one line
    fallback_error: str = ""
    #: task bundles pending in the GCS's own sum (the snapshot's), whatever the demand's source:
    #: beside R1's count in the debug log, the double count R1 left out
    gcs_tasks: int = 0
    #: node ids the GCS lists alive for a pod that has a newer node (a restarted raylet's
    #: predecessor, :mod:`~keda_ray_scaler.agent.node_ages`): left out of ``nodes``
    superseded: tuple[str, ...] = ()


def _resources(entries: Mapping[str, float]) -> Resources:
    plain = dict(entries)  # one C-level copy: iterating a protobuf map in Python is slow
    return Resources.from_units(
        {k: to_units(v) for k, v in plain.items() if not is_internal_resource(k)}
    )


def parse_strategy(details: str) -> Strategy:
    """The strategy in a gang request's ``details`` (``"<pg_id>:<STRATEGY>|<state>"``).

    An unknown or missing strategy is read as STRICT_SPREAD, the one that needs the most pods,
    so demand is never under-reported.
    """
    _, _, rest = details.partition(":")
    name = rest.partition("|")[0]
    try:
        return Strategy(name)
    except ValueError:
        return Strategy.STRICT_SPREAD


def parse_v1_requests(raw: bytes | None) -> tuple[Bundle, ...]:
    """``request_resources()`` as written to the internal KV by autoscaler v1 (JSON list)."""
    if not raw:
        return ()
    try:
        items = json.loads(raw)
    except ValueError as exc:
        raise RayError(f"{V1_REQUEST_KEY.decode()}: not JSON: {exc}") from exc
    if not isinstance(items, list):
        raise RayError(f"{V1_REQUEST_KEY.decode()}: expected a list, got {type(items).__name__}")
    counts: dict[Resources, int] = {}
    for item in items:
        if not isinstance(item, dict):
            raise RayError(f"{V1_REQUEST_KEY.decode()}: bad bundle {item!r}")
        shape = _resources(item)
        if shape:
            counts[shape] = counts.get(shape, 0) + 1
    return tuple(Bundle(r, n) for r, n in sorted(counts.items()))


def merge_counts(pairs: Iterable[tuple[Resources, int]]) -> tuple[Bundle, ...]:
    counts: dict[Resources, int] = {}
    for shape, n in pairs:
        if shape and n > 0:
            counts[shape] = counts.get(shape, 0) + n
    return tuple(Bundle(r, n) for r, n in sorted(counts.items()))


def parse_status(
    reply: GetClusterStatusReply,
    cluster: ClusterSpec,
    *,
    v1_requests: bytes | None = None,
    pods_by_ip: Mapping[str, PodRef] | None = None,
    tasks: Iterable[QueuedShape] | None = None,
    first_seen: Mapping[str, int] | None = None,
    stale: frozenset[str] = frozenset(),
) -> RayState:
    """Demand and worker nodes from a ``GetClusterStatusReply`` (pure).

    ``tasks``, when given, is the task and actor demand in place of the reply's
    ``pending_resource_requests`` (rule R1's, :mod:`~keda_ray_scaler.agent.task_load`).

    Node mapping, as KubeRay sets it up: ``instance_id`` is the pod name and
    ``ray_node_type_name`` the worker group; a node lacking either is looked up by its IP in
    ``pods_by_ip`` (the pod IPs Kubernetes reports). A node still without both is exported with
    group ``""`` (pod = its node id when no name is known) and counted in ``unmapped``. The head
    is never a worker. Dead nodes are left out. A pod that lists two live nodes keeps the one
    ``first_seen`` (node id -> the poll it was first seen in,
    :mod:`~keda_ray_scaler.agent.node_ages`) saw last; the others are ``superseded``.
    """
    state = reply.cluster_resource_state
    if tasks is None:
        raw = [
            (dict(rc.request.resources_bundle), rc.count) for rc in state.pending_resource_requests
        ]
    else:
        raw = [(q.as_dict(), q.count) for q in tasks]
    task_pairs, dropped = _task_bundles(raw)
    constraints = merge_counts(
        (_resources(r.request.resources_bundle), r.count)
        for c in state.cluster_resource_constraints
        for r in c.resource_requests
    )
    demand = Demand(
        bundles=merge_counts(task_pairs),
        placement_groups=_placement_groups(state.pending_gang_resource_requests),
        constraints=constraints or parse_v1_requests(v1_requests),
    )
    read = _NodeRead.of(
        state.node_states,
        pods_by_ip or {},
        {g.name for g in cluster.worker_groups},
        first_seen or {},
        stale,
    )
    alive = {n.pod for n in read.nodes}
    return RayState(
        demand,
        tuple(sorted(read.nodes, key=lambda n: (n.group, n.pod))),
        read.unmapped,
        dropped,
        frozenset(read.dead - alive),
        frozenset(read.starting),
        gcs_tasks=sum(int(rc.count) for rc in state.pending_resource_requests),
        superseded=tuple(sorted(n.node_id for n in read.superseded)),
    )


def _task_bundles(
    raw: Iterable[tuple[Mapping[str, float], int]],
) -> tuple[list[tuple[Resources, int]], int]:
    """Task and actor shapes as resources, and how many were left out: a shape that asks for a
    placement group's bundle resource runs in a bundle already counted as the group's."""
    pairs: list[tuple[Resources, int]] = []
    dropped = 0
    for bundle, count in raw:
        if any(_PG_RESOURCE.match(k) for k in bundle):
            dropped += 1
            continue
        pairs.append((_resources(bundle), count))
    return pairs, dropped


def _placement_groups(gangs: Iterable[GangResourceRequest]) -> tuple[PlacementGroup, ...]:
    """Pending placement groups, alike ones counted together."""
    counts: dict[tuple[Strategy, tuple[Resources, ...]], int] = {}
    for gang in gangs:
        bundles = tuple(_resources(r.resources_bundle) for r in gang.requests)
        if bundles:
            key = (parse_strategy(gang.details), bundles)
            counts[key] = counts.get(key, 0) + 1
    return tuple(
        PlacementGroup(strategy, bundles, n) for (strategy, bundles), n in sorted(counts.items())
    )


@dataclass
class _NodeRead:
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
    ) -> _NodeRead:
        """Every live worker node of ``states``, at most one per pod (its newest, module
        :mod:`~keda_ray_scaler.agent.node_ages`); dead ones only by their pod name."""
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
            total=_resources(ns.total_resources),
            available=_resources(ns.available_resources),
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
