"""Cluster spec and snapshot files: parsed once into frozen model values; no network.

Every error is a :class:`~keda_ray_scaler.errors.ConfigError` naming the file, the field path
(``workerGroups[1].resources.memory``) and what is wrong. Unknown keys are rejected, so a typo
never silently becomes a default. Each field is read by a decoder of
:mod:`~keda_ray_scaler.config_fields`; this module assembles whole specs and snapshots.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keda_ray_scaler.config_fields import (
    as_dns_label,
    as_enum,
    as_int,
    as_int32,
    as_labels,
    as_list,
    as_mapping,
    as_number,
    as_selectors,
    field_path,
    parse_resources,
    required,
)
from keda_ray_scaler.documents import load_document
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.labels import Selectors
from keda_ray_scaler.model import (
    DEFAULT_COST,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_UPSCALING_SPEED,
    INT32_MAX,
    Bundle,
    ClusterSpec,
    Demand,
    JoinFailure,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Strategy,
    WorkerGroup,
    WorkerNode,
)

_CLUSTER_KEYS = ("cluster", "maxWorkers", "upscalingSpeed", "workerGroups")
_GROUP_KEYS = (
    "name",
    "resources",
    "minReplicas",
    "maxReplicas",
    "idleTimeoutSeconds",
    "cost",
    "labels",
    "priority",
)
_SNAPSHOT_KEYS = ("bundles", "placementGroups", "constraints", "nodes")
_BUNDLE_KEYS = ("resources", "count", "selectors")
_PG_KEYS = ("strategy", "bundles", "count", "bundleSelectors")
_NODE_KEYS = (
    "group",
    "pod",
    "total",
    "available",
    "idleSeconds",
    "state",
    "nodeId",
    "reason",
    "labels",
)


def _group(data: object, where: str, field: str) -> WorkerGroup:
    g = as_mapping(data, where, field, _GROUP_KEYS)
    name = as_dns_label(required(g, "name", where, field), where, field_path(field, "name"))
    resources = parse_resources(
        required(g, "resources", where, field), where, field_path(field, "resources")
    )
    min_replicas = as_int(g.get("minReplicas", 0), where, field_path(field, "minReplicas"))
    max_replicas = as_int(g.get("maxReplicas", INT32_MAX), where, field_path(field, "maxReplicas"))
    if max_replicas < min_replicas:
        raise ConfigError(
            where,
            field_path(field, "maxReplicas"),
            f"{max_replicas} is below minReplicas {min_replicas}",
        )
    idle = as_number(
        g.get("idleTimeoutSeconds", DEFAULT_IDLE_TIMEOUT_S),
        where,
        field_path(field, "idleTimeoutSeconds"),
    )
    cost = as_number(g.get("cost", DEFAULT_COST), where, field_path(field, "cost"))
    labels = as_labels(g.get("labels", {}), where, field_path(field, "labels"))
    priority = as_int32(g.get("priority", 0), where, field_path(field, "priority"))
    return WorkerGroup(name, resources, min_replicas, max_replicas, idle, cost, labels, priority)


def parse_cluster_spec(data: object, where: str) -> ClusterSpec:
    """A cluster spec (already loaded from YAML or JSON); ``where`` names its source."""
    top = as_mapping(data, where, "", _CLUSTER_KEYS)
    name = as_dns_label(required(top, "cluster", where, ""), where, "cluster")
    raw_groups = as_list(required(top, "workerGroups", where, ""), where, "workerGroups")
    if not raw_groups:
        raise ConfigError(where, "workerGroups", "at least one worker group is required")
    groups = tuple(_group(g, where, f"workerGroups[{i}]") for i, g in enumerate(raw_groups))
    seen: set[str] = set()
    for i, g in enumerate(groups):
        if g.name in seen:
            raise ConfigError(
                where, f"workerGroups[{i}].name", f"duplicate worker group {g.name!r}"
            )
        seen.add(g.name)
    max_workers = top.get("maxWorkers")
    if max_workers is not None:
        max_workers = as_int(max_workers, where, "maxWorkers")
    speed = as_number(
        top.get("upscalingSpeed", DEFAULT_UPSCALING_SPEED), where, "upscalingSpeed", positive=True
    )
    return ClusterSpec(name, groups, max_workers, speed)


def load_cluster_spec(path: str | Path) -> ClusterSpec:
    """Read and parse a cluster spec file (JSON, or YAML)."""
    return parse_cluster_spec(load_document(path), str(path))


def _bundle(data: object, where: str, field: str) -> Bundle:
    b = as_mapping(data, where, field, _BUNDLE_KEYS)
    resources = parse_resources(
        required(b, "resources", where, field), where, field_path(field, "resources")
    )
    count = as_int(b.get("count", 1), where, field_path(field, "count"))
    selectors = as_selectors(b.get("selectors", []), where, field_path(field, "selectors"))
    return Bundle(resources, count, selectors)


def _placement_group(data: object, where: str, field: str) -> PlacementGroup:
    pg = as_mapping(data, where, field, _PG_KEYS)
    raw = required(pg, "strategy", where, field)
    try:
        strategy = Strategy(raw)
    except ValueError as exc:
        allowed = ", ".join(s.value for s in Strategy)
        raise ConfigError(
            where, field_path(field, "strategy"), f"{raw!r} is not one of {allowed}"
        ) from exc
    raw_bundles = as_list(
        required(pg, "bundles", where, field), where, field_path(field, "bundles")
    )
    if not raw_bundles:
        raise ConfigError(where, field_path(field, "bundles"), "a placement group needs bundles")
    bundles = tuple(
        parse_resources(b, where, f"{field_path(field, 'bundles')}[{i}]")
        for i, b in enumerate(raw_bundles)
    )
    count = as_int(pg.get("count", 1), where, field_path(field, "count"))
    return PlacementGroup(
        strategy, bundles, count, _bundle_selectors(pg, len(bundles), where, field)
    )


def _bundle_selectors(
    pg: Mapping[str, Any], bundles: int, where: str, field: str
) -> tuple[Selectors, ...]:
    """``bundleSelectors``: one selector per bundle, in Ray's dict form (``{}``: none)."""
    at = field_path(field, "bundleSelectors")
    raw = as_list(pg.get("bundleSelectors", []), where, at)
    if raw and len(raw) != bundles:
        raise ConfigError(where, at, f"{len(raw)} selectors for {bundles} bundles")
    return tuple(as_selectors([s], where, f"{at}[{i}]") for i, s in enumerate(raw))


def _node(data: object, where: str, field: str, cluster: ClusterSpec) -> WorkerNode:
    n = as_mapping(data, where, field, _NODE_KEYS)
    group_name = required(n, "group", where, field)
    group = cluster.group(group_name) if isinstance(group_name, str) else None
    if group is None:
        known = ", ".join(g.name for g in cluster.worker_groups)
        raise ConfigError(
            where,
            field_path(field, "group"),
            f"unknown worker group {group_name!r} (known: {known})",
        )
    pod = required(n, "pod", where, field)
    if not isinstance(pod, str) or not pod:
        raise ConfigError(where, field_path(field, "pod"), f"expected a pod name, got {pod!r}")
    state = as_enum(
        NodeStatus, n.get("state", NodeStatus.RUNNING.value), where, field_path(field, "state")
    )
    total = group.resources
    if "total" in n:
        total = parse_resources(n["total"], where, field_path(field, "total"))
    available = total
    if "available" in n:
        available = parse_resources(n["available"], where, field_path(field, "available"))
    if not available.fits_in(total):
        raise ConfigError(
            where, field_path(field, "available"), f"{available} exceeds total {total}"
        )
    idle = as_number(n.get("idleSeconds", 0), where, field_path(field, "idleSeconds"))
    node_id = n.get("nodeId", "")
    if not isinstance(node_id, str):
        raise ConfigError(where, field_path(field, "nodeId"), f"expected a string, got {node_id!r}")
    failure = None
    if state is NodeStatus.FAILING:
        reason = n.get("reason", JoinFailure.NOT_JOINED.value)
        failure = as_enum(JoinFailure, reason, where, field_path(field, "reason"))
    elif "reason" in n:
        raise ConfigError(where, field_path(field, "reason"), "only a failing node has a reason")
    labels = as_labels(n.get("labels", {}), where, field_path(field, "labels"))
    return WorkerNode(pod, group.name, total, available, idle, state, node_id, failure, labels)


def parse_snapshot(data: object, where: str, cluster: ClusterSpec) -> PlanningInput:
    """A snapshot (demand and current pods) for ``cluster``; an empty document is no demand."""
    top = as_mapping({} if data is None else data, where, "", _SNAPSHOT_KEYS)

    def items(key: str) -> list[Any]:
        return [] if top.get(key) is None else as_list(top[key], where, key)

    bundles = tuple(_bundle(b, where, f"bundles[{i}]") for i, b in enumerate(items("bundles")))
    pgs = tuple(
        _placement_group(p, where, f"placementGroups[{i}]")
        for i, p in enumerate(items("placementGroups"))
    )
    constraints = tuple(
        _bundle(b, where, f"constraints[{i}]") for i, b in enumerate(items("constraints"))
    )
    nodes = tuple(_node(n, where, f"nodes[{i}]", cluster) for i, n in enumerate(items("nodes")))
    seen: set[str] = set()
    for i, node in enumerate(nodes):
        if node.pod in seen:
            raise ConfigError(where, f"nodes[{i}].pod", f"duplicate pod {node.pod!r}")
        seen.add(node.pod)
    return PlanningInput(cluster, Demand(bundles, pgs, constraints), nodes)


def load_snapshot(path: str | Path, cluster: ClusterSpec) -> PlanningInput:
    """Read and parse a snapshot file (JSON, or YAML) for ``cluster``."""
    return parse_snapshot(load_document(path), str(path), cluster)
