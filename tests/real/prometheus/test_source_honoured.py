"""Forged series through jobs that honour labels: a real Prometheus, the real agent exporter, and
what the scaler answers.

The project's own job (``ray-scaler-agents``, honor_labels false, as shipped) scrapes the real
agent exporter as a head pod of ``team-a``, beside two jobs with honor_labels true, each scraping a
forger served on 127.0.0.1: ``kubernetes-pods`` (the prometheus-community chart's default job: a
team-b pod, its target labels ``namespace`` and ``pod`` overridden by its series) and
``pushgateway`` (whatever ``job`` and ``instance`` were pushed). Each forger copies the agent's
series (read from its ``/metrics``, as any pod can) or adds to them, under the agent's
``namespace``, ``job``, ``instance`` and ``head_pod``. Team-a's seed cluster has target 10; a
forgery that moved it answers 50. The forgers are scraped every 0.5 s, the agent every 1 s, so a
forger's copy of a series is the newest sample at least half of the time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests
import tenacity
from builders import cluster, group, inp, res
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from prometheus_server import (
    PrometheusServer,
    SampleExporter,
    ScrapeTarget,
    requires_prometheus,
    serve_registry,
)

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.errors import Refusal
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.schema import ClusterSnapshot, Sample, digest
from keda_ray_scaler.sources.prometheus import PrometheusSettings, PrometheusSource
from keda_ray_scaler.sources.promql import AGENT_JOB, OriginSettings
from keda_ray_scaler.sources.source_settings import RetrySettings

pytestmark = [requires_prometheus, pytest.mark.prometheus]

NOW_S = 1_795_000_000.0
HEAD_POD = "demo-head"
#: What a forger adds: 1,000 tasks of {CPU: 1}, enough to take the group to its max (50).
FORGED_COUNT = 1000.0
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE.name
#: GetMetrics rounds per scenario, a refresh before each, this far apart (about 3 s in all).
ROUNDS, PAUSE_S = 12, 0.25


def seed() -> ClusterSnapshot:
    """Team-a's ``demo``: 20 pending {CPU: 5} on a 10-CPU group of at most 50 pods: target 10."""
    planning = inp(cluster(group("cpu", cpu=10, max=50)), bundles=[(res(cpu=5), 20)])
    return ClusterSnapshot(planning, NOW_S, True)


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    """The real agent exporter (SnapshotCollector and AgentMetrics) serving the seed."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(seed())
    AgentMetrics(registry, "demo").poll_duration.observe(0.01)
    with serve_registry(registry) as address:
        yield address


def agents_series(address: str) -> list[Sample]:
    """The snapshot series the agent exports, read from its ``/metrics`` as a forger would."""
    text = requests.get(f"http://{address}/metrics", timeout=5).text
    return [
        Sample(s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in schema.SNAPSHOT_NAMES | digest.SEAL_NAMES
    ]


def claiming(samples: list[Sample], **labels: str) -> list[Sample]:
    """``samples`` under ``labels`` too; ``pod`` empty where the agent has none, so a target
    label ``pod`` of an honouring job is dropped and the label sets are the agent's exactly."""
    return [Sample(s.name, {"pod": "", **s.labels, **labels}, s.value) for s in samples]


def with_demand(samples: list[Sample], count: float) -> list[Sample]:
    """``samples`` with the seed's demand count replaced by ``count``."""
    return [
        Sample(s.name, s.labels, count) if s.name == schema.DEMAND_BUNDLES else s for s in samples
    ]


def cpu1_demand(**labels: str) -> Sample:
    """One demand series of FORGED_COUNT x {CPU: 1} for ``demo``."""
    shape = {"cluster": "demo", "kind": "task", "shape": "CPU=1", "strategy": ""}
    return Sample(schema.DEMAND_BUNDLES, {**shape, **labels}, FORGED_COUNT)


def honouring_job(name: str, target: str, **labels: str) -> dict[str, Any]:
    """A job with honor_labels true scraping ``target`` (its target ``labels``) every 0.5 s."""
    every = {"scrape_interval": "500ms", "scrape_timeout": "500ms"}
    static = [{"targets": [target], "labels": labels}]
    return {"job_name": name, "honor_labels": True, **every, "static_configs": static}


@pytest.fixture(scope="module")
def forgers() -> Iterator[tuple[SampleExporter, SampleExporter]]:
    """The team-b pod (job kubernetes-pods) and the Pushgateway-style target, serving nothing."""
    with SampleExporter() as pods, SampleExporter() as push:
        yield pods, push


@pytest.fixture(scope="module")
def prometheus(
    tmp_path_factory: pytest.TempPathFactory,
    agent: str,
    forgers: tuple[SampleExporter, SampleExporter],
) -> Iterator[PrometheusServer]:
    """Our job on the agent (team-a) beside the two honouring jobs on the forgers."""
    pods, push = forgers
    jobs = [
        honouring_job("kubernetes-pods", pods.target, namespace="team-b", pod="evil-head"),
        honouring_job("pushgateway", push.target),
    ]
    workdir = tmp_path_factory.mktemp("prom")
    with PrometheusServer(
        workdir, [ScrapeTarget(agent, "team-a", HEAD_POD)], extra_jobs=jobs
    ) as prom:
        prom.wait_for_series('ray_scaler_snapshot_timestamp_seconds{namespace="team-a"}', 1)
        yield prom


def scaler_on(url: str, master: bytes | None = None) -> ScalerServer:
    """The scaler on the Prometheus at ``url``, with the default settings (our job, seals
    required), seals keyed from ``master`` when given."""
    origin = OriginSettings(seal_master_key=master)
    settings = PrometheusSettings(url=url, retry=RetrySettings(attempts=1), origin=origin)
    return build_server(
        PrometheusSource(settings, wait=tenacity.wait_none()),
        clock=lambda: NOW_S,
        target_settings=TargetSettings(refresh_interval_s=3600, max_age_s=60),
    )


@pytest.fixture
async def scaler(prometheus: PrometheusServer) -> AsyncIterator[ScalerServer]:
    """The scaler on the module's Prometheus."""
    async with scaler_on(prometheus.url) as server:
        yield server


@pytest.fixture(autouse=True)
def quiet_forgers(
    prometheus: PrometheusServer, forgers: tuple[SampleExporter, SampleExporter]
) -> Iterator[None]:
    """Each test starts and ends with both forgers serving nothing (and Prometheus knowing)."""
    yield
    for forger in forgers:
        forger.set([])
        prometheus.wait_for_series(f'scrape_samples_scraped{{instance="{forger.target}"}} == 0', 1)
    # a forger's copy, gone, left staleness markers on the agent's series: wait for its next scrape
    prometheus.wait_for_series('ray_scaler_demand_bundles{namespace="team-a"} == 20', 1)


def serve(prometheus: PrometheusServer, forger: SampleExporter, samples: list[Sample]) -> None:
    """``forger`` serves ``samples`` from now on; wait until Prometheus scraped them."""
    forger.set(samples)
    scraped = f'scrape_samples_scraped{{instance="{forger.target}"}} == {len(samples)}'
    prometheus.wait_for_series(scraped, 1)


async def answers(server: ScalerServer) -> list[int | str]:
    """What KEDA gets for team-a's ``demo``, over ROUNDS refreshes: a target or a status."""
    ref = pb.ScaledObjectRef(
        name="demo-cpu",
        namespace="team-a",
        scalerMetadata={"rayCluster": "demo", "workerGroup": "cpu"},
    )
    request = pb.GetMetricsRequest(scaledObjectRef=ref, metricName="ray-demo.cpu")
    out: list[int | str] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = pb_grpc.ExternalScalerStub(channel)
        for _ in range(ROUNDS):
            await server.cache.refresh()
            try:
                reply = await stub.GetMetrics(request)
                out.append(int(reply.metricValues[0].metricValue))
            except grpc.aio.AioRpcError as exc:
                out.append(exc.code().name)
            await asyncio.sleep(PAUSE_S)
    return out


def refused(server: ScalerServer, reason: Refusal) -> float:
    """``keda_ray_scaler_refusals_total{reason}``."""
    value = server.registry.get_sample_value(
        "keda_ray_scaler_refusals_total", {"reason": reason.value}
    )
    return value or 0.0


async def test_without_a_forger_the_target_is_the_agents(scaler: ScalerServer) -> None:
    """The baseline: team-a's seed cluster answers 10, every time."""
    assert await answers(scaler) == [10] * ROUNDS


async def test_a_demand_series_added_under_the_agents_labels_is_refused(
    prometheus: PrometheusServer,
    forgers: tuple[SampleExporter, SampleExporter],
    agent: str,
    scaler: ScalerServer,
) -> None:
    """The reported attack: a team-b pod's CPU=1 series, under team-a's namespace and the
    agent's job, instance and head pod through kubernetes-pods, is never planned (it took the
    target from 10 to 50): the agent's digest does not cover it, UNAVAILABLE, counted."""
    pods, _ = forgers
    impersonation = {"namespace": "team-a", "job": AGENT_JOB, "instance": agent}
    serve(prometheus, pods, [cpu1_demand(head_pod=HEAD_POD, **impersonation)])
    got = await answers(scaler)
    assert got == [UNAVAILABLE] * ROUNDS, got
    assert refused(scaler, Refusal.DIGEST_MISMATCH) == ROUNDS


async def test_a_copy_interleaved_under_the_agents_labels_never_plans_the_forgery(
    prometheus: PrometheusServer,
    forgers: tuple[SampleExporter, SampleExporter],
    agent: str,
    scaler: ScalerServer,
) -> None:
    """A Pushgateway-style target pushing every agent series under its exact labels, the
    demand 20 -> 1,000 and the digest copied: one series in Prometheus, two writers. When the
    forger wrote last the values do not match the digest (UNAVAILABLE, counted); when the
    agent did, 10. Never 50."""
    _, push = forgers
    labels = {"namespace": "team-a", "job": AGENT_JOB, "instance": agent, "head_pod": HEAD_POD}
    serve(prometheus, push, claiming(with_demand(agents_series(agent), 1000.0), **labels))
    got = await answers(scaler)
    assert 50 not in got and set(got) <= {10, UNAVAILABLE}, got
    assert UNAVAILABLE in got, got
    assert refused(scaler, Refusal.DIGEST_MISMATCH) == got.count(UNAVAILABLE)


async def test_a_series_pushed_under_another_job_never_enters(
    prometheus: PrometheusServer,
    forgers: tuple[SampleExporter, SampleExporter],
    agent: str,
    scaler: ScalerServer,
) -> None:
    """Pushed under job ``pushgateway`` with the agent's instance and namespace (before: a second
    origin, the cluster frozen at UNAVAILABLE): the query selects our job only, so 10."""
    _, push = forgers
    serve(prometheus, push, [cpu1_demand(namespace="team-a", job="pushgateway", instance=agent)])
    assert await answers(scaler) == [10] * ROUNDS


async def test_a_whole_consistent_snapshot_under_another_instance_is_two_origins(
    prometheus: PrometheusServer,
    forgers: tuple[SampleExporter, SampleExporter],
    agent: str,
    scaler: ScalerServer,
) -> None:
    """A pushed snapshot of 1,000 tasks under our job, sealed with its own (valid) digest but
    another instance: two origins, UNAVAILABLE naming both, counted; never 50."""
    _, push = forgers
    forged = digest.seal(with_demand(agents_series(agent), 1000.0))
    labels = {"namespace": "team-a", "job": AGENT_JOB, "instance": "pushgateway:9091"}
    serve(prometheus, push, claiming(forged, **labels))
    got = await answers(scaler)
    assert got == [UNAVAILABLE] * ROUNDS, got
    assert refused(scaler, Refusal.TWO_ORIGINS) == ROUNDS


async def test_with_honor_labels_false_even_a_consistent_copy_never_enters(
    tmp_path: Path, agent: str, forgers: tuple[SampleExporter, SampleExporter]
) -> None:
    """The safe setting: kubernetes-pods with honor_labels false. A copy of the agent's series
    under its labels, 1,000 tasks, sealed with its own valid digest, is the team-b pod's own
    (``namespace`` team-b, job kubernetes-pods; the claims become ``exported_*``): 10."""
    pods, _ = forgers
    job = {
        **honouring_job("kubernetes-pods", pods.target, namespace="team-b"),
        "honor_labels": False,
    }
    labels = {"namespace": "team-a", "job": AGENT_JOB, "instance": agent, "head_pod": HEAD_POD}
    pods.set(claiming(digest.seal(with_demand(agents_series(agent), 1000.0)), **labels))
    with PrometheusServer(
        tmp_path, [ScrapeTarget(agent, "team-a", HEAD_POD)], extra_jobs=[job]
    ) as prom:
        prom.wait_for_series('ray_scaler_snapshot_digest{exported_job="ray-scaler-agents"}', 1)
        prom.wait_for_series('ray_scaler_snapshot_digest{job="ray-scaler-agents"}', 1)
        async with scaler_on(prom.url) as server:
            assert await answers(server) == [10] * ROUNDS


#: The scaler's master key in the keyed tests (random enough for a test: fixed, 32 bytes).
MASTER = bytes(range(32))


@pytest.fixture
def keyed(
    tmp_path: Path, forgers: tuple[SampleExporter, SampleExporter]
) -> Iterator[tuple[str, PrometheusServer]]:
    """Team-a's agent sealing with its cluster key (derived from MASTER), scraped by our job,
    beside the honouring Pushgateway-style job; ``(agent address, Prometheus)``."""
    registry = CollectorRegistry()
    key = digest.cluster_key(MASTER, "team-a", "demo")
    SnapshotCollector(registry, seal_key=key).publish(seed())
    _, push = forgers
    with (
        serve_registry(registry) as address,
        PrometheusServer(
            tmp_path,
            [ScrapeTarget(address, "team-a", HEAD_POD)],
            extra_jobs=[honouring_job("pushgateway", push.target)],
        ) as prom,
    ):
        prom.wait_for_series('ray_scaler_snapshot_timestamp_seconds{namespace="team-a"}', 1)
        yield address, prom
        push.set([])


async def test_unkeyed_a_resealed_copy_under_the_agents_labels_can_win(
    prometheus: PrometheusServer,
    forgers: tuple[SampleExporter, SampleExporter],
    agent: str,
    scaler: ScalerServer,
) -> None:
    """Why seals are keyed: without a key, a copy of every agent series under its exact labels,
    1,000 tasks, re-sealed with its own valid digest, is one consistent snapshot whenever the
    forger wrote last: the target moves to 50 (the "before" of the keyed seal)."""
    _, push = forgers
    labels = {"namespace": "team-a", "job": AGENT_JOB, "instance": agent, "head_pod": HEAD_POD}
    forged = digest.seal(with_demand(agents_series(agent), 1000.0))
    serve(prometheus, push, claiming(forged, **labels))
    got = await answers(scaler)
    print(f"unkeyed resealed copy: {got}")
    assert set(got) <= {10, 50, UNAVAILABLE}, got
    assert 50 in got, got


async def test_keyed_a_resealed_copy_under_the_agents_labels_never_plans_the_forgery(
    keyed: tuple[str, PrometheusServer], forgers: tuple[SampleExporter, SampleExporter]
) -> None:
    """The same forgery on a keyed agent (``--seal-key-file``) and a scaler with the master key
    (``--seal-master-key-file``): the forger cannot seal under team-a's key, so its copy never
    plans: UNAVAILABLE when it wrote last (counted), the agent's 10 otherwise; never 50."""
    address, prom = keyed
    _, push = forgers
    async with scaler_on(prom.url, MASTER) as server:
        assert await answers(server) == [10] * ROUNDS  # the keyed seal holds end to end
        labels = {
            "namespace": "team-a",
            "job": AGENT_JOB,
            "instance": address,
            "head_pod": HEAD_POD,
        }
        forged = digest.seal(with_demand(agents_series(address), 1000.0))
        serve(prom, push, claiming(forged, **labels))
        got = await answers(server)
        print(f"keyed resealed copy: {got}")
        assert 50 not in got and set(got) <= {10, UNAVAILABLE}, got
        assert UNAVAILABLE in got, got
        assert refused(server, Refusal.DIGEST_MISMATCH) == got.count(UNAVAILABLE)


async def test_keyed_another_clusters_key_does_not_seal_this_one(
    keyed: tuple[str, PrometheusServer],
) -> None:
    """A scaler whose master key is not the one team-a's key came from refuses every answer
    (digest_mismatch naming --seal-key-file): keys are per master, namespace and cluster."""
    _, prom = keyed
    async with scaler_on(prom.url, bytes(32)) as server:
        got = await answers(server)
    assert got == [UNAVAILABLE] * ROUNDS, got
    assert refused(server, Refusal.DIGEST_MISMATCH) == ROUNDS
