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
  KV key ``autoscaler_resource_request`` instead, which we read when the GCS has none (any
  task may write that key: a value that is no list of bundles is refused and read as no request,
  :mod:`~keda_ray_scaler.agent.ray.refusals`);
- ``node_states``: per node ``instance_id`` (KubeRay: ``RAY_CLOUD_INSTANCE_ID`` = pod name),
  ``ray_node_type_name`` (``RAY_NODE_TYPE_NAME`` = worker group), status, total and available
  resources, ``idle_duration_ms``, ``node_ip_address``, labels;
- label selectors of every demand (Ray 2.49+), read and checked by
  :mod:`~keda_ray_scaler.agent.ray.label_read`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from keda_ray_scaler.agent.ray.label_read import RawSelectors, checked_selectors, raw_selectors
from keda_ray_scaler.agent.ray.node_memo import NodeMemo
from keda_ray_scaler.agent.ray.refusals import Refusal, Refused
from keda_ray_scaler.agent.ray.shape_bound import merge_bundles
from keda_ray_scaler.agent.ray.status_nodes import (
    PG_RESOURCE,
    NodeRead,
    PodIps,
    PodRef,
    resources_of,
)
from keda_ray_scaler.agent.ray.task_load import QueuedShape
from keda_ray_scaler.agent.ray.task_load_read import Fallback
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import (
    ClusterResourceState,
    GangResourceRequest,
    GetClusterStatusReply,
)
from keda_ray_scaler.labels import LabelError, LabelSelector, Selectors, selectors_of
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    PlacementGroup,
    Resources,
    Strategy,
    WorkerNode,
)

#: Ray's internal KV key where ``request_resources()`` writes with autoscaler v1.
V1_REQUEST_KEY = b"autoscaler_resource_request"


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
    #: predecessor, :mod:`~keda_ray_scaler.agent.ray.node_ages`): left out of ``nodes``
    superseded: tuple[str, ...] = ()
    #: values read from Ray and left out (a malformed KV value, a node naming a pod it is not)
    refused: tuple[Refused, ...] = ()
    #: pods two live nodes name (a restarted raylet's, or an impostor's): never victims
    contested: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class V1Requests:
    """``request_resources()`` as read (v1's KV value, or the GCS's constraints): its bundles, or
    why the KV value was refused."""

    bundles: tuple[Bundle, ...] = ()
    refused: Refused | None = None


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


def parse_v1_requests(raw: bytes | None) -> V1Requests:
    """``request_resources()`` as written to the internal KV by autoscaler v1 (a JSON list of
    ``{resource: amount}`` bundles); never raises.

    Any task may write that key, so a value that is not such a list (not JSON, nested beyond
    the parser's depth, a bundle with an amount that is no non-negative finite number) is
    refused whole: no bundles, as if no request were set, and the reason.
    """
    if not raw:
        return V1Requests()
    try:
        items = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return V1Requests(refused=_v1_refused(Refusal.V1_REQUEST_NOT_JSON, raw, str(exc)))
    if not isinstance(items, list):
        what = f"expected a list, got {type(items).__name__}"
        return V1Requests(refused=_v1_refused(Refusal.V1_REQUEST_NOT_BUNDLES, raw, what))
    counts: dict[tuple[Resources, Selectors], int] = {}
    for item in items:
        read = _v1_item(item)
        if isinstance(read, str):
            return V1Requests(refused=_v1_refused(Refusal.V1_REQUEST_NOT_BUNDLES, raw, read))
        if read[0]:
            counts[read] = counts.get(read, 0) + 1
    return V1Requests(tuple(Bundle(r, n, sel) for (r, sel), n in sorted(counts.items())))


def _v1_item(item: object) -> tuple[Resources, Selectors] | str:
    """One request: ``{resource: amount}`` (Ray 2.10-2.50; 2.60 again), or
    ``{"resources": {...}, "label_selector": {...}}`` (Ray 2.51's ``request_resources`` with
    autoscaler v1); else what is wrong with it."""
    selector: object = {}
    if isinstance(item, dict) and set(item) == {"resources", "label_selector"}:
        selector = item["label_selector"]
        item = item["resources"]
    if not isinstance(item, dict) or not _is_bundle(item) or not isinstance(selector, dict):
        return f"bad bundle {str(item)[:80]}"
    try:
        selectors = selectors_of([LabelSelector.from_ray(selector)]) if selector else ()
    except (LabelError, TypeError, AttributeError) as exc:
        return f"bad label_selector: {str(exc)[:80]}"
    return resources_of(item), selectors


def _is_bundle(item: object) -> bool:
    """``{resource: amount}`` with every amount a non-negative finite number (not a bool)."""
    return isinstance(item, dict) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
        for v in item.values()
    )


def _v1_refused(reason: Refusal, raw: bytes, problem: str) -> Refused:
    value = raw.decode(errors="replace")
    return Refused(reason, value, f"{V1_REQUEST_KEY.decode()}: {problem}")


def parse_status(
    reply: GetClusterStatusReply,
    cluster: ClusterSpec,
    *,
    v1_requests: bytes | None = None,
    pods: Iterable[PodRef] | None = None,
    tasks: Iterable[QueuedShape] | None = None,
    first_seen: Mapping[str, int] | None = None,
    stale: frozenset[str] = frozenset(),
    memo: NodeMemo | None = None,
) -> RayState:
    """Demand and worker nodes from a ``GetClusterStatusReply`` (pure; ``memo`` spares reads).

    ``tasks``, when given, is the task and actor demand in place of the reply's
    ``pending_resource_requests`` (rule R1's, :mod:`~keda_ray_scaler.agent.ray.task_load`).

    Node mapping, as KubeRay sets it up: ``instance_id`` is the pod name and
    ``ray_node_type_name`` the worker group; a node lacking either is looked up by its IP among
    ``pods`` (the active pods and their IPs, as Kubernetes reports them; a node names a pod
    whose IPs are known only from one of them). A node still without both is exported with
    group ``""`` (pod = its node id when no name is known) and counted in ``unmapped``. The head
    is never a worker. Dead nodes are left out. A pod that lists two live nodes keeps the one
    ``first_seen`` (node id -> the poll it was first seen in,
    :mod:`~keda_ray_scaler.agent.ray.node_ages`) saw last; the others are ``superseded``, the
    pod ``contested`` (so is a pod whose live node is superseded by a dead one). What breaks a
    rule of :mod:`~keda_ray_scaler.agent.ray.refusals` is left out and listed in ``refused``
    (:class:`~keda_ray_scaler.agent.ray.status_nodes.NodeRead`).
    """
    state = reply.cluster_resource_state
    refused: list[Refused] = []
    task_bundles, dropped = _task_bundles(_task_raw(state, tasks), refused)
    v1 = _constraints(state, v1_requests, refused)
    demand = Demand(
        bundles=merge_bundles(task_bundles),
        placement_groups=_placement_groups(state.pending_gang_resource_requests, refused),
        constraints=v1.bundles,
    )
    read = NodeRead.of(
        state.node_states,
        PodIps.of(pods or ()),
        {g.name for g in cluster.worker_groups},
        first_seen or {},
        stale,
        memo,
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
        refused=(*([v1.refused] if v1.refused else []), *refused, *read.refused),
        contested=frozenset(read.contested),
    )


def _constraints(
    state: ClusterResourceState, v1_requests: bytes | None, refused: list[Refused]
) -> V1Requests:
    """``request_resources()``: the GCS's constraints (autoscaler v2), else v1's KV value."""
    gcs: list[Bundle] = []
    for c in state.cluster_resource_constraints:
        for r in c.resource_requests:
            raw = raw_selectors(r.request.label_selectors)
            sels = _selectors(raw, "request_resources bundle", refused)
            if sels is not None:
                gcs.append(Bundle(resources_of(r.request.resources_bundle), r.count, sels))
    merged = merge_bundles(gcs)
    return V1Requests(merged) if merged else parse_v1_requests(v1_requests)


def _task_raw(
    state: ClusterResourceState, tasks: Iterable[QueuedShape] | None
) -> list[tuple[Mapping[str, float], int, RawSelectors]]:
    """Task and actor demand as read: R1's ``tasks`` when given, else the snapshot's."""
    if tasks is not None:
        return [(q.as_dict(), q.count, q.selectors) for q in tasks]
    return [
        (dict(rc.request.resources_bundle), rc.count, raw_selectors(rc.request.label_selectors))
        for rc in state.pending_resource_requests
    ]


def _selectors(raw: RawSelectors, what: str, refused: list[Refused]) -> Selectors | None:
    """Checked selectors, or None with the refusal appended."""
    sels, why = checked_selectors(raw, what)
    if why is not None:
        refused.append(why)
    return sels


def _task_bundles(
    raw: Iterable[tuple[Mapping[str, float], int, RawSelectors]], refused: list[Refused]
) -> tuple[list[Bundle], int]:
    """Task and actor bundles, and how many shapes were left out: a shape that asks for a
    placement group's bundle resource runs in a bundle already counted as the group's (one
    whose selectors are refused is left out too, and refused)."""
    out: list[Bundle] = []
    dropped = 0
    for bundle, count, raw_sels in raw:
        if any(PG_RESOURCE.match(k) for k in bundle):
            dropped += 1
            continue
        sels = _selectors(raw_sels, "task or actor demand", refused)
        if sels is not None:
            out.append(Bundle(resources_of(bundle), count, sels))
    return out, dropped


def _placement_groups(
    gangs: Iterable[GangResourceRequest], refused: list[Refused]
) -> tuple[PlacementGroup, ...]:
    """Pending placement groups (bundles with their selectors, as Ray's v2 reads them: the
    first ``bundle_selectors`` when given), alike ones counted together; a group with a bundle
    whose selectors are refused is left out."""
    counts: dict[tuple[Strategy, tuple[Resources, ...], tuple[Selectors, ...]], int] = {}
    for gang in gangs:
        requests = (
            gang.bundle_selectors[0].resource_requests if gang.bundle_selectors else gang.requests
        )
        sels = [
            _selectors(raw_selectors(r.label_selectors), "placement group", refused)
            for r in requests
        ]
        bundles = tuple(resources_of(r.resources_bundle) for r in requests)
        if bundles and all(s is not None for s in sels):
            per_bundle = tuple(s or () for s in sels) if any(sels) else ()
            key = (parse_strategy(gang.details), bundles, per_bundle)
            counts[key] = counts.get(key, 0) + 1
    return tuple(
        PlacementGroup(strategy, bundles, n, per_bundle)
        for (strategy, bundles, per_bundle), n in sorted(counts.items())
    )
