"""Series a restarted Prometheus never marks stale: a real Prometheus, the agent-shaped exporter.

What the test bed met (e2e-labels, after a module that restarted the bed's Prometheus): a victim
pod's series, exported before the restart and not after, were returned by every instant query
for Prometheus's whole 5 minute lookback beside the agent's current snapshot, and the scaler
refused the cluster (``digest_mismatch``) all that time. Here the same on a real Prometheus: the
exporter drops a victim while Prometheus is stopped; after the restart the victim's series are
still answered, the raw instant answer does not match its seal, and the source drops the
leftovers (counted) and returns the agent's current snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tenacity
from builders import cluster, group, inp, node
from prometheus_client import CollectorRegistry
from prometheus_server import PrometheusServer, SampleExporter, requires_prometheus, wait_until

from keda_ray_scaler import schema
from keda_ray_scaler.errors import UntrustedData
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import NodeStatus
from keda_ray_scaler.schema import ClusterSnapshot, Sample, decoding, digest, encoding
from keda_ray_scaler.sources import promql
from keda_ray_scaler.sources.metrics import source_metrics
from keda_ray_scaler.sources.prometheus import PrometheusSettings, PrometheusSource

pytestmark = [requires_prometheus, pytest.mark.prometheus]

CPU = group("cpu", cpu=10, max=50)
DEMO = ClusterRef("ray", "demo")
NOW_S = 1_795_000_000.0


def demo(*victims: str) -> ClusterSnapshot:
    """Cluster ``demo`` with the named victim pods, idle for 90 s."""
    nodes = [node(pod, CPU, idle=90.0, status=NodeStatus.VICTIM) for pod in victims]
    return ClusterSnapshot(inp(cluster(CPU), nodes=nodes), NOW_S, True)


def exported(snap: ClusterSnapshot) -> list[Sample]:
    """What the agent exports for ``snap``: encoded and sealed."""
    return digest.seal(encoding.encode(snap))


@pytest.fixture
def exporter() -> Iterator[SampleExporter]:
    """The agent-shaped exporter, first with victim pod ``a``."""
    with SampleExporter(exported(demo("a"))) as e:
        yield e


def seal_samples(prometheus: PrometheusServer, value: float) -> int:
    """How many samples of cluster demo's seal, with ``value``, the last 120 s hold."""
    result = prometheus.query(f'{schema.SNAPSHOT_DIGEST}{{cluster="demo"}}[120s]')
    return sum(1 for s in result for _, v in s["values"] if float(v) == value)


async def test_a_victim_dropped_while_prometheus_was_away_does_not_refuse_the_cluster(
    tmp_path: Path, exporter: SampleExporter
) -> None:
    """Prometheus stopped, the victim gone from the agent's snapshot, Prometheus started again
    on its TSDB: its instant answer still holds the victim (never stale-marked) and fails the
    seal; the source drops exactly the victim's series, counts them, and answers the snapshot."""
    now = exported(demo())
    new_seal = next(s.value for s in now if s.name == schema.SNAPSHOT_DIGEST)
    victim_query = f'{schema.NODE_INFO}{{cluster="demo",pod="a"}}'
    with PrometheusServer(tmp_path, [exporter.target]) as prometheus:
        prometheus.wait_for_series(victim_query, 1)
        prometheus.stop()
        exporter.set(now)
        prometheus.start()
        # the event: two scrapes of the new seal, so the seal has a previous scrape to judge by
        wait_until(lambda: seal_samples(prometheus, new_seal) >= 2, what="two new seals")

        instant = prometheus.query(promql.cluster_query(DEMO, job=promql.AGENT_JOB))
        assert prometheus.query(victim_query), "the restarted Prometheus stale-marked the victim"
        with pytest.raises(UntrustedData, match="a series added or missing"):
            decoding.decode(promql.samples_from_result(instant, require_digest=True))

        metrics = source_metrics(CollectorRegistry())
        settings = PrometheusSettings(url=prometheus.url)
        source = PrometheusSource(settings, metrics=metrics, wait=tenacity.wait_none())
        try:
            got = await source.fetch(DEMO)
        finally:
            source.close()
    assert got == decoding.decode(now)["demo"]
    gone = len(exported(demo("a"))) - len(now)
    assert metrics.leftovers.labels(source="prometheus")._value.get() == gone > 0
