"""The agent's side of the metrics contract: a cluster snapshot as its series."""

from __future__ import annotations

from keda_ray_scaler import schema
from keda_ray_scaler.model import RESOURCE_SCALE, DemandKind
from keda_ray_scaler.schema import (
    ClusterSnapshot,
    Sample,
    encode_bundles,
    encode_name,
    encode_shape,
)


def encode(snapshot: ClusterSnapshot) -> list[Sample]:
    """Every series of one cluster's snapshot, in a deterministic order."""
    spec = snapshot.input.cluster
    c = {schema.LABEL_CLUSTER: spec.name}
    out = [
        Sample(schema.SNAPSHOT_TIMESTAMP, c, snapshot.snapshot_time_s),
        Sample(schema.SNAPSHOT_SUCCESS, c, 1.0 if snapshot.success else 0.0),
        Sample(schema.CLUSTER_UPSCALING_SPEED, c, spec.upscaling_speed),
    ]
    if spec.max_workers is not None:
        out.append(Sample(schema.CLUSTER_MAX_WORKERS, c, float(spec.max_workers)))
    for g in spec.worker_groups:
        gl = {**c, schema.LABEL_GROUP: g.name}
        out += [
            Sample(schema.GROUP_INFO, {**gl, schema.LABEL_SHAPE: encode_shape(g.resources)}, 1.0),
            Sample(schema.GROUP_MIN_REPLICAS, gl, float(g.min_replicas)),
            Sample(schema.GROUP_MAX_REPLICAS, gl, float(g.max_replicas)),
            Sample(schema.GROUP_IDLE_TIMEOUT, gl, g.idle_timeout_s),
            Sample(schema.GROUP_COST, gl, g.cost),
        ]
        limit = snapshot.input.launch_limit(g.name)
        if limit is not None:
            out.append(Sample(schema.GROUP_LAUNCH_LIMIT, gl, float(limit)))
    demand: dict[tuple[str, str, str], int] = {}
    for kind, bundles in (
        (DemandKind.TASK, snapshot.input.demand.bundles),
        (DemandKind.CONSTRAINT, snapshot.input.demand.constraints),
    ):
        for b in bundles:
            key = (kind.value, encode_shape(b.resources), "")
            demand[key] = demand.get(key, 0) + b.count
    for pg in snapshot.input.demand.placement_groups:
        key = (DemandKind.PLACEMENT_GROUP.value, encode_bundles(pg.bundles), pg.strategy.value)
        demand[key] = demand.get(key, 0) + pg.count
    for (kind_label, shape, strategy), count in sorted(demand.items()):
        labels = {
            **c,
            schema.LABEL_KIND: kind_label,
            schema.LABEL_SHAPE: shape,
            schema.LABEL_STRATEGY: strategy,
        }
        out.append(Sample(schema.DEMAND_BUNDLES, labels, float(count)))
    for n in snapshot.input.nodes:
        pl = {**c, schema.LABEL_POD: n.pod}
        info = {
            **pl,
            schema.LABEL_GROUP: n.group,
            schema.LABEL_NODE_ID: n.node_id,
            schema.LABEL_STATE: n.status.value,
            schema.LABEL_REASON: n.failure.value if n.failure is not None else "",
        }
        out.append(Sample(schema.NODE_INFO, info, 1.0))
        for metric, vec in ((schema.NODE_TOTAL, n.total), (schema.NODE_AVAILABLE, n.available)):
            for name, units in vec:
                labels = {**pl, schema.LABEL_RESOURCE: encode_name(name)}
                out.append(Sample(metric, labels, units / RESOURCE_SCALE))
        out.append(Sample(schema.NODE_IDLE_SECONDS, pl, n.idle_s))
    return out
