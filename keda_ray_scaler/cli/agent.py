"""``keda-ray-scaler agent``: export one Ray cluster's demand and nodes, and scale down safely.

Runs beside the Ray head (a sidecar of the head pod) from the scaler's own image: no Ray
inside, it speaks to the GCS over gRPC (:mod:`keda_ray_scaler.gcs`). Flags only; Ray's own
``RAY_AUTH_MODE`` / ``RAY_AUTH_TOKEN`` / ``RAY_AUTH_TOKEN_PATH`` environment (read as Ray's clients
read it: :mod:`keda_ray_scaler.gcs.auth`) enables token authentication to the GCS. Bad flags exit
2 with one line; so does a head whose Ray version is outside the supported range
(:mod:`keda_ray_scaler.gcs.versions`), read before the first poll reads anything. SIGTERM and
SIGINT stop the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.demand_filter import DEFAULT_WINDOW_S
from keda_ray_scaler.agent.health import DEFAULT_INTERVALS, MIN_MAX_AGE_S
from keda_ray_scaler.agent.join_tracker import JoinSettings
from keda_ray_scaler.agent.joins import (
    DEFAULT_BACKOFF_INITIAL_S,
    DEFAULT_BACKOFF_MAX_S,
    DEFAULT_JOIN_TIMEOUT_S,
    BackoffSettings,
)
from keda_ray_scaler.agent.ports import SystemClock
from keda_ray_scaler.agent.ray_state import DemandRead
from keda_ray_scaler.cli import SUMMARY, add_logging_flags, configure_logging_from
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.model import ClusterSpec

if TYPE_CHECKING:
    from keda_ray_scaler.agent.apply import Applier
    from keda_ray_scaler.agent.builder import AgentSettings, ApplierFactory
    from keda_ray_scaler.agent.join_tracker import JoinTracker
    from keda_ray_scaler.agent.kube import PodCache
    from keda_ray_scaler.agent.raycluster_watch import RayClusterWatch
    from keda_ray_scaler.gcs.versions import UnsupportedRayVersion

_WHERE = "agent"
log = structlog.get_logger(__name__)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``agent`` and its flags."""
    p = subparsers.add_parser(
        "agent",
        help=SUMMARY["agent"],
        description="Poll one Ray cluster's GCS, serve /metrics and /healthz, run safe scale-down.",
    )
    _ray_flags(p)
    _metrics_flags(p)
    _scale_down_flags(p)
    add_logging_flags(p)


def _ray_flags(p: argparse.ArgumentParser) -> None:
    """Which Ray cluster, how it is read."""
    g = p.add_argument_group("ray")
    g.add_argument(
        "--cluster-spec",
        type=Path,
        help="worker groups file (the format of `plan --cluster`); Deployment mode",
    )
    g.add_argument(
        "--raycluster",
        help="KubeRay mode: the RayCluster (in --namespace) whose worker groups, resources and "
        "bounds are read and watched (an edit is planned at the next poll), and whose "
        "RayWorkerGroups are reconciled (instead of --cluster-spec)",
    )
    g.add_argument(
        "--gcs-address", default="127.0.0.1:6379", help="Ray GCS host:port (127.0.0.1:6379)"
    )
    g.add_argument("--interval", type=float, default=5.0, help="seconds between polls (5)")
    g.add_argument(
        "--ray-timeout", type=float, default=5.0, help="deadline of one GCS call in seconds (5)"
    )
    g.add_argument(
        "--max-shapes",
        type=int,
        default=200,
        help="at most this many demand series; more are merged upward and counted (200)",
    )
    g.add_argument(
        "--demand-read",
        choices=[d.value for d in DemandRead],
        default=DemandRead.EXACT.value,
        help="where pending task demand comes from: 'exact' reads the head raylet's queue "
        "(GetResourceLoad) after the cluster status, so a task starting on a new node is not "
        "also pending; 'gcs' takes the GCS's sum as Ray's autoscaler does; exact falls back to "
        "gcs for a poll whose raylet read fails, counted (exact)",
    )
    g.add_argument(
        "--use-window",
        type=float,
        default=DEFAULT_WINDOW_S,
        help="seconds a rise of pod use that pending demand did not pay for is taken for a "
        "task Ray counts both running and pending until its owner's next backlog report (left "
        "out of the exported demand); 0 = as read (10)",
    )


def _metrics_flags(p: argparse.ArgumentParser) -> None:
    """Where /metrics and /healthz are served."""
    g = p.add_argument_group("metrics and health")
    g.add_argument("--host", default="0.0.0.0", help="/metrics and /healthz bind address (all)")
    g.add_argument("--port", type=int, default=8080, help="/metrics and /healthz port (8080)")
    g.add_argument(
        "--health-intervals",
        type=float,
        default=DEFAULT_INTERVALS,
        help="/healthz answers 503 when the last successful poll of Ray is older than this "
        f"many --interval, and at least {MIN_MAX_AGE_S:g} s (one GCS hiccup is no failure) (3)",
    )


def _scale_down_flags(p: argparse.ArgumentParser) -> None:
    """Kubernetes access for drain-then-mark scale-down and pods that do not join."""
    g = p.add_argument_group("kubernetes (scale-down)")
    g.add_argument(
        "--no-scale-down",
        action="store_true",
        help="export only: no Kubernetes access, no drain, no victims",
    )
    g.add_argument("--namespace", help="namespace of the worker pods (required for scale-down)")
    g.add_argument(
        "--label-selector",
        help="selects this cluster's worker pods "
        "(default: ray.io/cluster=<cluster>,ray.io/node-type=worker)",
    )
    g.add_argument("--group-label", default="ray.io/group", help="pod label naming the group")
    g.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster service account)"
    )
    g.add_argument("--context", help="kubeconfig context")
    g.add_argument(
        "--settle-delay",
        type=float,
        default=5.0,
        help="seconds to wait after deletion costs are seen before draining (5)",
    )
    g.add_argument(
        "--drain-deadline",
        type=float,
        default=0.0,
        help="drain deadline in seconds after now; 0 = none, as Ray's autoscaler (0)",
    )
    g.add_argument(
        "--join-timeout",
        action="append",
        default=[],
        metavar="[GROUP=]SECONDS",
        help="a worker pod with no Ray node this long after its creation is failing and "
        "removed without a drain; GROUP= for one group, repeatable (300, Ray v2's)",
    )
    g.add_argument(
        "--backoff-initial",
        type=float,
        default=DEFAULT_BACKOFF_INITIAL_S,
        help="seconds a group gets no new pods after a failed launch; doubles per failed launch",
    )
    g.add_argument(
        "--backoff-max",
        type=float,
        default=DEFAULT_BACKOFF_MAX_S,
        help="the longest back-off in seconds (600)",
    )


def _check(ok: bool, flag: str, problem: str) -> None:
    if not ok:
        raise ConfigError(_WHERE, flag, problem)


def join_settings(args: argparse.Namespace) -> JoinSettings:
    """``--join-timeout`` values and the back-off flags; raises :class:`ConfigError`."""
    default, per_group = DEFAULT_JOIN_TIMEOUT_S, {}
    for value in args.join_timeout:
        group, _, seconds = str(value).rpartition("=")
        try:
            timeout = float(seconds)
        except ValueError:
            timeout = -1.0
        _check(
            timeout > 0 and math.isfinite(timeout),
            "--join-timeout",
            f"expected [GROUP=]SECONDS with SECONDS > 0, got {str(value)[:80]!r}",
        )
        if group:
            per_group[group] = timeout
        else:
            default = timeout
    backoff = BackoffSettings(args.backoff_initial, args.backoff_max)
    return JoinSettings(default, per_group, backoff)


def validate(args: argparse.Namespace) -> None:
    """Flag values a parser type cannot check; raises :class:`ConfigError` naming the flag."""
    _check(args.interval > 0, "--interval", f"must be > 0, got {args.interval:g}")
    _check(args.ray_timeout > 0, "--ray-timeout", f"must be > 0, got {args.ray_timeout:g}")
    _check(args.use_window >= 0, "--use-window", f"must be >= 0, got {args.use_window:g}")
    _check(
        args.backoff_initial > 0, "--backoff-initial", f"must be > 0, got {args.backoff_initial:g}"
    )
    _check(
        args.backoff_max >= args.backoff_initial,
        "--backoff-max",
        f"must be >= --backoff-initial, got {args.backoff_max:g}",
    )
    join_settings(args)
    _check(args.max_shapes >= 3, "--max-shapes", f"must be >= 3, got {args.max_shapes}")
    _check(0 <= args.port <= 65535, "--port", f"must be 0..65535, got {args.port}")
    _check(
        args.health_intervals > 0 and math.isfinite(args.health_intervals),
        "--health-intervals",
        f"must be > 0, got {args.health_intervals:g}",
    )
    _check(args.settle_delay >= 0, "--settle-delay", f"must be >= 0, got {args.settle_delay:g}")
    _check(
        args.drain_deadline >= 0,
        "--drain-deadline",
        f"must be >= 0, got {args.drain_deadline:g}",
    )
    host, sep, port = args.gcs_address.rpartition(":")
    _check(
        bool(sep and host and port.isdigit()),
        "--gcs-address",
        f"not host:port: {args.gcs_address!r}",
    )
    if not args.no_scale_down:
        _check(bool(args.namespace), "--namespace", "required unless --no-scale-down")
    _check(
        (args.cluster_spec is None) != (args.raycluster is None),
        "--cluster-spec",
        "give exactly one of --cluster-spec (Deployment mode) and --raycluster (KubeRay mode)",
    )
    if args.raycluster is not None:
        _check(bool(args.namespace), "--namespace", "required with --raycluster")


def load_spec(path: Path) -> ClusterSpec:
    """The cluster spec file (``config.load_cluster_spec`` raises ConfigError naming the field)."""
    from keda_ray_scaler.config import load_cluster_spec

    spec: ClusterSpec = load_cluster_spec(path)
    return spec


def load_raycluster_spec(api: Any, namespace: str, name: str) -> ClusterSpec:
    """KubeRay mode: the worker groups as Ray's KubeRay integration reads them from the CR, at
    start (a ConfigError then stops the agent); the watch keeps them current afterwards."""
    from kubernetes import client

    from keda_ray_scaler.agent.kuberay_api import read_raycluster
    from keda_ray_scaler.agent.raycluster import cluster_spec
    from keda_ray_scaler.errors import KubernetesError

    try:
        raw = read_raycluster(client.CustomObjectsApi(api.api_client), namespace, name)
    except KubernetesError as exc:
        raise ConfigError(_WHERE, "--raycluster", str(exc)) from exc
    spec: ClusterSpec = cluster_spec(raw)
    return spec


def run(args: argparse.Namespace) -> int:
    """Build everything from flags, then poll until SIGTERM/SIGINT."""
    configure_logging_from(args, _WHERE)
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
    from kubernetes.config import ConfigException

    from keda_ray_scaler.agent.kube import load_api

    if kubeconfig is not None and not kubeconfig.is_file():
        raise ConfigError(_WHERE, "--kubeconfig", f"{kubeconfig} is not a file; {_KUBE_HINT}")
    try:
        return load_api(str(kubeconfig) if kubeconfig else None, context)
    except (ConfigException, OSError, ValueError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if kubeconfig is None:
            problem = f"not in a Kubernetes pod ({problem.rstrip('.')})"
        field = "--context" if context and "context" in problem.lower() else "--kubeconfig"
        raise ConfigError(_WHERE, field, f"{problem}; {_KUBE_HINT}") from exc


def _kuberay_applier(
    args: argparse.Namespace,
    api: Any,
    cache: PodCache,
    clock: SystemClock,
    registry: CollectorRegistry,
) -> ApplierFactory:
    """KubeRay mode's applier, made once the victims and the join tracker exist."""
    from kubernetes import client

    from keda_ray_scaler.agent.kuberay import KubeRayApplier
    from keda_ray_scaler.agent.kuberay_api import KubeRayApi, KubeRaySettings

    def make(victims: Callable[[], Mapping[str, str]], joins: JoinTracker) -> Applier:
        return KubeRayApplier(
            KubeRayApi(
                client.CustomObjectsApi(api.api_client),
                KubeRaySettings(namespace=args.namespace, raycluster=args.raycluster),
            ),
            cache,
            lambda: cache.synced,
            victims,
            clock,
            registry,
            cluster=args.raycluster,
            backoff=joins.backoff_message,
        )

    return make


def _raycluster_watch(
    args: argparse.Namespace, api: Any, spec: ClusterSpec, registry: CollectorRegistry
) -> RayClusterWatch:
    """KubeRay mode's worker groups: the RayCluster watched, from the start-up read on."""
    from kubernetes import client

    from keda_ray_scaler.agent.raycluster_watch import RayClusterWatch, WatchSettings

    settings = WatchSettings(namespace=args.namespace, name=args.raycluster)
    return RayClusterWatch(client.CustomObjectsApi(api.api_client), settings, spec, registry)


async def _main(args: argparse.Namespace, spec: ClusterSpec, gcs: GcsConnection, api: Any) -> None:
    from keda_ray_scaler.agent.builder import build_agent
    from keda_ray_scaler.agent.health import HealthProbe, max_age_s
    from keda_ray_scaler.agent.metrics_server import start_metrics_server

    clock = SystemClock()
    tasks: list[asyncio.Task[None]] = []
    registry = CollectorRegistry()
    specs: ClusterSpec | RayClusterWatch = spec
    if args.raycluster is not None:  # KubeRay mode: the RayCluster read continuously
        specs = _raycluster_watch(args, api, spec, registry)
        tasks.append(asyncio.create_task(specs.run()))
    cache = None if args.no_scale_down else _pod_cache(args, api, spec, registry)
    applier: ApplierFactory | None = None
    if cache is not None and args.raycluster is not None:  # KubeRay mode: RWGs -> RayCluster
        applier = _kuberay_applier(args, api, cache, clock, registry)
    stop = _Stop(asyncio.Event())
    agent = build_agent(
        specs,
        gcs,
        clock,
        _agent_settings(args),
        pods=cache,
        applier=applier,
        registry=registry,
        on_unsupported=stop.unsupported_ray,
    )
    if cache is not None:
        tasks.append(asyncio.create_task(cache.run()))
    if agent.applier is not None:
        from keda_ray_scaler.agent.apply import run_applier

        tasks.append(asyncio.create_task(run_applier(agent.applier, clock, args.interval)))
    loop = agent.loop
    max_age = max_age_s(args.health_intervals, args.interval)
    start_metrics_server(args.host, args.port, registry, HealthProbe(loop, clock, max_age))
    log.info(
        "agent started", cluster=spec.name, gcs=args.gcs_address, port=args.port, max_age_s=max_age
    )
    running = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        running.add_signal_handler(sig, stop.event.set)
    tasks.append(asyncio.create_task(loop.run()))
    await stop.event.wait()
    await _cancel_all(tasks)
    await gcs.close()
    if stop.refused:  # exit 2 with one line, as a bad flag
        raise ConfigError(_WHERE, "--gcs-address", str(stop.refused[0]))
    log.info("agent stopped", cluster=spec.name, ray_version=agent.reader.ray_version)


def _agent_settings(args: argparse.Namespace) -> AgentSettings:
    """The agent's settings from its flags."""
    from keda_ray_scaler.agent.builder import AgentSettings
    from keda_ray_scaler.agent.loop import LoopSettings
    from keda_ray_scaler.agent.victims import VictimSettings

    return AgentSettings(
        loop=LoopSettings(
            interval_s=args.interval,
            max_shapes=args.max_shapes,
            scale_down=not args.no_scale_down,
            use_window_s=args.use_window,
        ),
        victims=VictimSettings(settle_s=args.settle_delay, drain_deadline_s=args.drain_deadline),
        joins=join_settings(args),
        ray_timeout_s=args.ray_timeout,
        demand_read=DemandRead(args.demand_read),
    )


def _pod_cache(
    args: argparse.Namespace, api: Any, spec: ClusterSpec, registry: CollectorRegistry
) -> PodCache:
    """The watched cache of this cluster's worker pods (scale-down and joins read it)."""
    from keda_ray_scaler.agent.kube import KubeSettings, PodCache

    selector = args.label_selector or f"ray.io/cluster={spec.name},ray.io/node-type=worker"
    kube = KubeSettings(
        namespace=args.namespace,
        label_selector=selector,
        cluster=spec.name,
        group_label=args.group_label,
    )
    return PodCache(api, kube, registry)


@dataclass
class _Stop:
    """What ends the agent: a signal, or a Ray it does not support (then exit 2)."""

    event: asyncio.Event
    refused: list[UnsupportedRayVersion] = field(default_factory=list)

    def unsupported_ray(self, exc: UnsupportedRayVersion) -> None:
        """The reader's callback: keep why, and stop."""
        self.refused.append(exc)
        self.event.set()


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait for each to end."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
