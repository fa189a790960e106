"""Ray's view of one cluster: pending demand and worker nodes, read from the GCS.

One RPC per poll, ``AutoscalerStateService/GetClusterStatus`` (:mod:`keda_ray_scaler.gcs.client`;
the call behind Ray's ``GcsClient.get_cluster_status()`` and
``ray.autoscaler.v2.sdk.get_cluster_status``), gives the snapshot S: nodes, placement groups,
constraints and Ray's summed task demand. By default (:attr:`DemandRead.EXACT`) the task and
actor demand is not S's sum but rule R1's, read after S: the head raylet's queue read directly
and the other nodes' queues from the GCS (:mod:`~keda_ray_scaler.agent.task_load`, two RPCs
more), so a task starting on a fresh node is never both pending and running; when those reads
fail the poll keeps S's sum and says why (``RayState.fallback``).
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

The agent command's reader first reads the head's Ray version (the internal KV key
``CLUSTER_METADATA``) and refuses one outside the supported range
(:mod:`keda_ray_scaler.gcs.versions`). The messages are Ray 2.60's; every version from 2.10 reads
the same way (``min_bundles``, the constraints' field before 2.41, is ``resource_requests``'s field
number), as ``tests/test_ray_versions.py`` shows against each.

Parsing is pure (:func:`parse_status`), so tests and the benchmark feed it synthetic replies.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Protocol

from keda_ray_scaler.agent.ports import SpecView, spec_view
from keda_ray_scaler.agent.task_load import QueuedShape
from keda_ray_scaler.agent.task_load_read import (
    HEAD_RESOURCE,
    Fallback,
    LoadsApi,
    RayletRead,
    read_task_load,
)
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs._generated import autoscaler_pb2
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import (
    GangResourceRequest,
    GetClusterStatusReply,
    NodeState,
)
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.gcs.raylet import HeadRaylet
from keda_ray_scaler.gcs.versions import (
    CLUSTER_METADATA_KEY,
    CLUSTER_NAMESPACE,
    UnsupportedRayVersion,
    parse_cluster_metadata,
    unsupported,
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


class DemandRead(StrEnum):
    """Where a poll's task and actor demand comes from."""

    EXACT = "exact"  # rule R1: the head raylet read after the snapshot (the default)
    GCS = "gcs"  # the snapshot's own sum, as Ray's autoscaler reads it (counts starts twice)


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


def _merge_counts(pairs: Iterable[tuple[Resources, int]]) -> tuple[Bundle, ...]:
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
) -> RayState:
    """Demand and worker nodes from a ``GetClusterStatusReply`` (pure).

    ``tasks``, when given, is the task and actor demand in place of the reply's
    ``pending_resource_requests`` (rule R1's, :mod:`~keda_ray_scaler.agent.task_load`).

    Node mapping, as KubeRay sets it up: ``instance_id`` is the pod name and
    ``ray_node_type_name`` the worker group; a node lacking either is looked up by its IP in
    ``pods_by_ip`` (the pod IPs Kubernetes reports). A node still without both is exported with
    group ``""`` (pod = its node id when no name is known) and counted in ``unmapped``. The head
    is never a worker. Dead nodes are left out.
    """
    state = reply.cluster_resource_state
    if tasks is None:
        raw = [
            (dict(rc.request.resources_bundle), rc.count) for rc in state.pending_resource_requests
        ]
    else:
        raw = [(q.as_dict(), q.count) for q in tasks]
    task_pairs, dropped = _task_bundles(raw)
    constraints = _merge_counts(
        (_resources(r.request.resources_bundle), r.count)
        for c in state.cluster_resource_constraints
        for r in c.resource_requests
    )
    demand = Demand(
        bundles=_merge_counts(task_pairs),
        placement_groups=_placement_groups(state.pending_gang_resource_requests),
        constraints=constraints or parse_v1_requests(v1_requests),
    )
    read = _NodeRead.of(
        state.node_states, pods_by_ip or {}, {g.name for g in cluster.worker_groups}
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

    @classmethod
    def of(
        cls, states: Iterable[NodeState], by_ip: Mapping[str, PodRef], known: set[str]
    ) -> _NodeRead:
        """Every live worker node of ``states``; dead ones only by their pod name."""
        read = cls()
        for ns in states:
            if ns.status == _DEAD:
                if ns.instance_id:  # never by IP: a new pod may have the dead one's address
                    read.dead.add(ns.instance_id)
            elif HEAD_RESOURCE not in ns.total_resources:
                read.add(ns, by_ip, known)
        return read

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


class GcsApi(LoadsApi, Protocol):
    """The GCS calls a poll makes (:class:`~keda_ray_scaler.gcs.client.GcsClient`)."""

    async def get_cluster_status(self, timeout_s: float) -> GetClusterStatusReply: ...

    async def internal_kv_get(
        self, key: bytes, namespace: bytes | None, timeout_s: float
    ) -> bytes | None: ...


class RayReader:
    """Polls one Ray cluster; also the :class:`~keda_ray_scaler.agent.ports.RayView`.

    Every call reads the GCS afresh (no cache), each RPC with a deadline of ``timeout_s``. Any
    failure is :class:`RayError`, after which the connection is made anew.

    With ``on_unsupported``, the first read also reads the head's Ray version
    (:mod:`keda_ray_scaler.gcs.versions`; one KV call more, until a version is known): a version
    outside the supported range is passed to ``on_unsupported`` and raised as
    :class:`UnsupportedRayVersion`, and nothing is read until a supported one is known (a read
    before the head wrote its version fails).

    ``demand`` chooses the task demand's source (:class:`DemandRead`); with R1 a failed raylet
    or load read is no failed poll, it is the state's ``fallback``.
    """

    def __init__(
        self,
        gcs: GcsConnection,
        cluster: ClusterSpec | SpecView,
        *,
        timeout_s: float = 5.0,
        pods_by_ip: Callable[[], Mapping[str, PodRef]] | None = None,
        on_unsupported: Callable[[UnsupportedRayVersion], None] | None = None,
        demand: DemandRead = DemandRead.EXACT,
        raylet: RayletRead | None = None,
    ) -> None:
        self._gcs = gcs
        self.demand = demand
        self._raylet: RayletRead = raylet if raylet is not None else HeadRaylet()
        self._on_unsupported = on_unsupported
        #: The head's Ray version once read (only with ``on_unsupported``).
        self.ray_version: str | None = None
        self._specs = spec_view(cluster)  # read at each parse: the groups as they are now
        self._timeout_s = timeout_s
        # Returns the current pod IP -> PodRef map (from the pod cache) for the IP fallback.
        self._pods_by_ip = pods_by_ip

    async def read(self) -> RayState:
        """Demand and nodes now; raises :class:`RayError` when Ray cannot be read."""
        # The pod-IP map is taken before the calls, as the pod cache has it now.
        by_ip = self._pods_by_ip() if self._pods_by_ip is not None else None
        try:
            client: GcsApi = self._gcs.get()
            if self._on_unsupported is not None and self.ray_version is None:
                await self._check_version(client, self._on_unsupported)
            reply = await client.get_cluster_status(timeout_s=self._timeout_s)
            v1 = None
            if not reply.cluster_resource_state.cluster_resource_constraints:
                v1 = await client.internal_kv_get(V1_REQUEST_KEY, None, timeout_s=self._timeout_s)
        except RayError:
            self._gcs.reset()
            raise
        if self.demand is DemandRead.GCS:
            return parse_status(reply, self._specs.spec, v1_requests=v1, pods_by_ip=by_ip)
        # R1: after S returned (never before, never beside it); no failure here fails the poll.
        tasks = await read_task_load(client, self._raylet, reply, self._timeout_s)
        state = parse_status(
            reply, self._specs.spec, v1_requests=v1, pods_by_ip=by_ip, tasks=tasks.queued
        )
        if tasks.fallback is None:
            return state
        return replace(state, fallback=tasks.fallback, fallback_error=tasks.error)

    async def read_version(self) -> str | None:
        """The head's Ray version (its cluster metadata); None while the head has written none."""
        client: GcsApi = self._gcs.get()
        raw = await client.internal_kv_get(
            CLUSTER_METADATA_KEY, CLUSTER_NAMESPACE, timeout_s=self._timeout_s
        )
        return None if raw is None else parse_cluster_metadata(raw)

    async def _check_version(
        self, client: GcsApi, on_unsupported: Callable[[UnsupportedRayVersion], None]
    ) -> None:
        raw = await client.internal_kv_get(
            CLUSTER_METADATA_KEY, CLUSTER_NAMESPACE, timeout_s=self._timeout_s
        )
        if raw is None:  # the head writes it just after its GCS starts: the next read asks again
            raise RayError(
                f"GCS {self._gcs.address}: no Ray version yet ({CLUSTER_METADATA_KEY.decode()} "
                "not written): nothing is read from a Ray of unknown version"
            )
        version = parse_cluster_metadata(raw)
        problem = unsupported(version)
        if problem is not None:
            refused = UnsupportedRayVersion(version, f"GCS {self._gcs.address}: {problem}")
            on_unsupported(refused)
            raise refused
        self.ray_version = version

    async def nodes(self) -> tuple[WorkerNode, ...]:
        """Mapped worker nodes (RayView): unmapped nodes are left out, they have no pod."""
        state = await self.read()
        return tuple(n for n in state.nodes if n.group)


def bound_shapes(demand: Demand, max_shapes: int) -> tuple[Demand, int]:
    """At most ``max_shapes`` demand series; returns the bounded demand and how many merged.

    A series is one task shape, one constraint shape or one placement-group bundle list. When
    there are too many, the kind with the most series gives up its smallest-count series first:
    they are merged into ONE series whose shape is their component-wise maximum and whose count
    is the sum of theirs, so every merged bundle is asked as at least as big as it was (never
    under-reporting). Merged placement groups become STRICT_SPREAD (the strategy needing the
    most pods) with the bundle-wise maximum of their lists, padded to the longest. Each kind
    keeps at least one series; ``max_shapes`` below 3 may therefore be exceeded.
    """
    kinds: dict[str, int] = {
        "bundles": len(demand.bundles),
        "constraints": len(demand.constraints),
        "pgs": len(demand.placement_groups),
    }
    excess = sum(kinds.values()) - max_shapes
    if excess <= 0:
        return demand, 0
    cut: dict[str, int] = {}
    for kind in sorted(kinds, key=lambda k: (-kinds[k], k)):
        take = min(excess, max(kinds[kind] - 1, 0))
        cut[kind] = take
        excess -= take
    merged = sum(n + 1 for n in cut.values() if n > 0)
    return (
        Demand(
            bundles=_merge_smallest(demand.bundles, cut["bundles"]),
            placement_groups=_merge_smallest_pgs(demand.placement_groups, cut["pgs"]),
            constraints=_merge_smallest(demand.constraints, cut["constraints"]),
        ),
        merged,
    )


def _max_shape(shapes: Iterable[Resources]) -> Resources:
    top: dict[str, int] = {}
    for r in shapes:
        for k, v in r:
            top[k] = max(top.get(k, 0), v)
    return Resources.from_units(top)


def _merge_smallest(bundles: tuple[Bundle, ...], cut: int) -> tuple[Bundle, ...]:
    if cut <= 0:
        return bundles
    order = sorted(bundles, key=lambda b: (b.count, b.resources))
    small, keep = order[: cut + 1], order[cut + 1 :]
    joined = Bundle(_max_shape(b.resources for b in small), sum(b.count for b in small))
    return _merge_counts([(b.resources, b.count) for b in [*keep, joined]])


def _merge_smallest_pgs(pgs: tuple[PlacementGroup, ...], cut: int) -> tuple[PlacementGroup, ...]:
    if cut <= 0:
        return pgs
    order = sorted(pgs, key=lambda p: (p.count, p.strategy, p.bundles))
    small, keep = order[: cut + 1], order[cut + 1 :]
    width = max(len(p.bundles) for p in small)
    bundles = tuple(
        _max_shape(p.bundles[i] for p in small if i < len(p.bundles)) for i in range(width)
    )
    joined = PlacementGroup(Strategy.STRICT_SPREAD, bundles, sum(p.count for p in small))
    counts: dict[tuple[Strategy, tuple[Resources, ...]], int] = {}
    for p in [*keep, joined]:
        counts[(p.strategy, p.bundles)] = counts.get((p.strategy, p.bundles), 0) + p.count
    return tuple(PlacementGroup(s, b, n) for (s, b), n in sorted(counts.items()))
