"""The metrics contract between the agent (writer) and the scaler (reader).

The agent and the scaler meet only through these series. Pure: names, label keys and the shape
codec, no prometheus_client. Every series carries ``cluster`` (the Ray cluster name).

Shapes are encoded in one label value, canonical and reversible::

    "CPU=5,memory=34359738368"                 a bundle (resources sorted by name)
    "CPU=4;CPU=4"                              a placement group's bundles, in order

Amounts are Ray's fixed point printed exactly (``0.5``, ``10``), bytes as integers.
"""

from __future__ import annotations

from typing import Final

from keda_ray_scaler.model import RESOURCE_SCALE, Resources

PREFIX: Final = "ray_scaler_"

# --- demand ------------------------------------------------------------------------------
#: gauge {cluster, kind, shape, strategy}: pending bundles of that shape (kind=task|constraint),
#: or pending placement groups of that bundle list (kind=placement_group, shape="A;B;...").
DEMAND_BUNDLES: Final = PREFIX + "demand_bundles"
#: counter {cluster}: shapes merged because --max-shapes was exceeded
DEMAND_SHAPES_MERGED: Final = PREFIX + "demand_shapes_merged_total"

# --- worker-group specs (so the scaler needs nothing but Prometheus) ---------------------
#: gauge {cluster, group, shape}: 1; shape = one pod's logical resources
GROUP_INFO: Final = PREFIX + "worker_group_info"
GROUP_MIN_REPLICAS: Final = PREFIX + "worker_group_min_replicas"  # {cluster, group}
GROUP_MAX_REPLICAS: Final = PREFIX + "worker_group_max_replicas"  # {cluster, group}
GROUP_IDLE_TIMEOUT: Final = PREFIX + "worker_group_idle_timeout_seconds"  # {cluster, group}
GROUP_COST: Final = PREFIX + "worker_group_cost"  # {cluster, group}
CLUSTER_MAX_WORKERS: Final = PREFIX + "cluster_max_workers"  # {cluster}; absent = no cap
CLUSTER_UPSCALING_SPEED: Final = PREFIX + "cluster_upscaling_speed"  # {cluster}

# --- nodes (one series set per worker pod) ----------------------------------------------
#: gauge {cluster, group, pod, node_id, state}: 1; state = pending|running|draining|victim
NODE_INFO: Final = PREFIX + "node_info"
NODE_TOTAL: Final = PREFIX + "node_resource_total"  # {cluster, pod, resource}
NODE_AVAILABLE: Final = PREFIX + "node_resource_available"  # {cluster, pod, resource}
NODE_IDLE_SECONDS: Final = PREFIX + "node_idle_seconds"  # {cluster, pod}
#: counter {cluster}: Ray nodes that could not be mapped to a pod/group (exported with group="")
NODES_UNMAPPED: Final = PREFIX + "nodes_unmapped"

# --- freshness ----------------------------------------------------------------------------
#: gauge {cluster}: unix time of the last poll attempt's snapshot
SNAPSHOT_TIMESTAMP: Final = PREFIX + "snapshot_timestamp_seconds"
#: gauge {cluster}: 1 when the last poll of Ray succeeded, 0 otherwise (demand then not fresh)
SNAPSHOT_SUCCESS: Final = PREFIX + "snapshot_success"

# --- victims ------------------------------------------------------------------------------
WRONG_VICTIMS: Final = PREFIX + "wrong_victims_total"  # counter {cluster, group}
SCALE_DOWN_FROZEN: Final = PREFIX + "scale_down_frozen"  # gauge {cluster, group}: 1 = frozen

LABEL_CLUSTER: Final = "cluster"
LABEL_GROUP: Final = "group"
LABEL_KIND: Final = "kind"
LABEL_SHAPE: Final = "shape"
LABEL_STRATEGY: Final = "strategy"
LABEL_POD: Final = "pod"
LABEL_NODE_ID: Final = "node_id"
LABEL_STATE: Final = "state"
LABEL_RESOURCE: Final = "resource"

_RESOURCE_SEP: Final = ","
_BUNDLE_SEP: Final = ";"
_FORBIDDEN: Final = frozenset(",;=\n")


class ShapeError(ValueError):
    """A shape label that does not decode."""


def format_amount(units: int) -> str:
    """Fixed-point units as the shortest exact decimal (``50000`` -> ``"5"``)."""
    whole, frac = divmod(units, RESOURCE_SCALE)
    if frac == 0:
        return str(whole)
    return f"{whole}.{frac:04d}".rstrip("0")


def parse_amount(text: str) -> int:
    """The inverse of :func:`format_amount`; rejects negatives, NaN and non-decimals."""
    whole, dot, frac = text.partition(".")
    if not whole.isdigit() or (dot and (not frac.isdigit() or len(frac) > 4)):
        raise ShapeError(f"bad amount {text!r}")
    return int(whole) * RESOURCE_SCALE + (int(frac.ljust(4, "0")) if dot else 0)


def encode_shape(resources: Resources) -> str:
    """``Resources`` as a canonical label value."""
    for name, _ in resources:
        if not name or _FORBIDDEN & set(name):
            raise ShapeError(f"resource name {name!r} cannot be encoded")
    return _RESOURCE_SEP.join(f"{k}={format_amount(v)}" for k, v in resources)


def decode_shape(text: str) -> Resources:
    """The inverse of :func:`encode_shape`."""
    if not text:
        return Resources()
    units: dict[str, int] = {}
    for part in text.split(_RESOURCE_SEP):
        name, eq, amount = part.partition("=")
        if not name or not eq or name in units:
            raise ShapeError(f"bad resource {part!r} in shape {text!r}")
        units[name] = parse_amount(amount)
    return Resources.from_units(units)


def encode_bundles(bundles: tuple[Resources, ...]) -> str:
    """A placement group's bundle list as one label value (order kept)."""
    return _BUNDLE_SEP.join(encode_shape(b) for b in bundles)


def decode_bundles(text: str) -> tuple[Resources, ...]:
    """The inverse of :func:`encode_bundles`."""
    if not text:
        raise ShapeError("empty placement group")
    return tuple(decode_shape(part) for part in text.split(_BUNDLE_SEP))
