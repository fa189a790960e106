"""The scaler's side of the metrics contract: the series back to cluster snapshots, checked.

A bad series (NaN, an infinity, a negative or absurd value, a missing freshness series, a
malformed shape) raises :class:`~keda_ray_scaler.errors.SchemaError`; series that do not match the
agent's seal raise :class:`~keda_ray_scaler.errors.UntrustedData` (:mod:`.digest`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from keda_ray_scaler import schema
from keda_ray_scaler.errors import SchemaError, ShapeError
from keda_ray_scaler.labels import Labels, Selectors, parse_selectors
from keda_ray_scaler.model import (
    DEFAULT_COST,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_UPSCALING_SPEED,
    INT32_MAX,
    INT32_MIN,
    Bundle,
    ClusterSpec,
    Demand,
    DemandKind,
    JoinFailure,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
    to_units,
)
from keda_ray_scaler.schema import (
    ClusterSnapshot,
    Sample,
    decode_bundles,
    decode_name,
    decode_shape,
    digest,
)


def group_by_cluster(samples: Iterable[Sample]) -> dict[str, list[Sample]]:
    """Samples split by their ``cluster`` label (samples without one are ignored)."""
    out: dict[str, list[Sample]] = {}
    for s in samples:
        cluster = s.labels.get(schema.LABEL_CLUSTER)
        if cluster:
            out.setdefault(cluster, []).append(s)
    return out


#: A cluster's seal key by its name (``None``: the seal is checked unkeyed).
SealKeys = Callable[[str], bytes | None]


def decode(samples: Iterable[Sample], keys: SealKeys | None = None) -> dict[str, ClusterSnapshot]:
    """Every cluster found in ``samples``; raises :class:`SchemaError` on the first bad one.
    With ``keys``, each cluster's seal is checked under its key."""
    return {
        c: decode_cluster(c, s, keys(c) if keys else None)
        for c, s in sorted(group_by_cluster(samples).items())
    }


def decode_cluster(
    cluster: str, samples: Iterable[Sample], key: bytes | None = None
) -> ClusterSnapshot:
    """One cluster's snapshot from its samples; the inverse of ``encoding.encode``.

    Nodes whose group is not a known worker group (unmapped Ray nodes) are left out: they cannot
    be scaled. Missing freshness series, NaN, infinities, negatives and absurd values raise
    SchemaError; series that carry the agent's seal but do not match it raise ``UntrustedData``
    (``digest_mismatch``, :func:`~keda_ray_scaler.schema.digest.check`). Series without a seal
    decode: whether to accept them is the source's to say.
    """
    own = [s for s in samples if s.labels.get(schema.LABEL_CLUSTER) == cluster]
    for s in own:
        _check_value(s)
    digest.check(cluster, own, key)  # a sealed snapshot must match its seal before any decoding
    by_name: dict[str, list[Sample]] = {}
    for s in own:
        by_name.setdefault(s.name, []).append(s)
    try:
        return _decode(cluster, by_name)
    except (ShapeError, KeyError, ValueError) as exc:
        if isinstance(exc, SchemaError):
            raise
        raise SchemaError(f"cluster {cluster!r}: {exc}") from exc


def check_finite(name: str, labels: Mapping[str, str], value: float) -> None:
    """SchemaError naming the series when ``value`` is NaN or infinite: no rule downstream
    (comparisons, sums, ``int()``) behaves on them, so they stop here, wherever a value enters."""
    if math.isnan(value) or math.isinf(value):
        raise SchemaError(f"{name}{dict(labels)}: value {value} is not a finite number")


def _check_value(s: Sample) -> None:
    v = s.value
    check_finite(s.name, s.labels, v)
    if v < 0 or v > schema.MAX_AMOUNT:
        raise SchemaError(f"{s.name}{dict(s.labels)}: value {v} is out of range")


def _count(s: Sample, limit: int = schema.MAX_COUNT) -> int:
    if s.value != int(s.value) or s.value > limit:
        raise SchemaError(f"{s.name}{dict(s.labels)}: {s.value} is not a count")
    return int(s.value)


def _one(by_name: dict[str, list[Sample]], name: str, cluster: str) -> Sample:
    found = by_name.get(name, [])
    if len(found) != 1:
        raise SchemaError(f"cluster {cluster!r}: expected one {name} series, found {len(found)}")
    return found[0]


def _per_group(by_name: dict[str, list[Sample]], name: str) -> dict[str, Sample]:
    return {s.labels[schema.LABEL_GROUP]: s for s in by_name.get(name, [])}


def _decode(cluster: str, by_name: dict[str, list[Sample]]) -> ClusterSnapshot:
    when = _one(by_name, schema.SNAPSHOT_TIMESTAMP, cluster).value
    success = _one(by_name, schema.SNAPSHOT_SUCCESS, cluster).value == 1.0
    spec = _decode_spec(cluster, by_name)
    known = {g.name for g in spec.worker_groups}
    limits = _per_group(by_name, schema.GROUP_LAUNCH_LIMIT)
    launch = tuple((g, _count(limits[g])) for g in sorted(limits) if g in known)
    nodes = _decode_nodes(by_name, known, when)
    return ClusterSnapshot(
        PlanningInput(spec, _decode_demand(by_name), nodes, launch), when, success
    )


def _decode_spec(cluster: str, by_name: dict[str, list[Sample]]) -> ClusterSpec:
    speed = by_name.get(schema.CLUSTER_UPSCALING_SPEED, [])
    max_workers = by_name.get(schema.CLUSTER_MAX_WORKERS, [])
    mins, maxs = (
        _per_group(by_name, schema.GROUP_MIN_REPLICAS),
        _per_group(by_name, schema.GROUP_MAX_REPLICAS),
    )
    idles, costs = (
        _per_group(by_name, schema.GROUP_IDLE_TIMEOUT),
        _per_group(by_name, schema.GROUP_COST),
    )
    groups = []
    for s in sorted(by_name.get(schema.GROUP_INFO, []), key=lambda s: s.labels[schema.LABEL_GROUP]):
        name = s.labels[schema.LABEL_GROUP]
        groups.append(
            WorkerGroup(
                name=name,
                resources=decode_shape(s.labels[schema.LABEL_SHAPE]),
                min_replicas=_count(mins[name]) if name in mins else 0,
                max_replicas=_count(maxs[name], INT32_MAX) if name in maxs else INT32_MAX,
                idle_timeout_s=idles[name].value if name in idles else DEFAULT_IDLE_TIMEOUT_S,
                cost=costs[name].value if name in costs else DEFAULT_COST,
                labels=Labels.parse(s.labels.get(schema.LABEL_LABELS, "")),
                priority=_priority(s),
            )
        )
    return ClusterSpec(
        name=cluster,
        worker_groups=tuple(groups),
        max_workers=_count(max_workers[0]) if max_workers else None,
        upscaling_speed=speed[0].value if speed else DEFAULT_UPSCALING_SPEED,
    )


def _priority(s: Sample) -> int:
    """A group's ``priority`` label: a decimal int32, 0 when absent."""
    text = s.labels.get(schema.LABEL_PRIORITY, "")
    if not text:
        return 0
    digits = text[1:] if text[:1] == "-" else text
    value = int(text) if digits.isdigit() and digits.isascii() and len(digits) <= 10 else None
    if value is None or not INT32_MIN <= value <= INT32_MAX:
        raise SchemaError(f"{s.name}{dict(s.labels)}: priority {text[:20]!r} is no int32")
    return value


def _pg_selectors(text: str, bundles: int) -> tuple[Selectors, ...]:
    """A placement group's ``selector`` label: one list per bundle (none when absent)."""
    if not text:
        return ()
    parts = text.split(schema.BUNDLE_SELECTOR_SEP)
    if len(parts) != bundles:
        raise ShapeError(f"{len(parts)} selector lists for {bundles} bundles: {text[:120]!r}")
    return tuple(parse_selectors(p) for p in parts)


def _decode_demand(by_name: dict[str, list[Sample]]) -> Demand:
    bundles: list[Bundle] = []
    constraints: list[Bundle] = []
    pgs: list[PlacementGroup] = []
    for s in by_name.get(schema.DEMAND_BUNDLES, []):
        count = _count(s)
        if count == 0:
            continue
        kind = DemandKind(s.labels[schema.LABEL_KIND])
        selector = s.labels.get(schema.LABEL_SELECTOR, "")
        if kind is DemandKind.PLACEMENT_GROUP:
            strategy = Strategy(s.labels[schema.LABEL_STRATEGY])
            shapes = decode_bundles(s.labels[schema.LABEL_SHAPE])
            per_bundle = _pg_selectors(selector, len(shapes))
            pgs.append(PlacementGroup(strategy, shapes, count, per_bundle))
        else:
            target = bundles if kind is DemandKind.TASK else constraints
            shape = decode_shape(s.labels[schema.LABEL_SHAPE])
            target.append(Bundle(shape, count, parse_selectors(selector)))
    return Demand(
        bundles=tuple(sorted(bundles, key=lambda b: (b.resources, b.selectors))),
        placement_groups=tuple(sorted(pgs, key=lambda p: (p.strategy, p.bundles, p.selectors))),
        constraints=tuple(sorted(constraints, key=lambda b: (b.resources, b.selectors))),
    )


def _decode_nodes(
    by_name: dict[str, list[Sample]], known: set[str], when: float
) -> tuple[WorkerNode, ...]:
    totals = _node_vectors(by_name.get(schema.NODE_TOTAL, []))
    avails = _node_vectors(by_name.get(schema.NODE_AVAILABLE, []))
    idle_s = idle_times(by_name, when)
    nodes = []
    for s in sorted(by_name.get(schema.NODE_INFO, []), key=lambda s: s.labels[schema.LABEL_POD]):
        pod, group = s.labels[schema.LABEL_POD], s.labels[schema.LABEL_GROUP]
        if group not in known:
            continue
        nodes.append(
            WorkerNode(
                pod=pod,
                group=group,
                total=totals.get(pod, Resources()),
                available=avails.get(pod, Resources()),
                idle_s=idle_s.get(pod, 0.0),
                status=NodeStatus(s.labels[schema.LABEL_STATE]),
                node_id=s.labels.get(schema.LABEL_NODE_ID, ""),
                failure=_failure(s),
                labels=Labels.parse(s.labels.get(schema.LABEL_LABELS, "")),
            )
        )
    return tuple(nodes)


def idle_times(by_name: Mapping[str, list[Sample]], when: float) -> dict[str, float]:
    """Each pod's idle time at the snapshot's time ``when``: ``when`` minus its idle-since time,
    at least 0 (0 for a busy node's 0), or the idle seconds an agent older than that series
    exports; a pod with both is read from its idle-since time."""
    out = {s.labels[schema.LABEL_POD]: s.value for s in by_name.get(schema.NODE_IDLE_SECONDS, [])}
    for s in by_name.get(schema.NODE_IDLE_SINCE, []):
        out[s.labels[schema.LABEL_POD]] = max(when - s.value, 0.0) if s.value > 0 else 0.0
    return out


def _failure(s: Sample) -> JoinFailure | None:
    """A failing pod's reason (an agent that names none: not joined); None for any other."""
    if s.labels[schema.LABEL_STATE] != NodeStatus.FAILING.value:
        return None
    return JoinFailure(s.labels.get(schema.LABEL_REASON) or JoinFailure.NOT_JOINED.value)


def _node_vectors(samples: list[Sample]) -> dict[str, Resources]:
    units: dict[str, dict[str, int]] = {}
    for s in samples:
        name = decode_name(s.labels[schema.LABEL_RESOURCE])
        units.setdefault(s.labels[schema.LABEL_POD], {})[name] = to_units(s.value)
    return {pod: Resources.from_units(u) for pod, u in units.items()}
