"""The agent's side of the metrics contract: a cluster snapshot as its series.

:func:`encode` is the whole snapshot; its sections (:func:`head_samples`, :func:`group_samples`,
:func:`demand_samples`, :func:`node_samples`) are what it is made of, in its order, so a writer
that keeps the sections of an earlier poll (the agent's
:mod:`~keda_ray_scaler.agent.http.series_memo`) encodes again only the sections that changed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from keda_ray_scaler import schema
from keda_ray_scaler.labels import selectors_text
from keda_ray_scaler.model import (
    RESOURCE_SCALE,
    ClusterSpec,
    Demand,
    DemandKind,
    PlacementGroup,
    Resources,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.schema import (
    ClusterSnapshot,
    Sample,
    encode_bundles,
    encode_name,
    encode_shape,
)

#: How many demand shapes and placement groups' bundle lists :func:`demand_samples` keeps
#: encoded: a poll's demand moves its counts far more often than its shapes.
SHAPES_KEPT = 4_096
_shape_text = functools.lru_cache(maxsize=SHAPES_KEPT)(encode_shape)
_bundles_text = functools.lru_cache(maxsize=SHAPES_KEPT)(encode_bundles)


def forget_shapes() -> None:
    """Forget the shapes :func:`demand_samples` kept encoded (a new agent's start)."""
    _shape_text.cache_clear()
    _bundles_text.cache_clear()


def encode(snapshot: ClusterSnapshot) -> list[Sample]:
    """Every series of one cluster's snapshot, in a deterministic order."""
    spec = snapshot.input.cluster
    out = head_samples(spec, snapshot.snapshot_time_s, snapshot.success)
    out += group_samples(spec, snapshot.input.launch_limits)
    out += demand_samples(spec.name, snapshot.input.demand)
    for n in snapshot.input.nodes:
        out += node_samples(spec.name, n, snapshot.snapshot_time_s)
    return out


def head_samples(spec: ClusterSpec, snapshot_time_s: float, success: bool) -> list[Sample]:
    """The snapshot's time and success, and the cluster-wide settings."""
    c = {schema.LABEL_CLUSTER: spec.name}
    out = [
        Sample(schema.SNAPSHOT_TIMESTAMP, c, snapshot_time_s),
        Sample(schema.SNAPSHOT_SUCCESS, c, 1.0 if success else 0.0),
        Sample(schema.CLUSTER_UPSCALING_SPEED, c, spec.upscaling_speed),
    ]
    if spec.max_workers is not None:
        out.append(Sample(schema.CLUSTER_MAX_WORKERS, c, float(spec.max_workers)))
    return out


def group_samples(spec: ClusterSpec, launch_limits: tuple[tuple[str, int], ...]) -> list[Sample]:
    """Each worker group's spec, and its launch limit when it has one."""
    limits: dict[str, int] = {}
    for group, most in launch_limits:
        limits.setdefault(group, most)  # the first listed wins, as PlanningInput.launch_limit
    c = {schema.LABEL_CLUSTER: spec.name}
    out: list[Sample] = []
    for g in spec.worker_groups:
        gl = {**c, schema.LABEL_GROUP: g.name}
        out += [
            Sample(schema.GROUP_INFO, {**gl, **_group_info(g)}, 1.0),
            Sample(schema.GROUP_MIN_REPLICAS, gl, float(g.min_replicas)),
            Sample(schema.GROUP_MAX_REPLICAS, gl, float(g.max_replicas)),
            Sample(schema.GROUP_IDLE_TIMEOUT, gl, g.idle_timeout_s),
            Sample(schema.GROUP_COST, gl, g.cost),
        ]
        limit = limits.get(g.name)
        if limit is not None:
            out.append(Sample(schema.GROUP_LAUNCH_LIMIT, gl, float(limit)))
    return out


def demand_samples(cluster: str, demand: Demand) -> list[Sample]:
    """The pending demand: one series per kind, shape, strategy and label selectors, alike
    bundles summed."""
    counts: dict[tuple[str, str, str, str], int] = {}
    for kind, bundles in (
        (DemandKind.TASK, demand.bundles),
        (DemandKind.CONSTRAINT, demand.constraints),
    ):
        for b in bundles:
            key = (kind.value, _shape_text(b.resources), "", selectors_text(b.selectors))
            counts[key] = counts.get(key, 0) + b.count
    for pg in demand.placement_groups:
        shape, strategy = _bundles_text(pg.bundles), pg.strategy.value
        key = (DemandKind.PLACEMENT_GROUP.value, shape, strategy, bundle_selectors_text(pg))
        counts[key] = counts.get(key, 0) + pg.count
    out = []
    for (kind_label, shape, strategy, selector), count in sorted(counts.items()):
        labels = {
            schema.LABEL_CLUSTER: cluster,
            schema.LABEL_KIND: kind_label,
            schema.LABEL_SHAPE: shape,
            schema.LABEL_STRATEGY: strategy,
        }
        if selector:
            labels[schema.LABEL_SELECTOR] = selector
        out.append(Sample(schema.DEMAND_BUNDLES, labels, float(count)))
    return out


def bundle_selectors_text(pg: PlacementGroup) -> str:
    """A placement group's ``selector`` label: each bundle's list, joined by ``|``; ``""``
    when no bundle has one."""
    return schema.BUNDLE_SELECTOR_SEP.join(map(selectors_text, pg.selectors))


def _group_info(g: WorkerGroup) -> Mapping[str, str]:
    """The labels of a group's info series beyond its name: shape, Ray labels, priority (the
    last two only when set, so a group without them exports what it did before them)."""
    out = {schema.LABEL_SHAPE: encode_shape(g.resources)}
    if g.labels:
        out[schema.LABEL_LABELS] = str(g.labels)
    if g.priority:
        out[schema.LABEL_PRIORITY] = str(g.priority)
    return out


def node_samples(cluster: str, n: WorkerNode, when: float) -> list[Sample]:
    """One worker pod of a snapshot taken at ``when``: its info, resources and idle-since time
    (:func:`idle_sample`, last)."""
    return [
        node_info(cluster, n),
        *resource_samples(cluster, n.pod, schema.NODE_TOTAL, n.total),
        *resource_samples(cluster, n.pod, schema.NODE_AVAILABLE, n.available),
        idle_sample(cluster, n.pod, idle_since(n, when)),
    ]


def idle_since(n: WorkerNode, when: float) -> float:
    """The idle-since time exported for ``n`` in a snapshot taken at ``when``: the node's own
    (the agent keeps it across polls), else ``when`` minus its idle time; 0 when not idle."""
    if n.idle_since_s > 0:
        return n.idle_since_s
    return when - n.idle_s if n.idle_s > 0 else 0.0


def node_info(cluster: str, n: WorkerNode) -> Sample:
    """One worker pod's info series (of everything but its resources and idle time)."""
    info = {
        schema.LABEL_CLUSTER: cluster,
        schema.LABEL_POD: n.pod,
        schema.LABEL_GROUP: n.group,
        schema.LABEL_NODE_ID: n.node_id,
        schema.LABEL_STATE: n.status.value,
        schema.LABEL_REASON: n.failure.value if n.failure is not None else "",
    }
    if n.labels:
        info[schema.LABEL_LABELS] = str(n.labels)
    return Sample(schema.NODE_INFO, info, 1.0)


def resource_samples(cluster: str, pod: str, metric: str, vec: Resources) -> list[Sample]:
    """One worker pod's resources of one kind (``metric``: total or available)."""
    return [
        Sample(
            metric,
            {
                schema.LABEL_CLUSTER: cluster,
                schema.LABEL_POD: pod,
                schema.LABEL_RESOURCE: encode_name(name),
            },
            units / RESOURCE_SCALE,
        )
        for name, units in vec
    ]


def idle_sample(cluster: str, pod: str, since_s: float) -> Sample:
    """Since when one worker pod's Ray node has been idle (unix seconds; 0: busy)."""
    return Sample(
        schema.NODE_IDLE_SINCE, {schema.LABEL_CLUSTER: cluster, schema.LABEL_POD: pod}, since_s
    )
