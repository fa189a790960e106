"""PromQL for the agent's series: fixed query templates and parsing of the answers. Pure.

Queries are built only from templates here, with the namespace and cluster name validated
(RFC 1123 labels, as Kubernetes names them) and escaped as PromQL string literals: no PromQL, URL
or label matcher is ever taken from trigger metadata. One instant query answers one cluster,
``(namespace, name)``: it selects ``namespace="<ns>"``, the label Prometheus attaches from
service discovery (the shipped scrape configurations never let the agent set it), and
``job="<the agents' job>"`` (:class:`OriginSettings`), so no other job's series (a Pushgateway's,
``kubernetes-pods``) ever enters. The answer is an instant vector of the agent's ``ray_scaler_*``
series, turned into :class:`~keda_ray_scaler.schema.Sample` values for
:func:`~keda_ray_scaler.schema.decoding.decode`, which checks them against the agent's seal
(:mod:`~keda_ray_scaler.schema.digest`): a series another writer added or altered under the
agent's labels is refused. A cluster whose series carry no seal is refused too (``no_digest``)
unless the settings accept agents older than the seal.

The *origin* of a series is the scrape target it came from: its ``job`` and ``instance``
labels, which Prometheus attaches to every scraped series and which a target cannot override
without ``honor_labels`` (one that can, writing under the agent's own origin, is what the seal
catches). One cluster exported by two origins (a forged or same-named exporter in the namespace,
a duplicated scrape job, two agents for one cluster, a forged snapshot under another
``instance``) is refused: :class:`~keda_ray_scaler.errors.UntrustedData` (``two_origins``)
naming both, never "newest wins". ``decoding.decode`` ignores the labels outside the schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from keda_ray_scaler import schema
from keda_ray_scaler.errors import ConfigError, Refusal, SchemaError, UntrustedData
from keda_ray_scaler.identity import ClusterRef, is_dns_label
from keda_ray_scaler.schema import Sample, decoding, digest

#: Every series the agent exports, and nothing else.
NAME_MATCHER: Final = f'__name__=~"{schema.PREFIX}.+"'

#: The ``job`` the shipped scrape job (``manifests/monitoring/prometheus-scrape-config.yaml``) and
#: agent PodMonitors (``manifests/monitoring/podmonitor-agent.yaml``, the chart's) give the agents.
AGENT_JOB: Final = "ray-scaler-agents"
#: The label Prometheus attaches from discovery: the namespace of the scraped pod.
LABEL_NAMESPACE: Final = "namespace"
#: The label Prometheus attaches from the scrape job's name.
LABEL_JOB: Final = "job"
#: The labels that name a series' origin (its scrape target); Prometheus attaches both.
ORIGIN_LABELS: Final = (LABEL_JOB, "instance")
_ESCAPES: Final = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@dataclass(frozen=True, slots=True)
class OriginSettings:
    """Which series the Prometheus source takes for an agent's.

    ``job`` (``--prometheus-job``): the scrape job of the agents; only its series are read, so
    another job's (a Pushgateway's, ``kubernetes-pods``) never enter, whatever labels they carry.
    The default is the job every shipped scrape configuration gives. Empty: any job, which is
    safe only where no job honours labels.
    ``accept_undigested`` (``--accept-agents-without-digest``): plan on a cluster whose series
    carry no seal (an agent older than the digest) instead of refusing it (``no_digest``). A
    forger cannot take a seal away, so this only lets old agents in; upgrade them instead.
    ``seal_master_key`` (``--seal-master-key-file``): each cluster's seal is checked under its
    own key, :func:`~keda_ray_scaler.schema.digest.cluster_key` of this, its namespace and its
    name, so only the agent given that key can seal its series; ``None``: unkeyed seals.
    """

    job: str = AGENT_JOB
    accept_undigested: bool = False
    seal_master_key: bytes | None = field(default=None, repr=False)


def check_cluster_name(cluster: str) -> str:
    """``cluster`` if it is an RFC 1123 label; raises :class:`ConfigError` naming it otherwise."""
    if not is_dns_label(cluster):
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


def _matchers(cluster: ClusterRef, job: str) -> str:
    """``cluster="<name>",namespace="<ns>",job="<job>"`` (no job matcher when ``job`` is empty),
    both names checked first."""
    check_cluster_name(cluster.name)
    if not is_dns_label(cluster.namespace):
        raise ConfigError(
            "namespace", "namespace", f"{cluster.namespace[:80]!r} is not an RFC 1123 label"
        )
    out = (
        f"{schema.LABEL_CLUSTER}={quote(cluster.name)},{LABEL_NAMESPACE}={quote(cluster.namespace)}"
    )
    return out + (f",{LABEL_JOB}={quote(job)}" if job else "")


def cluster_query(cluster: ClusterRef, *, job: str) -> str:
    """The instant query for every agent series of one cluster, in its namespace, scraped by
    ``job`` only."""
    return "{" + f"{NAME_MATCHER},{_matchers(cluster, job)}" + "}"


def seen_query(cluster: ClusterRef, window_s: int, *, job: str) -> str:
    """Whether the agent exported ``cluster`` (through ``job``) at any time in the last
    ``window_s`` seconds.

    Tells a lost target (seen before, empty now: the data is unavailable) from a cluster that
    never existed (not found).
    """
    matchers = _matchers(cluster, job)
    if window_s <= 0:
        raise ValueError(f"window_s must be positive, got {window_s}")
    selector = schema.SNAPSHOT_TIMESTAMP + "{" + matchers + "}"
    return f"present_over_time({selector}[{window_s}s])"


def check_value(name: str, labels: Mapping[str, str], value: float) -> float:
    """``value`` if it is finite, not negative and not absurd; :class:`SchemaError` otherwise."""
    decoding.check_finite(name, labels, value)
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


def origin(labels: Mapping[str, str]) -> str:
    """Where a series was scraped from: ``job/instance`` (empty parts when absent)."""
    return "/".join(labels.get(key, "") for key in ORIGIN_LABELS)


def single_origin(samples: Iterable[Sample]) -> list[Sample]:
    """``samples``, checked to come from one origin per cluster.

    Raises :class:`UntrustedData` (``two_origins``) naming the first two origins of a cluster
    exported by more than one: the scaler cannot tell the cluster's own agent from another
    exporter that claims its name, so it trusts neither.
    """
    out = list(samples)
    seen: dict[str, set[str]] = {}
    for s in out:
        seen.setdefault(s.labels.get(schema.LABEL_CLUSTER, ""), set()).add(origin(s.labels))
    for cluster, origins in sorted(seen.items()):
        if len(origins) > 1:
            first, second = sorted(origins)[:2]
            raise UntrustedData(
                Refusal.TWO_ORIGINS,
                f"Ray cluster {cluster!r} is exported by {len(origins)} origins "
                f"({first!r} and {second!r}): refusing both; one agent per cluster and "
                "namespace, scraped by one job",
            )
    return out


def samples_from_result(result: object, *, require_digest: bool) -> list[Sample]:
    """:func:`parse_vector`, then :func:`single_origin`, then (``require_digest``) every cluster
    checked to carry the agent's seal (``UntrustedData``, ``no_digest``, otherwise): what to hand
    to ``decoding.decode``, which checks the seal."""
    samples = single_origin(parse_vector(result))
    if require_digest:
        digest.require(samples)
    return samples
