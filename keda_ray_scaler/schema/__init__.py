"""The metrics contract between the agent (writer) and the scaler (reader).

The agent and the scaler meet only through these series. Pure: names, label keys and the shape
codec, no prometheus_client. Every series carries ``cluster`` (the Ray cluster name). The agent
writes a snapshot with :func:`~keda_ray_scaler.schema.encoding.encode` and seals it with
:func:`~keda_ray_scaler.schema.digest.seal`, the scaler reads it back with
:func:`~keda_ray_scaler.schema.decoding.decode` (which checks the seal).

Shapes are encoded in one label value, canonical and reversible::

    "CPU=5,memory=34359738368"                 a bundle (resources sorted by name)
    "CPU=4;CPU=4"                              a placement group's bundles, in order

Amounts are Ray's fixed point printed exactly (``0.5``, ``10``), bytes as integers.

Label selectors (Ray 2.49+) are the ``selector`` label of a demand series, the canonical text of
:mod:`~keda_ray_scaler.labels` (``market-type=spot;*``: fallbacks in order); a placement
group's, one list per bundle joined by ``|`` (``zone=a|``: the second bundle has none). A
group's and a node's Ray labels are the ``labels`` label of its info series (``k=v,k2=v2``), a
group's priority the ``priority`` label (a decimal integer). Each is absent when empty (zero),
so an agent without labels exports exactly what it did, and a scaler reads a series without
them as "none". Both sides bound them as :mod:`~keda_ray_scaler.labels` says: at most
:data:`~keda_ray_scaler.labels.MAX_SELECTOR_CHARS` characters of selectors per bundle, each
list at most 8 selectors of 16 constraints of 16 values, at most 64 labels per node or group;
beyond, the agent refuses the value where it reads it (counted) and the scaler the snapshot.

Resource names are Ray's, so anything Ray accepts: on the wire (inside a ``shape`` and as the
``resource`` label) each is percent-encoded (:func:`encode_name`), so ``,`` ``;`` ``=`` and
newlines never break a shape and the scaler decodes the exact name back. A name whose encoding
is longer than :data:`MAX_NAME_CHARS` (or an empty one) is exported as a bounded stand-in.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote

from keda_ray_scaler.errors import ShapeError
from keda_ray_scaler.labels import MAX_LABELS
from keda_ray_scaler.model import RESOURCE_SCALE, PlanningInput, Resources

PREFIX: Final = "ray_scaler_"

# --- demand ------------------------------------------------------------------------------
#: gauge {cluster, kind, shape, strategy, selector}: pending bundles of that shape and label
#: selectors (kind=task|constraint), or pending placement groups of that bundle list
#: (kind=placement_group, shape="A;B;...", selector="S1|S2|...").
DEMAND_BUNDLES: Final = PREFIX + "demand_bundles"
#: counter {cluster}: shapes merged because --max-shapes was exceeded
DEMAND_SHAPES_MERGED: Final = PREFIX + "demand_shapes_merged_total"

# --- worker-group specs (so the scaler needs nothing but Prometheus) ---------------------
#: gauge {cluster, group, shape, labels, priority}: 1; shape = one pod's logical resources,
#: labels = its Ray node labels, priority = the group's (absent: 0)
GROUP_INFO: Final = PREFIX + "worker_group_info"
GROUP_MIN_REPLICAS: Final = PREFIX + "worker_group_min_replicas"  # {cluster, group}
GROUP_MAX_REPLICAS: Final = PREFIX + "worker_group_max_replicas"  # {cluster, group}
GROUP_IDLE_TIMEOUT: Final = PREFIX + "worker_group_idle_timeout_seconds"  # {cluster, group}
GROUP_COST: Final = PREFIX + "worker_group_cost"  # {cluster, group}
#: gauge {cluster, group}: the most new pods the group may get now, present only while the
#: agent backs the group off after pods that did not join Ray (agent/joining/joins.py)
GROUP_LAUNCH_LIMIT: Final = PREFIX + "worker_group_launch_limit"
CLUSTER_MAX_WORKERS: Final = PREFIX + "cluster_max_workers"  # {cluster}; absent = no cap
CLUSTER_UPSCALING_SPEED: Final = PREFIX + "cluster_upscaling_speed"  # {cluster}

# --- nodes (one series set per worker pod) ----------------------------------------------
#: gauge {cluster, group, pod, node_id, state, reason, labels}: 1;
#: state = pending|running|draining|victim|failing; reason = the JoinFailure of a failing pod;
#: labels = its Ray node's labels (absent: none reported, the group's are read)
NODE_INFO: Final = PREFIX + "node_info"
NODE_TOTAL: Final = PREFIX + "node_resource_total"  # {cluster, pod, resource}
NODE_AVAILABLE: Final = PREFIX + "node_resource_available"  # {cluster, pod, resource}
#: gauge {cluster, pod}: unix time the pod's Ray node is idle since (0: busy), kept across polls;
#: idle time = the snapshot's time minus it. Older agents export NODE_IDLE_SECONDS instead
NODE_IDLE_SINCE: Final = PREFIX + "node_idle_since_timestamp_seconds"
NODE_IDLE_SECONDS: Final = PREFIX + "node_idle_seconds"  # {cluster, pod}: read, no more written
#: gauge {cluster}: Ray nodes of the last poll not mapped to a pod/group (exported, group="")
NODES_UNMAPPED: Final = PREFIX + "nodes_unmapped"

# --- freshness ----------------------------------------------------------------------------
#: gauge {cluster}: unix time of the last SUCCESSFUL poll of Ray (the age of the exported data)
SNAPSHOT_TIMESTAMP: Final = PREFIX + "snapshot_timestamp_seconds"
#: gauge {cluster}: 1 when the last poll of Ray succeeded, 0 otherwise (demand then not fresh)
SNAPSHOT_SUCCESS: Final = PREFIX + "snapshot_success"

# --- integrity (schema/digest.py, schema/coverage.py) ------------------------------------------
#: gauge {cluster}: how many series the snapshot's digest covers (its covers series included)
SNAPSHOT_SERIES: Final = PREFIX + "snapshot_series"
#: gauge {cluster}: a 48-bit SHA-256 digest of those series (names, labels, values)
SNAPSHOT_DIGEST: Final = PREFIX + "snapshot_digest"
#: gauge {cluster, families, label_keys}: 1; the series names and the label keys the digest
#: covers, each list sorted and joined by ``,``: what the seal vouches for, under the digest
SNAPSHOT_COVERS: Final = PREFIX + "snapshot_covers"

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
LABEL_REASON: Final = "reason"
LABEL_SELECTOR: Final = "selector"
LABEL_LABELS: Final = "labels"
LABEL_PRIORITY: Final = "priority"
#: The series names a seal covers (:data:`SNAPSHOT_COVERS`).
LABEL_FAMILIES: Final = "families"
#: The label keys a seal covers (:data:`SNAPSHOT_COVERS`).
LABEL_KEYS: Final = "label_keys"
#: Between the selector lists of a placement group's bundles, in the ``selector`` label.
BUNDLE_SELECTOR_SEP: Final = "|"
#: The longest ``labels`` label an agent writes: MAX_LABELS pairs of the longest key (a
#: 253-character prefix, ``/``, a 63-character name), ``=``, a 63-character value, ``,``.
MAX_LABELS_CHARS: Final = MAX_LABELS * (253 + 1 + 63 + 1 + 63 + 1)
#: Every label key of the contract; any other label of a series was added on its way (``job``,
#: ``instance``, ``namespace`` ...).
LABELS: Final = frozenset(
    {
        LABEL_CLUSTER,
        LABEL_GROUP,
        LABEL_KIND,
        LABEL_SHAPE,
        LABEL_STRATEGY,
        LABEL_POD,
        LABEL_NODE_ID,
        LABEL_STATE,
        LABEL_RESOURCE,
        LABEL_REASON,
        LABEL_SELECTOR,
        LABEL_LABELS,
        LABEL_PRIORITY,
        LABEL_FAMILIES,
        LABEL_KEYS,
    }
)
#: The series of one snapshot (what ``encoding.encode`` writes and ``decoding.decode`` reads),
#: which its digest covers: an agent lists them in its seal (:data:`SNAPSHOT_COVERS`); a seal
#: listing none (an older agent's) covers these. A name once here stays here (a scaler refuses a
#: seal that leaves out a name it reads).
SNAPSHOT_NAMES: Final = frozenset(
    {
        DEMAND_BUNDLES,
        GROUP_INFO,
        GROUP_MIN_REPLICAS,
        GROUP_MAX_REPLICAS,
        GROUP_IDLE_TIMEOUT,
        GROUP_COST,
        GROUP_LAUNCH_LIMIT,
        CLUSTER_MAX_WORKERS,
        CLUSTER_UPSCALING_SPEED,
        NODE_INFO,
        NODE_TOTAL,
        NODE_AVAILABLE,
        NODE_IDLE_SINCE,
        NODE_IDLE_SECONDS,
        SNAPSHOT_TIMESTAMP,
        SNAPSHOT_SUCCESS,
    }
)

_RESOURCE_SEP: Final = ","
_BUNDLE_SEP: Final = ";"

# --- resource names on the wire ------------------------------------------------------------
#: The longest encoded resource name exported (a ``resource`` label value, one name in a
#: ``shape``). 253 is the longest Kubernetes object name (an RFC 1123 subdomain) and far above any
#: name Ray, KubeRay or a cluster spec makes (``accelerator_type:A100``, ``TPU-v4-16-head``;
#: placement-group resources, ~50, are never exported). The bound exists because a name comes
#: from whoever submits a Ray task: every poll copies it into the agent's series, Prometheus
#: keeps it in its index, and the scaler plans on it.
MAX_NAME_CHARS: Final = 253
#: Characters of an over-long name kept in front of its digest, so a person can tell what it was.
STAND_IN_PREFIX_CHARS: Final = 16
#: Printable ASCII is kept as is, but for ``%`` (the escape itself) and the shape separators.
_NAME_SAFE: Final = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in "%,;=")


def stand_in(name: str) -> str:
    """What the export carries instead of a name too long (or empty) to export.

    ``<first 16 characters>…<64-bit SHA-256 digest>``: bounded (at most 217 characters once
    encoded), and the same for the same name wherever it appears, so demand asking a resource
    is still matched to the groups and nodes that offer it; demand asking a resource no group
    offers is unplaceable, as it would be with the full name.
    """
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{name[:STAND_IN_PREFIX_CHARS]}\u2026{digest}"


def _quoted(name: str) -> str:
    return quote(name, safe=_NAME_SAFE, errors="surrogatepass")


@functools.lru_cache(maxsize=4096)  # pure, keys bounded; the same few names recur every poll
def _quoted_short(name: str) -> str:
    return _quoted(name)


def exported_whole(name: str) -> bool:
    """True when the wire carries ``name`` itself, False when it carries its stand-in."""
    # An encoding is never shorter than its name: a long name is refused before quoting it.
    return 0 < len(name) <= MAX_NAME_CHARS and len(_quoted_short(name)) <= MAX_NAME_CHARS


def encode_name(name: str) -> str:
    """A resource name as the wire carries it; never raises, at most MAX_NAME_CHARS long.

    RFC 3986 percent-encoding of the UTF-8 bytes (``urllib.parse.quote``) for ``%``, ``,``,
    ``;``, ``=``, control characters (newline) and non-ASCII; other printable ASCII is kept, so
    the names of existing clusters (``CPU``, ``accelerator_type:A100``) read as before. An empty
    name, or one longer than MAX_NAME_CHARS once encoded, becomes its :func:`stand_in`.
    """
    if exported_whole(name):
        return _quoted_short(name)
    return _quoted(stand_in(name))


def decode_name(text: str) -> str:
    """The inverse of :func:`encode_name` (a stand-in decodes to the stand-in)."""
    try:
        # surrogatepass: a name holding a lone surrogate (JSON allows one) comes back as it was
        name = unquote(text, errors="surrogatepass")
    except UnicodeDecodeError as exc:
        raise ShapeError(f"resource name {text[:80]!r} is not percent-encoded UTF-8") from exc
    if not name:
        raise ShapeError("empty resource name")
    return name


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
        raise ShapeError(f"bad amount {text[:80]!r}")
    return int(whole) * RESOURCE_SCALE + (int(frac.ljust(4, "0")) if dot else 0)


def encode_shape(resources: Resources) -> str:
    """``Resources`` as a canonical label value; never raises (names as :func:`encode_name`)."""
    return _RESOURCE_SEP.join(f"{encode_name(k)}={format_amount(v)}" for k, v in resources)


def decode_shape(text: str) -> Resources:
    """The inverse of :func:`encode_shape`."""
    if not text:
        return Resources()
    units: dict[str, int] = {}
    for part in text.split(_RESOURCE_SEP):
        wire, eq, amount = part.partition("=")
        name = decode_name(wire) if wire else ""
        if not name or not eq or name in units:  # an empty name never comes from encode_name
            raise ShapeError(f"bad resource {part[:80]!r} in shape {text[:200]!r}")
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


# --- what the two sides exchange ------------------------------------------------------------

#: Upper bound for any count or replica value read back: a bigger one is corrupt data.
MAX_COUNT: Final = 100_000_000
#: Upper bound for a resource amount read back (units of the resource; bytes for memory).
MAX_AMOUNT: Final = 2.0**60


@dataclass(frozen=True, slots=True)
class Sample:
    """One series value: what the agent exports and the scaler reads back."""

    name: str
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """One Ray cluster as the agent saw it at ``snapshot_time_s`` (unix seconds)."""

    input: PlanningInput
    snapshot_time_s: float
    success: bool  # the last poll of Ray succeeded; demand is fresh only when True
