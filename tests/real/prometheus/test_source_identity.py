"""Cluster identity end to end: a real Prometheus, under the project's own scrape configuration,
scrapes the real agent exporter and forging exporters; the scaler's answer does not move.

How this maps to Kubernetes: Debian's Prometheus has no Kubernetes discovery, so each exporter is
a static target whose target labels are exactly the ``__meta_kubernetes_*`` labels pod discovery
attaches to a pod (:meth:`prometheus_server.ScrapeTarget.discovery_labels`: namespace, pod name,
pod labels, container port name, ``prometheus.io/*`` annotations). The relabelling that turns them
into ``namespace``/``head_pod``/``job``/``instance`` is the shipped one, read from the repository:
``manifests/monitoring/prometheus-scrape-config.yaml`` as is, and
``manifests/monitoring/podmonitor-agent.yaml`` behind the relabellings the Prometheus operator
puts in front of a PodMonitor's own (selector and port ``keep``, then ``namespace``,
``container``, ``pod``, ``job``, ``endpoint``). A "forger in namespace team-b" is a pod that
discovery reports in team-b; what it exports in its own series (``namespace="ray"``, the agent's
``instance``...) is only data, renamed ``exported_*`` because ``honor_labels`` is false.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import tenacity
import yaml
from builders import cluster, group, inp, res
from prometheus_client import CollectorRegistry
from prometheus_server import (
    PrometheusServer,
    SampleExporter,
    ScrapeTarget,
    requires_prometheus,
    serve_registry,
    shipped_scrape_job,
)

from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.errors import Refusal
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.schema import ClusterSnapshot, Sample, digest, encoding
from keda_ray_scaler.sources.prometheus import PrometheusSettings, PrometheusSource
from keda_ray_scaler.sources.source_settings import RetrySettings

pytestmark = [requires_prometheus, pytest.mark.prometheus]

NOW_S = 1_795_000_000.0
PODMONITOR = Path(__file__).resolve().parents[3] / "manifests/monitoring/podmonitor-agent.yaml"
TIMESTAMPS = 'ray_scaler_snapshot_timestamp_seconds{cluster="demo"}'
#: The PodMonitor's camelCase relabelling keys, as the operator writes them in prometheus.yml.
_SNAKE = {"sourceLabels": "source_labels", "targetLabel": "target_label"}


def demo(tasks: int, *, when: float = NOW_S) -> ClusterSnapshot:
    """Cluster ``demo``: ``tasks`` pending {CPU: 5} on a 10-CPU group of at most 50 pods."""
    planning = inp(cluster(group("cpu", cpu=10, max=50)), bundles=[(res(cpu=5), tasks)])
    return ClusterSnapshot(planning, when, True)


def claiming(snapshot: ClusterSnapshot, **labels: str) -> list[Sample]:
    """The snapshot's series, sealed as an agent seals them, each also carrying ``labels`` (a
    forger's claims)."""
    sealed = digest.seal(encoding.encode(snapshot))
    return [Sample(s.name, {**s.labels, **labels}, s.value) for s in sealed]


def podmonitor_job() -> dict[str, Any]:
    """``podmonitor-agent.yaml`` as the Prometheus operator renders it into a scrape job."""
    monitor = yaml.safe_load(PODMONITOR.read_text())
    endpoint = monitor["spec"]["podMetricsEndpoints"][0]
    name = f"{monitor['metadata']['namespace']}/{monitor['metadata']['name']}"
    selector = [
        "__meta_kubernetes_pod_label_ray_io_node_type",
        "__meta_kubernetes_pod_labelpresent_ray_io_node_type",
    ]
    operator: list[dict[str, Any]] = [
        {"source_labels": selector, "regex": "(head);true", "action": "keep"},
        {
            "source_labels": ["__meta_kubernetes_pod_container_port_name"],
            "regex": endpoint["port"],
            "action": "keep",
        },
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"target_label": "job", "replacement": name},
        {"target_label": "endpoint", "replacement": endpoint["port"]},
    ]
    own = [{_SNAKE.get(k, k): v for k, v in r.items()} for r in endpoint["relabelings"]]
    return {
        "job_name": f"podMonitor/{name}/0",
        "honor_labels": endpoint["honorLabels"],
        "metrics_path": endpoint["path"],
        "relabel_configs": operator + own,
    }


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    """The real agent's exporter (SnapshotCollector, AgentMetrics): 20 x {CPU: 5}, target 10."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(demo(20))
    AgentMetrics(registry, "demo").poll_duration.observe(0.01)
    with serve_registry(registry) as address:
        yield address


@pytest.fixture(scope="module")
def forgers(agent: str) -> Iterator[tuple[SampleExporter, SampleExporter]]:
    """Two forgers of ``demo``: one in team-b (1,000 tasks, time 10^6 s ahead, claiming the
    agent's namespace, job and instance in its own labels) and one in ray itself (no demand)."""
    impersonation = {"namespace": "ray", "instance": agent, "job": "ray-scaler-agents"}
    up = claiming(demo(1000, when=NOW_S + 1e6), **impersonation)
    with SampleExporter(up) as team_b, SampleExporter(claiming(demo(0))) as same_ns:
        yield team_b, same_ns


def scaled_object(namespace: str, **metadata: str) -> pb.GetMetricsRequest:
    ref = pb.ScaledObjectRef(
        name="demo-cpu",
        namespace=namespace,
        scalerMetadata={"rayCluster": "demo", "workerGroup": "cpu", **metadata},
    )
    return pb.GetMetricsRequest(scaledObjectRef=ref, metricName="ray-demo.cpu")


async def target(stub: pb_grpc.ExternalScalerStub, request: pb.GetMetricsRequest) -> int:
    """The target KEDA gets."""
    reply = await stub.GetMetrics(request)
    return int(reply.metricValues[0].metricValue)


async def refusal(
    stub: pb_grpc.ExternalScalerStub, request: pb.GetMetricsRequest
) -> tuple[grpc.StatusCode, str]:
    """The status and message of a refused GetMetrics."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.GetMetrics(request)
    return info.value.code(), info.value.details() or ""


def scaler(url: str) -> ScalerServer:
    settings = PrometheusSettings(url=url, retry=RetrySettings(attempts=1))
    return build_server(
        PrometheusSource(settings, wait=tenacity.wait_none()),
        clock=lambda: NOW_S,
        target_settings=TargetSettings(refresh_interval_s=3600, max_age_s=60),
    )


@pytest.mark.parametrize("config", ["scrape-config", "podmonitor"])
async def test_a_forging_exporter_does_not_move_the_target(
    tmp_path: Path,
    agent: str,
    forgers: tuple[SampleExporter, SampleExporter],
    config: str,
) -> None:
    """The ScaledObject in ray gets 10 from its agent whatever a team-b pod exports about demo;
    a second exporter of ray/demo makes it UNAVAILABLE (two origins, both named), never
    "newest wins"; once it is gone the target is 10 again."""
    team_b, same_ns = forgers
    real = ScrapeTarget(agent, "ray", "demo-head")
    forged = ScrapeTarget(team_b.target, "team-b", "evil-head")
    job = shipped_scrape_job() if config == "scrape-config" else podmonitor_job()
    with PrometheusServer(tmp_path, [real, forged], base_job=job) as prom:
        series = prom.wait_for_series(TIMESTAMPS, 2)
        assert sorted((s["metric"]["namespace"], s["metric"]["head_pod"]) for s in series) == [
            ("ray", "demo-head"),
            ("team-b", "evil-head"),
        ]
        (claim,) = [s["metric"] for s in series if s["metric"]["namespace"] == "team-b"]
        assert (claim["exported_namespace"], claim["exported_instance"]) == ("ray", agent)
        assert "pod" not in claim  # discovery's pod name is head_pod: `pod` is the agent's

        server = scaler(prom.url)
        async with server, grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = pb_grpc.ExternalScalerStub(channel)
            assert await target(stub, scaled_object("ray")) == 10
            code, details = await refusal(stub, scaled_object("team-b"))
            assert code is grpc.StatusCode.UNAVAILABLE  # its own demo: time from the future
            assert "in the future" in details
            code, _ = await refusal(stub, scaled_object("team-b", rayClusterNamespace="ray"))
            assert code is grpc.StatusCode.PERMISSION_DENIED

            twin = ScrapeTarget(same_ns.target, "ray", "demo-head-2")
            prom.set_targets([real, forged, twin])
            prom.wait_for_series(TIMESTAMPS, 3)
            await server.cache.refresh()
            code, details = await refusal(stub, scaled_object("ray"))
            assert code is grpc.StatusCode.UNAVAILABLE
            assert "is exported by 2 origins" in details
            assert agent in details and same_ns.target in details
            refusals = server.registry.get_sample_value(
                "keda_ray_scaler_refusals_total", {"reason": Refusal.TWO_ORIGINS.value}
            )
            assert refusals == 1.0

            prom.set_targets([real, forged])
            prom.wait_for_series(TIMESTAMPS, 2)
            await server.cache.refresh()
            assert await target(stub, scaled_object("ray")) == 10
