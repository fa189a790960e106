"""Cluster spec and snapshot files: parsed once into frozen model values; no network.

Every error is a :class:`~keda_ray_scaler.errors.ConfigError` naming the file, the field path
(``workerGroups[1].resources.memory``) and what is wrong. Unknown keys are rejected, so a typo
never silently becomes a default.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, TypeVar

from keda_ray_scaler.documents import load_document
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import is_dns_label
from keda_ray_scaler.model import (
    BYTE_RESOURCES,
    DEFAULT_COST,
    DEFAULT_IDLE_TIMEOUT_S,
    INT32_MAX,
    RESOURCE_SCALE,
    Bundle,
    ClusterSpec,
    Demand,
    JoinFailure,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.model import (
    DEFAULT_UPSCALING_SPEED as DEFAULT_UPSCALING_SPEED,  # re-exported: the agent reads it here
)

E = TypeVar("E", bound=enum.StrEnum)


#: A Kubernetes quantity: a decimal number, then an exponent or a suffix (``32Gi``, ``500M``).
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$"
)
_SUFFIX = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{
        s: Decimal(10) ** e
        for s, e in zip("numkMGTPE", (-9, -6, -3, 3, 6, 9, 12, 15, 18), strict=True)
    },
}

_CLUSTER_KEYS = ("cluster", "maxWorkers", "upscalingSpeed", "workerGroups")
_GROUP_KEYS = ("name", "resources", "minReplicas", "maxReplicas", "idleTimeoutSeconds", "cost")
_SNAPSHOT_KEYS = ("bundles", "placementGroups", "constraints", "nodes")
_BUNDLE_KEYS = ("resources", "count")
_PG_KEYS = ("strategy", "bundles", "count")
_NODE_KEYS = ("group", "pod", "total", "available", "idleSeconds", "state", "nodeId", "reason")


def _path(parent: str, child: str | int) -> str:
    if isinstance(child, int):
        return f"{parent}[{child}]"
    return f"{parent}.{child}" if parent else child


def _mapping(data: object, where: str, field: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError(where, field or "(top level)", f"expected a mapping, got {_kind(data)}")
    for key in data:
        if key not in keys:
            allowed = ", ".join(keys)
            raise ConfigError(where, _path(field, str(key)), f"unknown key (allowed: {allowed})")
    return data


def _list(data: object, where: str, field: str) -> list[Any]:
    if not isinstance(data, list):
        raise ConfigError(where, field, f"expected a list, got {_kind(data)}")
    return data


def _kind(data: object) -> str:
    return "nothing" if data is None else type(data).__name__


def _required(data: Mapping[str, Any], key: str, where: str, field: str) -> Any:
    if key not in data or data[key] is None:
        raise ConfigError(where, _path(field, key), "required")
    return data[key]


def _name(data: object, where: str, field: str) -> str:
    if not isinstance(data, str) or not is_dns_label(data):
        raise ConfigError(
            where, field, f"{data!r} is not a DNS-1123 label (lowercase letters, digits, '-')"
        )
    return data


def _int(data: object, where: str, field: str, minimum: int = 0) -> int:
    if isinstance(data, bool) or not isinstance(data, int):
        raise ConfigError(where, field, f"expected an integer, got {data!r}")
    if data < minimum:
        raise ConfigError(where, field, f"must be at least {minimum}, got {data}")
    return data


def _number(data: object, where: str, field: str, positive: bool = False) -> float:
    if isinstance(data, bool) or not isinstance(data, int | float):
        raise ConfigError(where, field, f"expected a number, got {data!r}")
    value = float(data)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ConfigError(
            where,
            field,
            f"must be a finite {'positive' if positive else 'non-negative'} number, got {data!r}",
        )
    return value


def _amount_units(name: str, value: object, where: str, field: str) -> int:
    """One resource amount in Ray's fixed point (bytes for memory, as Kubernetes quantities)."""
    if isinstance(value, bool):
        raise ConfigError(where, field, f"expected a number, got {value!r}")
    if name in BYTE_RESOURCES:
        if not isinstance(value, int | float | str):
            raise ConfigError(
                where, field, f"expected bytes or a quantity like 32Gi, got {value!r}"
            )
        try:
            amount = parse_quantity(value)
        except (ValueError, InvalidOperation) as exc:
            raise ConfigError(where, field, f"{value!r} is not a quantity like 32Gi") from exc
    elif isinstance(value, int | float):
        amount = Decimal(value) if math.isfinite(value) else Decimal("NaN")
    else:
        raise ConfigError(where, field, f"expected a number, got {value!r}")
    if not amount.is_finite() or amount < 0:
        raise ConfigError(where, field, f"must be a finite non-negative amount, got {value!r}")
    return int((amount * RESOURCE_SCALE).to_integral_value())


def parse_quantity(value: int | float | str) -> Decimal:
    """A Kubernetes quantity (``32Gi``, ``500M``, ``1e3``, ``128974848``) as a Decimal.

    The grammar of ``k8s.io/apimachinery`` ``resource.Quantity``, as the Kubernetes client's
    ``parse_quantity`` reads it; kept here so parsing a spec imports no Kubernetes client.
    """
    if not isinstance(value, str):
        return Decimal(str(value))
    m = _QUANTITY.match(value.strip())
    if m is None:
        raise ValueError(f"{value!r} is not a quantity")
    number, exponent, suffix = m.groups()
    if exponent is not None:
        return Decimal(number) * Decimal(10) ** int(exponent)
    return Decimal(number) * _SUFFIX[suffix] if suffix else Decimal(number)


def parse_resources(mapping: object, where: str, field: str) -> Resources:
    """``{CPU: 10, memory: 32Gi, "accelerator_type:A100": 1}`` as ``Resources``.

    CPU, GPU and custom resources are numbers (rounded to Ray's 0.0001); ``memory`` and
    ``object_store_memory`` are bytes or Kubernetes quantities (``32Gi``, ``500M``).
    """
    if not isinstance(mapping, Mapping):
        raise ConfigError(where, field, f"expected a mapping of resources, got {_kind(mapping)}")
    units: dict[str, int] = {}
    for name, value in mapping.items():
        sub = f"{field}.{name}" if field else str(name)
        if not isinstance(name, str) or not name:
            raise ConfigError(where, sub, "resource names must be non-empty strings")
        units[name] = _amount_units(name, value, where, sub)
    return Resources.from_units(units)


def _group(data: object, where: str, field: str) -> WorkerGroup:
    g = _mapping(data, where, field, _GROUP_KEYS)
    name = _name(_required(g, "name", where, field), where, _path(field, "name"))
    resources = parse_resources(
        _required(g, "resources", where, field), where, _path(field, "resources")
    )
    min_replicas = _int(g.get("minReplicas", 0), where, _path(field, "minReplicas"))
    max_replicas = _int(g.get("maxReplicas", INT32_MAX), where, _path(field, "maxReplicas"))
    if max_replicas < min_replicas:
        raise ConfigError(
            where,
            _path(field, "maxReplicas"),
            f"{max_replicas} is below minReplicas {min_replicas}",
        )
    idle = _number(
        g.get("idleTimeoutSeconds", DEFAULT_IDLE_TIMEOUT_S),
        where,
        _path(field, "idleTimeoutSeconds"),
    )
    cost = _number(g.get("cost", DEFAULT_COST), where, _path(field, "cost"))
    return WorkerGroup(name, resources, min_replicas, max_replicas, idle, cost)


def parse_cluster_spec(data: object, where: str) -> ClusterSpec:
    """A cluster spec (already loaded from YAML or JSON); ``where`` names its source."""
    top = _mapping(data, where, "", _CLUSTER_KEYS)
    name = _name(_required(top, "cluster", where, ""), where, "cluster")
    raw_groups = _list(_required(top, "workerGroups", where, ""), where, "workerGroups")
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
        max_workers = _int(max_workers, where, "maxWorkers")
    speed = _number(
        top.get("upscalingSpeed", DEFAULT_UPSCALING_SPEED), where, "upscalingSpeed", positive=True
    )
    return ClusterSpec(name, groups, max_workers, speed)


def load_cluster_spec(path: str | Path) -> ClusterSpec:
    """Read and parse a cluster spec file (JSON, or YAML)."""
    return parse_cluster_spec(load_document(path), str(path))


def _bundle(data: object, where: str, field: str) -> Bundle:
    b = _mapping(data, where, field, _BUNDLE_KEYS)
    resources = parse_resources(
        _required(b, "resources", where, field), where, _path(field, "resources")
    )
    return Bundle(resources, _int(b.get("count", 1), where, _path(field, "count")))


def _placement_group(data: object, where: str, field: str) -> PlacementGroup:
    pg = _mapping(data, where, field, _PG_KEYS)
    raw = _required(pg, "strategy", where, field)
    try:
        strategy = Strategy(raw)
    except ValueError as exc:
        allowed = ", ".join(s.value for s in Strategy)
        raise ConfigError(
            where, _path(field, "strategy"), f"{raw!r} is not one of {allowed}"
        ) from exc
    raw_bundles = _list(_required(pg, "bundles", where, field), where, _path(field, "bundles"))
    if not raw_bundles:
        raise ConfigError(where, _path(field, "bundles"), "a placement group needs bundles")
    bundles = tuple(
        parse_resources(b, where, f"{_path(field, 'bundles')}[{i}]")
        for i, b in enumerate(raw_bundles)
    )
    return PlacementGroup(strategy, bundles, _int(pg.get("count", 1), where, _path(field, "count")))


def _enum(kind: type[E], raw: object, where: str, field: str) -> E:
    """``raw`` as a member of the string enum ``kind``; the error lists the allowed values."""
    for member in kind:
        if member.value == raw:
            return member
    allowed = ", ".join(m.value for m in kind)
    raise ConfigError(where, field, f"{raw!r} is not one of {allowed}")


def _node(data: object, where: str, field: str, cluster: ClusterSpec) -> WorkerNode:
    n = _mapping(data, where, field, _NODE_KEYS)
    group_name = _required(n, "group", where, field)
    group = cluster.group(group_name) if isinstance(group_name, str) else None
    if group is None:
        known = ", ".join(g.name for g in cluster.worker_groups)
        raise ConfigError(
            where, _path(field, "group"), f"unknown worker group {group_name!r} (known: {known})"
        )
    pod = _required(n, "pod", where, field)
    if not isinstance(pod, str) or not pod:
        raise ConfigError(where, _path(field, "pod"), f"expected a pod name, got {pod!r}")
    state = _enum(
        NodeStatus, n.get("state", NodeStatus.RUNNING.value), where, _path(field, "state")
    )
    total = group.resources
    if "total" in n:
        total = parse_resources(n["total"], where, _path(field, "total"))
    available = total
    if "available" in n:
        available = parse_resources(n["available"], where, _path(field, "available"))
    if not available.fits_in(total):
        raise ConfigError(where, _path(field, "available"), f"{available} exceeds total {total}")
    idle = _number(n.get("idleSeconds", 0), where, _path(field, "idleSeconds"))
    node_id = n.get("nodeId", "")
    if not isinstance(node_id, str):
        raise ConfigError(where, _path(field, "nodeId"), f"expected a string, got {node_id!r}")
    failure = None
    if state is NodeStatus.FAILING:
        reason = n.get("reason", JoinFailure.NOT_JOINED.value)
        failure = _enum(JoinFailure, reason, where, _path(field, "reason"))
    elif "reason" in n:
        raise ConfigError(where, _path(field, "reason"), "only a failing node has a reason")
    return WorkerNode(pod, group.name, total, available, idle, state, node_id, failure)


def parse_snapshot(data: object, where: str, cluster: ClusterSpec) -> PlanningInput:
    """A snapshot (demand and current pods) for ``cluster``; an empty document is no demand."""
    top = _mapping({} if data is None else data, where, "", _SNAPSHOT_KEYS)

    def items(key: str) -> list[Any]:
        return [] if top.get(key) is None else _list(top[key], where, key)

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
