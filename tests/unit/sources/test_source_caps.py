"""Caps on one cluster's series: refused before decoding or planning, named and counted."""

from __future__ import annotations

from typing import Any

import pytest
import tenacity
from builders import cluster, group, inp, res
from prometheus_client import CollectorRegistry
from prometheus_server import SampleExporter

from keda_ray_scaler import schema
from keda_ray_scaler.errors import Cap, CapExceeded, DemandUnavailable, FetchError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.schema import ClusterSnapshot, Sample, digest, encoding
from keda_ray_scaler.sources.metrics import SourceMetrics, source_metrics
from keda_ray_scaler.sources.prometheus import PrometheusSettings, PrometheusSource
from keda_ray_scaler.sources.scrape import ScrapeSettings, ScrapeSource
from keda_ray_scaler.sources.series_caps import DataCaps, check_caps
from keda_ray_scaler.sources.source_settings import RetrySettings

NOW_S = 1_795_000_000.0
DEMO = ClusterRef("ray", "demo")


def seed() -> list[Sample]:
    """The seed example's series (20 x {CPU: 5} on a 10-CPU group) of cluster ``demo``, sealed
    as the agent exports them."""
    planning = inp(cluster(group("cpu", cpu=10, max=50)), bundles=[(res(cpu=5), 20)])
    return digest.seal(encoding.encode(ClusterSnapshot(planning, NOW_S, True)))


def demand(shape: str, kind: str = "task", strategy: str = "") -> Sample:
    labels = {"cluster": "demo", "kind": kind, "shape": shape, "strategy": strategy}
    return Sample(schema.DEMAND_BUNDLES, labels, 1.0)


def forged_shapes(n: int) -> list[Sample]:
    """``n`` demand shapes, each asking its own custom resource (the review's heavy forgery)."""
    return [demand(f"CPU=1,r{i}=1") for i in range(n)]


def node_resource(pod: str, resource: str) -> Sample:
    labels = {"cluster": "demo", "pod": pod, "resource": resource}
    return Sample(schema.NODE_TOTAL, labels, 1.0)


SMALL = DataCaps(
    max_series=40,
    max_worker_groups=2,
    max_shapes=10,
    max_placement_groups=2,
    max_bundles_per_placement_group=4,
    max_resource_names=8,
    max_name_chars=20,
)


@pytest.mark.parametrize(
    ("extra", "cap", "flag"),
    [
        ([node_resource(f"p{i}", "CPU") for i in range(40)], Cap.SERIES, "--max-series 40"),
        (
            [
                Sample(schema.GROUP_INFO, {"cluster": "demo", "group": g, "shape": "CPU=1"}, 1)
                for g in ("a", "b")
            ],
            Cap.WORKER_GROUPS,
            "--max-worker-groups 2",
        ),
        ([demand(f"CPU={i}") for i in range(1, 11)], Cap.SHAPES, "--max-shapes 10"),
        (
            [demand(f"CPU={i}", "placement_group", "PACK") for i in range(1, 4)],
            Cap.PLACEMENT_GROUPS,
            "--max-placement-groups 2",
        ),
        (
            [demand(";".join(["CPU=1"] * 5), "placement_group", "PACK")],
            Cap.BUNDLES,
            "--max-pg-bundles 4",
        ),
        (forged_shapes(8), Cap.RESOURCE_NAMES, "--max-resource-names 8"),
        ([node_resource("p", "x" * 21)], Cap.NAME_CHARS, "--max-name-chars 20"),
        ([demand("x" * 21 + "=1")], Cap.NAME_CHARS, "--max-name-chars 20"),
        (
            [Sample(schema.NODE_IDLE_SECONDS, {"cluster": "demo", "pod": "p" * 21}, 1.0)],
            Cap.NAME_CHARS,
            "--max-name-chars 20",
        ),
    ],
    ids=[
        "series",
        "worker-groups",
        "shapes",
        "placement-groups",
        "bundles",
        "resource-names",
        "resource-label-chars",
        "name-in-shape-chars",
        "pod-chars",
    ],
)
def test_each_cap_refuses_the_cluster_naming_its_flag(
    extra: list[Sample], cap: Cap, flag: str
) -> None:
    """One over any cap: CapExceeded with that cap, the cluster and the flag in the message."""
    check_caps(seed(), SMALL)  # the seed example itself is within every cap
    with pytest.raises(CapExceeded) as info:
        check_caps(seed() + extra, SMALL)
    assert (info.value.cap, info.value.cluster) == (cap, "demo")
    assert flag in str(info.value) and str(info.value).endswith(": refused")


def test_at_the_caps_is_accepted() -> None:
    """Exactly at each cap is fine: only beyond is refused."""
    at = seed() + [demand(f"CPU={i}") for i in range(1, 9)]  # 9 shapes, 1 resource name
    at += [demand(";".join(["CPU=1"] * 4), "placement_group", "PACK")]  # 10th shape, 4 bundles
    at += [node_resource("p", "y" * 20)]
    check_caps(at, SMALL)


def test_a_real_agents_large_cluster_is_within_the_default_caps() -> None:
    """1,000 pods with four resources each and 200 shapes (the agent's --max-shapes): accepted."""
    pods = [f"pod-{i}" for i in range(1000)]
    samples = seed() + [demand(f"CPU={i}") for i in range(1, 200)]
    for pod in pods:
        for resource in ("CPU", "GPU", "memory", "object_store_memory"):
            samples.append(node_resource(pod, resource))
            samples.append(Sample(schema.NODE_AVAILABLE, node_resource(pod, resource).labels, 1))
    check_caps(samples, DataCaps())


@pytest.fixture
def metrics() -> SourceMetrics:
    return source_metrics(CollectorRegistry())


def refused_by(metrics: SourceMetrics, source: str, cap: Cap) -> tuple[float, float]:
    return (
        metrics.over_cap.labels(source, cap.value)._value.get(),
        metrics.failures.labels(source, "over_cap")._value.get(),
    )


async def test_an_agent_sending_5000_shapes_is_unavailable_before_any_decoding(
    metrics: SourceMetrics,
) -> None:
    """Scrape: 5,000 forged shapes over a real port are UNAVAILABLE naming the cap, counted."""
    with SampleExporter(seed() + forged_shapes(5000)) as exporter:
        settings = ScrapeSettings(targets={DEMO: exporter.url}, retry=RetrySettings(attempts=1))
        source = ScrapeSource(settings, metrics=metrics, wait=tenacity.wait_none())
        with pytest.raises(DemandUnavailable) as info:
            await source.fetch(DEMO)
    assert isinstance(info.value, FetchError) and info.value.kind == "over_cap"
    assert "--max-resource-names 64" in str(info.value)
    assert refused_by(metrics, "scrape", Cap.RESOURCE_NAMES) == (1.0, 1.0)


def as_prometheus_result(samples: list[Sample]) -> list[dict[str, Any]]:
    """What Prometheus answers for these series of namespace ``ray`` (one origin)."""
    return [
        {
            "metric": {"__name__": s.name, **s.labels, "namespace": "ray", "job": "j"},
            "value": [NOW_S, str(s.value)],
        }
        for s in samples
    ]


def test_prometheus_answers_over_a_cap_are_refused_before_parsing(
    metrics: SourceMetrics,
) -> None:
    """Prometheus: more series than --max-series is refused on the count alone, counted."""
    settings = PrometheusSettings(url="http://127.0.0.1:9", caps=DataCaps(max_series=30))
    source = PrometheusSource(settings, metrics=metrics)
    result: list[Any] = as_prometheus_result(seed()) + [None] * 30  # never parsed
    with pytest.raises(FetchError, match="more than --max-series 30") as info:
        source._decode(DEMO, result)
    assert info.value.kind == "over_cap"
    assert refused_by(metrics, "prometheus", Cap.SERIES) == (1.0, 1.0)
    decoded = source._decode(DEMO, as_prometheus_result(seed()))
    assert decoded["demo"].input.demand.bundles[0].count == 20
    source.close()
