"""PromQL for the agent's series: fixed query templates and parsing of the answers. Pure.

Queries are built only from templates here, with the cluster name validated (RFC 1123 label, as
Kubernetes names a RayCluster) and escaped as a PromQL string literal: no PromQL, URL or label
matcher is ever taken from trigger metadata. One instant query answers one cluster; the answer
is an instant vector of the agent's ``ray_scaler_*`` series, turned into
:class:`~keda_ray_scaler.schema.Sample` values for :func:`~keda_ray_scaler.schema.decode`.

Labels that are not part of the schema (``job``, ``instance``, ``namespace``... added by the
scrape) identify where a series came from. When two targets export the same cluster (an agent
restarting under a new address, a duplicated scrape job) the one with the newest snapshot time
wins, so a stale copy never mixes with a fresh one. ``schema.decode`` ignores the extra labels.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from keda_ray_scaler import schema
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.schema import Sample, SchemaError

#: Every series the agent exports, and nothing else.
NAME_MATCHER: Final = f'__name__=~"{schema.PREFIX}.+"'

#: The label keys the schema defines; any other label says where a series was scraped from.
SCHEMA_LABELS: Final = frozenset(
    {
        schema.LABEL_CLUSTER,
        schema.LABEL_GROUP,
        schema.LABEL_KIND,
        schema.LABEL_SHAPE,
        schema.LABEL_STRATEGY,
        schema.LABEL_POD,
        schema.LABEL_NODE_ID,
        schema.LABEL_STATE,
        schema.LABEL_RESOURCE,
        schema.LABEL_REASON,
    }
)

#: RFC 1123 label, as Kubernetes validates object names (at most 63 characters).
_DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_ESCAPES: Final = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def check_cluster_name(cluster: str) -> str:
    """``cluster`` if it is an RFC 1123 label; raises :class:`ConfigError` naming it otherwise."""
    if not _DNS1123_LABEL.fullmatch(cluster):
        raise ConfigError(
            "cluster name", "cluster", f"{cluster[:80]!r} is not an RFC 1123 label (a-z, 0-9, -)"
        )
    return cluster


def quote(value: str) -> str:
    """``value`` as a double-quoted PromQL string literal (Go escaping of ``\\``, ``"``, newlines).

    Other control characters are refused: a label value that needs them is not one of ours.
    """
    for ch in value:
        if ord(ch) < 0x20 and ch not in _ESCAPES:
            raise ConfigError("label value", "", f"control character {ch!r} in {value[:80]!r}")
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'


def cluster_query(cluster: str) -> str:
    """The instant query for every agent series of one cluster."""
    check_cluster_name(cluster)
    return "{" + f"{NAME_MATCHER},{schema.LABEL_CLUSTER}={quote(cluster)}" + "}"


def seen_query(cluster: str, window_s: int) -> str:
    """Whether the agent exported ``cluster`` at any time in the last ``window_s`` seconds.

    Tells a lost target (seen before, empty now: the data is unavailable) from a cluster that
    never existed (not found).
    """
    check_cluster_name(cluster)
    if window_s <= 0:
        raise ValueError(f"window_s must be positive, got {window_s}")
    selector = schema.SNAPSHOT_TIMESTAMP + "{" + f"{schema.LABEL_CLUSTER}={quote(cluster)}" + "}"
    return f"present_over_time({selector}[{window_s}s])"


def check_value(name: str, labels: Mapping[str, str], value: float) -> float:
    """``value`` if it is finite, not negative and not absurd; :class:`SchemaError` otherwise."""
    if math.isnan(value) or math.isinf(value):
        raise SchemaError(f"{name}{dict(labels)}: value {value} is not a finite number")
    if value < 0:
        raise SchemaError(f"{name}{dict(labels)}: value {value} is negative")
    if value > schema.MAX_AMOUNT:
        raise SchemaError(f"{name}{dict(labels)}: value {value} is absurdly large")
    return value


def parse_vector(result: object) -> list[Sample]:
    """The ``data.result`` of an instant query (``resultType: vector``) as samples.

    Raises :class:`SchemaError` naming the series on a malformed entry, or on a value that is
    NaN, infinite, negative or absurd. Series whose name is not the agent's are ignored.
    """
    if not isinstance(result, list):
        raise SchemaError(f"query result is {type(result).__name__}, not an instant vector")
    out: list[Sample] = []
    for i, entry in enumerate(result):
        metric, value = _fields(entry, i)
        labels = dict(metric)
        name = labels.pop("__name__", "")
        if not name.startswith(schema.PREFIX):
            continue
        try:
            number = float(value[1])
        except (TypeError, ValueError, IndexError) as exc:
            raise SchemaError(f"{name}{labels}: value {value!r} is not a number") from exc
        out.append(Sample(name, labels, check_value(name, labels, number)))
    return out


def _fields(entry: Any, i: int) -> tuple[dict[str, str], Sequence[Any]]:
    if not isinstance(entry, dict):
        raise SchemaError(f"result[{i}] is not an object")
    metric, value = entry.get("metric"), entry.get("value")
    if not isinstance(metric, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metric.items()
    ):
        raise SchemaError(f"result[{i}].metric is not a label set")
    if not isinstance(value, list) or len(value) != 2:
        raise SchemaError(f"result[{i}].value is not a [time, value] pair")
    return metric, value


def _origin(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Where a series was scraped from: its labels outside the schema, sorted."""
    return tuple(sorted((k, v) for k, v in labels.items() if k not in SCHEMA_LABELS))


def newest_origin(samples: Iterable[Sample]) -> list[Sample]:
    """Per cluster, only the samples of the target with the newest snapshot time.

    A target whose cluster has no snapshot-time series ranks oldest; ties go to the origin that
    sorts last, so the choice is deterministic. Labels are kept (``schema.decode`` reads only
    the schema's own); with one target per cluster, the common case, nothing is dropped.
    """
    by_cluster: dict[str, dict[tuple[tuple[str, str], ...], list[Sample]]] = {}
    for s in samples:
        cluster = s.labels.get(schema.LABEL_CLUSTER, "")
        by_cluster.setdefault(cluster, {}).setdefault(_origin(s.labels), []).append(s)
    out: list[Sample] = []
    for _, origins in sorted(by_cluster.items()):
        best = max(origins, key=lambda o: (_snapshot_time(origins[o]), o))
        out.extend(origins[best])
    return out


def _snapshot_time(samples: list[Sample]) -> float:
    return max((s.value for s in samples if s.name == schema.SNAPSHOT_TIMESTAMP), default=-1.0)


def samples_from_result(result: object) -> list[Sample]:
    """:func:`parse_vector`, then :func:`newest_origin`: what to hand to ``schema.decode``."""
    return newest_origin(parse_vector(result))
