"""``keda-ray-scaler agent``: export one Ray cluster's demand and nodes, and scale down safely.

Runs beside the Ray head (a sidecar of the head pod) from the scaler's own image: no Ray
inside, it speaks to the GCS over gRPC (:mod:`keda_ray_scaler.gcs`). Flags only; Ray's own
``RAY_AUTH_MODE`` / ``RAY_AUTH_TOKEN`` / ``RAY_AUTH_TOKEN_PATH`` environment (read as Ray's clients
read it: :mod:`keda_ray_scaler.gcs.auth`) enables token authentication to the GCS. Bad flags exit
2 with one line. A head whose Ray version is outside the supported range
(:mod:`keda_ray_scaler.gcs.versions`, read before each poll until a supported one is read) is no
exit: the agent stays up, reads and exports nothing fresh from it, and ``/readyz`` answers 503
naming the version (:mod:`keda_ray_scaler.agent.http.agent_health`). SIGTERM and SIGINT stop
the loop. The flags and their checks are :mod:`keda_ray_scaler.cli.agent_flags`;
this module builds the agent from them and runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import CollectorRegistry

from keda_ray_scaler.cli import configure_logging_from
from keda_ray_scaler.cli.agent_flags import WHERE, agent_settings, validate
from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.model import ClusterSpec

if TYPE_CHECKING:
    from keda_ray_scaler.agent.builder import ApplierFactory
    from keda_ray_scaler.agent.joining.join_tracker import JoinTracker
    from keda_ray_scaler.agent.kube.object_watch import WatchSettings
    from keda_ray_scaler.agent.kube.pod_cache import PodCache
    from keda_ray_scaler.agent.kuberay.kuberay_api import ScaledObjectRefusals
    from keda_ray_scaler.agent.kuberay.raycluster_watch import RayClusterWatch
    from keda_ray_scaler.agent.kuberay.round_reads import Watches
    from keda_ray_scaler.agent.kuberay.scale_up_lead import PlannedTargets
    from keda_ray_scaler.agent.modes import Applier

log = structlog.get_logger(__name__)


def load_spec(path: Path) -> ClusterSpec:
    """The cluster spec file (``config.load_cluster_spec`` raises ConfigError naming the field)."""
    from keda_ray_scaler.config import load_cluster_spec

    spec: ClusterSpec = load_cluster_spec(path)
    return spec


def load_raycluster_spec(api: Any, namespace: str, name: str) -> ClusterSpec:
    """KubeRay mode: the worker groups as Ray's KubeRay integration reads them from the CR, at
    start (a ConfigError then stops the agent); the watch keeps them current afterwards."""
    from kubernetes import client

    from keda_ray_scaler.agent.kuberay.kuberay_api import read_raycluster
    from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec
    from keda_ray_scaler.errors import KubernetesError

    try:
        raw = read_raycluster(client.CustomObjectsApi(api.api_client), namespace, name)
    except KubernetesError as exc:
        raise ConfigError(WHERE, "--raycluster", str(exc)) from exc
    spec: ClusterSpec = cluster_spec(raw)
    return spec


def run(args: argparse.Namespace) -> int:
    """Build everything from flags, then poll until SIGTERM/SIGINT."""
    configure_logging_from(args, WHERE)
    validate(args)
    if args.raycluster is not None:
        api = kube_api(args.kubeconfig, args.context)
        spec = load_raycluster_spec(api, args.namespace, args.raycluster)
    else:
        spec = load_spec(args.cluster_spec)
        api = None if args.no_scale_down else kube_api(args.kubeconfig, args.context)
    asyncio.run(_main(args, spec, GcsConnection(args.gcs_address), api))
    return 0


_KUBE_HINT = "give --kubeconfig (and --context), or --no-scale-down to export metrics only"


def kube_api(kubeconfig: Path | None, context: str | None) -> Any:
    """The Kubernetes API client for scale-down; ConfigError naming ``--kubeconfig`` with a hint.

    Without ``--kubeconfig`` the in-cluster service account is used, which exists only in a pod.
    """
    from kubernetes import client as k8s

    from keda_ray_scaler.agent.kube.kube_settings import USER_AGENT
    from keda_ray_scaler.cli.kube_client import api_client

    client = api_client(kubeconfig, context, where=WHERE, user_agent=USER_AGENT, hint=_KUBE_HINT)
    return k8s.CoreV1Api(client)


def _kuberay_applier(
    args: argparse.Namespace,
    api: Any,
    cache: PodCache,
    clock: SystemClock,
    registry: CollectorRegistry,
    planned: PlannedTargets | None,
    reads: tuple[Watches, ScaledObjectRefusals] | None = None,
) -> ApplierFactory:
    """KubeRay mode's applier, made once the victims and the join tracker exist; its reads
    and refusals ``reads`` (None: by GET)."""
    from kubernetes import client

    from keda_ray_scaler.agent.kuberay.applier import KubeRayApplier
    from keda_ray_scaler.agent.kuberay.group_round import ApplierSettings
    from keda_ray_scaler.agent.kuberay.kuberay_api import (
        KubeRayApi,
        KubeRaySettings,
        ScaledObjectRefusals,
    )
    from keda_ray_scaler.agent.kuberay.round_reads import Watches

    if reads is None:  # every read by GET
        reads = (Watches(), ScaledObjectRefusals(registry, cluster=args.raycluster))
    watches, refusals = reads
    settings = ApplierSettings(
        cluster=args.raycluster, lead_up=args.scale_up_lead, lead_down=args.scale_down_lead
    )

    def make(victims: Callable[[], Mapping[str, str]], joins: JoinTracker) -> Applier:
        return KubeRayApplier(
            KubeRayApi(
                client.CustomObjectsApi(api.api_client),
                KubeRaySettings(namespace=args.namespace, raycluster=args.raycluster),
                cache.api_errors,  # one failed-call counter per registry
                refusals=refusals,
            ),
            cache,
            lambda: cache.synced,
            victims,
            clock,
            registry,
            settings,
            backoff=joins.backoff_message,
            planned=planned,
            watches=watches,
        )

    return make


def _planned_targets(args: argparse.Namespace, wake: asyncio.Event) -> PlannedTargets | None:
    """KubeRay mode's leads (``--scale-up-lead``, ``--scale-down-lead``, on by default): the
    agent's own targets, fresh for as long as the health probe calls a poll fresh; a target
    that moved wakes ``wake``."""
    if not (args.scale_up_lead or args.scale_down_lead):
        return None
    from keda_ray_scaler.agent.http.agent_health import max_age_s
    from keda_ray_scaler.agent.kuberay.scale_up_lead import PlannedTargets
    from keda_ray_scaler.planner import plan

    age = max_age_s(args.health_intervals, args.interval)
    return PlannedTargets(plan, max_age_s=age, wake=wake)


def _custom_objects(args: argparse.Namespace, api: Any) -> tuple[Any, WatchSettings]:
    """KubeRay mode's watches: the custom-objects client and where they look (one home)."""
    from kubernetes import client

    from keda_ray_scaler.agent.kube.object_watch import WatchSettings

    settings = WatchSettings(namespace=args.namespace, name=args.raycluster)
    return client.CustomObjectsApi(api.api_client), settings


def _raycluster_watch(
    args: argparse.Namespace,
    api: Any,
    spec: ClusterSpec,
    registry: CollectorRegistry,
    on_uid: Callable[[str], None] | None,
) -> RayClusterWatch:
    """KubeRay mode's worker groups: the RayCluster watched, from the start-up read on; its uid
    to ``on_uid``."""
    from keda_ray_scaler.agent.kuberay.raycluster_watch import RayClusterWatch

    return RayClusterWatch(*_custom_objects(args, api), spec, registry, on_uid=on_uid)


def _kuberay_reads(
    args: argparse.Namespace,
    api: Any,
    registry: CollectorRegistry,
    watch: RayClusterWatch,
    tasks: list[asyncio.Task[None]],
) -> tuple[tuple[Watches, ScaledObjectRefusals], asyncio.Event]:
    """KubeRay mode: the applier's reads, from ``watch`` and the watches of the RayWorkerGroups
    and ScaledObjects started here; the event the groups' new replicas set (a wake)."""
    from keda_ray_scaler.agent.kuberay.kuberay_api import ScaledObjectRefusals
    from keda_ray_scaler.agent.kuberay.round_reads import Watches
    from keda_ray_scaler.agent.kuberay.rwg_watch import replicas_watch
    from keda_ray_scaler.agent.kuberay.scaledobject_watch import scaled_object_watch

    rwg_watch, rwgs = replicas_watch(*_custom_objects(args, api))
    refusals = ScaledObjectRefusals(registry, cluster=args.raycluster)
    scaled_watch, scaled = scaled_object_watch(*_custom_objects(args, api), refusals)
    tasks += [asyncio.create_task(rwg_watch.run()), asyncio.create_task(scaled_watch.run())]
    return (Watches(watch, rwgs, scaled), refusals), rwgs.event


async def _main(args: argparse.Namespace, spec: ClusterSpec, gcs: GcsConnection, api: Any) -> None:
    from keda_ray_scaler.agent.builder import build_agent
    from keda_ray_scaler.agent.http.agent_health import HeadRefusal, HealthProbe, max_age_s
    from keda_ray_scaler.agent.http.metrics_server import start_metrics_server

    clock = SystemClock()
    tasks: list[asyncio.Task[None]] = []
    registry = CollectorRegistry()
    specs: ClusterSpec | RayClusterWatch = spec
    watch: RayClusterWatch | None = None
    cache = None if args.no_scale_down else _pod_cache(args, api, spec, registry)
    if args.raycluster is not None:  # KubeRay mode: the RayCluster read continuously
        on_uid = None if cache is None else cache.expect_owner_uid  # its pods must name it
        specs = watch = _raycluster_watch(args, api, spec, registry, on_uid)
        tasks.append(asyncio.create_task(watch.run()))
    applier: ApplierFactory | None = None
    wake: asyncio.Event | None = None
    planned: PlannedTargets | None = None
    if cache is not None and watch is not None:  # KubeRay mode: RWGs -> RayCluster
        reads, wake = _kuberay_reads(args, api, registry, watch, tasks)
        planned = _planned_targets(args, wake)
        applier = _kuberay_applier(args, api, cache, clock, registry, planned, reads)
    stop = asyncio.Event()
    head = HeadRefusal(clock)  # a Ray version refused: alive, not ready
    agent = build_agent(
        specs,
        gcs,
        clock,
        agent_settings(args),
        pods=cache,
        applier=applier,
        registry=registry,
        on_unsupported=head.refuse,
        planned=planned,
    )
    if cache is not None:
        tasks.append(asyncio.create_task(cache.run()))
    if agent.applier is not None:
        from keda_ray_scaler.agent.modes import run_applier

        tasks.append(asyncio.create_task(run_applier(agent.applier, clock, args.interval, wake)))
    loop = agent.loop
    max_age = max_age_s(args.health_intervals, args.interval)
    probe = HealthProbe(loop, clock, max_age, head)
    start_metrics_server(args.host, args.port, registry, probe, snapshot=loop.collector)
    log.info(
        "agent started", cluster=spec.name, gcs=args.gcs_address, port=args.port, max_age_s=max_age
    )
    running = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        running.add_signal_handler(sig, stop.set)
    tasks.append(asyncio.create_task(loop.run()))
    await stop.wait()
    await _cancel_all(tasks)
    await gcs.close()
    log.info("agent stopped", cluster=spec.name, ray_version=agent.reader.ray_version)


def _pod_cache(
    args: argparse.Namespace, api: Any, spec: ClusterSpec, registry: CollectorRegistry
) -> PodCache:
    """The watched cache of this cluster's worker pods (scale-down and joins read it): those
    its RayCluster (KubeRay mode) or a Deployment's ReplicaSet controls."""
    from keda_ray_scaler.agent.kube.kube_settings import KubeSettings, worker_selector
    from keda_ray_scaler.agent.kube.pod_cache import PodCache
    from keda_ray_scaler.agent.kube.pod_owner import DEPLOYMENT_OWNER, raycluster_owner

    selector = args.label_selector or worker_selector(spec.name)
    kuberay = args.raycluster is not None
    kube = KubeSettings(
        namespace=args.namespace,
        label_selector=selector,
        cluster=spec.name,
        group_label=args.group_label,
        owner=raycluster_owner(args.raycluster) if kuberay else DEPLOYMENT_OWNER,
    )
    return PodCache(api, kube, registry)


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait for each to end."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
