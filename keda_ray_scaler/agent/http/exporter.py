"""The agent's ``/metrics``: the snapshot as :mod:`keda_ray_scaler.schema` series, plus its own.

:class:`SnapshotCollector` is a ``prometheus_client`` custom collector registered in an injected
registry. The poll loop hands it a whole :class:`~keda_ray_scaler.schema.ClusterSnapshot`
(:meth:`SnapshotCollector.publish`); a scrape yields exactly ``encoding.encode(snapshot)``,
sealed (:func:`~keda_ray_scaler.schema.digest.seal`: the snapshot's series count and digest), as
gauge families, so what the scaler decodes is what the agent encoded, with no second encoding, and
the scaler can tell a series anything else wrote under the agent's labels. Each snapshot is
sealed and written at publish, again only where it changed
(:mod:`~keda_ray_scaler.agent.http.sealed_body`); replacing the body is one reference
assignment: a scrape never sees half a poll.

:class:`AgentMetrics` holds the agent's own series: shapes merged by ``--max-shapes`` (counter),
unmapped and superseded Ray nodes in the last poll (gauges), poll errors and crashes
(counters), poll duration (histogram), polls whose task demand fell back from rule R1 to the
GCS's sum (counter, by reason).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exposition import Format, help_of
from keda_ray_scaler.agent.http.gzip_body import Parts
from keda_ray_scaler.agent.http.sealed_body import SealedBody, SnapshotWriter
from keda_ray_scaler.agent.metric_names import (
    DEMAND_FALLBACKS,
    DOUBLE_COUNTED_BUNDLES,
    POLL_CRASHES,
    POLL_DURATION,
    POLL_ERRORS,
    SUPERSEDED_RAY_NODES,
)
from keda_ray_scaler.agent.ray.resource_names import StandInLog
from keda_ray_scaler.schema import digest


def families(samples: Iterable[schema.Sample]) -> list[Metric]:
    """Samples grouped into gauge families, in first-seen order (deterministic output)."""
    by_name: dict[str, list[schema.Sample]] = {}
    for s in samples:
        by_name.setdefault(s.name, []).append(s)
    out: list[Metric] = []
    for name, group in by_name.items():
        keys = list(group[0].labels)
        family = GaugeMetricFamily(name, help_of(name), labels=keys)
        for s in group:
            family.add_metric([s.labels[k] for k in keys], s.value)
        out.append(family)
    return out


class SnapshotCollector(Collector):
    """Serves the latest published snapshot; registers itself in ``registry``.

    With ``names``, each resource name exported as a stand-in is counted and logged once; with
    ``seal_key`` (the cluster's key), each snapshot's digest is keyed with it.

    Each snapshot is sealed and written once, at :meth:`publish`, again only where it changed
    (:class:`~keda_ray_scaler.agent.http.sealed_body.SnapshotWriter`). A scrape through
    ``prometheus_client`` (:meth:`collect`) yields its samples as families; the agent's
    ``/metrics`` serves its text as written (:meth:`text`), beside the rest of the registry
    rendered :meth:`apart`.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        names: StandInLog | None = None,
        seal_key: bytes | None = None,
    ) -> None:
        self._writer = SnapshotWriter(seal_key)
        self._body = SealedBody(())
        self._names = names
        self._key = seal_key
        self._apart = threading.local()
        registry.register(self)

    def publish(self, snapshot: schema.ClusterSnapshot) -> None:
        """Serve ``snapshot`` from the next scrape on."""
        self._body = self._writer.write(snapshot)
        if self._names is not None:
            self._names.observe(snapshot.input)

    def mark_failed(self) -> None:
        """Serve the data already published with ``snapshot_success`` 0, re-sealed; encodes
        nothing.

        For a poll that crashed: whatever broke it (even in :func:`encoding.encode`, or the
        writer) cannot break this (the plain :func:`digest.seal` of the samples served), and the
        data keeps its old timestamp, so no reader takes it for fresh.
        """
        samples = (
            schema.Sample(s.name, s.labels, 0.0) if s.name == schema.SNAPSHOT_SUCCESS else s
            for s in self._body.samples()
        )
        self._body = SealedBody.of_samples(digest.seal(samples, self._key))

    def text(self, form: Format) -> bytes:
        """What a scrape in ``form`` serves now, as written (no end of body)."""
        return self._body.text(form)

    def parts(self, form: Format) -> Parts:
        """What a gzipped scrape in ``form`` serves now, as compressed parts (no end of body)."""
        return self._body.parts(form)

    @contextlib.contextmanager
    def apart(self) -> Iterator[None]:
        """While in it, this thread's :meth:`collect` yields nothing: the rest of the registry
        is rendered while the snapshot is served from :meth:`text`."""
        self._apart.on = True
        try:
            yield
        finally:
            self._apart.on = False

    def collect(self) -> Iterator[Metric]:
        """Called by prometheus_client on every scrape."""
        if not getattr(self._apart, "on", False):
            yield from families(self._body.samples())

    def describe(self) -> Iterator[Metric]:
        """Nothing to describe up front (names depend on the snapshot); avoids a collect."""
        return iter(())


class AgentMetrics:
    """The agent's own counters, labelled with the cluster name."""

    def __init__(self, registry: CollectorRegistry, cluster: str) -> None:
        labels = [schema.LABEL_CLUSTER]
        self.shapes_merged = Counter(
            schema.DEMAND_SHAPES_MERGED.removesuffix("_total"),
            "Demand series merged into others because --max-shapes was exceeded.",
            labels,
            registry=registry,
        ).labels(cluster)
        self.unmapped = Gauge(
            schema.NODES_UNMAPPED,
            "Ray worker nodes in the last poll that map to no pod or group (group='').",
            labels,
            registry=registry,
        ).labels(cluster)
        self.superseded = Gauge(
            SUPERSEDED_RAY_NODES,
            "Ray nodes the GCS lists alive for a pod that has a newer node (a restarted "
            "raylet's predecessor) in the last poll: no capacity, never drained.",
            labels,
            registry=registry,
        ).labels(cluster)
        self.double_counted = Gauge(
            DOUBLE_COUNTED_BUNDLES,
            "Pending task bundles left out of the last export: Ray counted them both running "
            "and pending until their owner's next backlog report (agent/ray/demand_filter.py).",
            labels,
            registry=registry,
        ).labels(cluster)
        self._fallbacks = Counter(
            DEMAND_FALLBACKS.removesuffix("_total"),
            "Polls whose task demand is the GCS's sum (it can count a starting task twice) "
            "because rule R1's reads failed: reason no_head, raylet or node_loads "
            "(agent/ray/task_load_read.py).",
            [*labels, "reason"],
            registry=registry,
        )
        self._cluster = cluster
        self.poll_errors = Counter(
            POLL_ERRORS.removesuffix("_total"),
            "Polls of Ray that failed (snapshot_success is then 0).",
            labels,
            registry=registry,
        ).labels(cluster)
        self.poll_crashes = Counter(
            POLL_CRASHES.removesuffix("_total"),
            "Polls ended by an unexpected exception (a bug, logged as 'poll crashed'); each is "
            "also a poll error.",
            labels,
            registry=registry,
        ).labels(cluster)
        self.poll_duration = Histogram(
            POLL_DURATION,
            "Seconds one poll took: Ray read, mapping and encoding.",
            labels,
            registry=registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
        ).labels(cluster)

    def demand_fell_back(self, reason: str) -> None:
        """Count one poll whose task demand fell back from R1 (``reason``: a ``Fallback``)."""
        self._fallbacks.labels(self._cluster, reason).inc()
