"""One place that wires the agent: the CLI (``keda-ray-scaler agent``) and the demo both call
:func:`build_agent`, so the two can never wire it differently.

Parts: the Ray reader, the look between polls (with ``--watch-interval``) and the drainer on one
GCS connection, the ``/metrics`` exporter, the poll loop
(:class:`~keda_ray_scaler.agent.loop.AgentLoop`) and, with a pod source, the join tracker and
the victim controller (with the KubeRay applier when one is made). What differs between callers
is passed in: the pod source (Kubernetes pod cache or the demo's pods), the settings, an applier
factory, and a wrapper of the reader.

The applier reads the published victims and the victim controller asks the applier how a pod
goes: the published victims' home (a :class:`~keda_ray_scaler.agent.victims.ledger.VictimLedger`)
is made first and given to both, so neither is made before the other exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.interfaces import PodSource, SpecView, spec_view
from keda_ray_scaler.agent.joining.join_tracker import JoinTracker
from keda_ray_scaler.agent.joining.joins import PodEntry, PodJoinFacts
from keda_ray_scaler.agent.kuberay.scale_up_lead import PlannedTargets
from keda_ray_scaler.agent.loop import AgentLoop, StateReader
from keda_ray_scaler.agent.loop_parts import NO_PLANNED, NO_WATCH, PlannedVictims, PodList, Watch
from keda_ray_scaler.agent.modes import Applier
from keda_ray_scaler.agent.ray.drain import RayDrainer
from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.agent.ray.refusal_log import RefusalLog
from keda_ray_scaler.agent.ray.resource_names import StandInLog
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.agent.ray.status_watch import StatusWatch
from keda_ray_scaler.agent.settings import AgentSettings
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.agent.victims.fence import Fence
from keda_ray_scaler.agent.victims.ledger import VictimLedger
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.gcs.raylet import HeadRaylet
from keda_ray_scaler.gcs.versions import UnsupportedRayVersion
from keda_ray_scaler.model import ClusterSpec
from keda_ray_scaler.planner import plan

#: Makes the applier from the published victims' read and the join tracker (KubeRay mode).
ApplierFactory = Callable[[Callable[[], Mapping[str, str]], JoinTracker], Applier]


@dataclass(frozen=True, slots=True)
class Agent:
    """The wired parts."""

    loop: AgentLoop
    reader: RayReader
    registry: CollectorRegistry
    victims: VictimController | None = None
    joins: JoinTracker | None = None
    applier: Applier | None = None


@dataclass(frozen=True, slots=True)
class _ScaleDown:
    """The parts made only with a pod source: the join tracker, the victim controller and the
    applier (None: Deployment mode)."""

    joins: JoinTracker
    victims: VictimController
    applier: Applier | None
    pods: PodList  # the pods as the loop reads them


def pod_entries(pods: PodSource) -> list[PodEntry] | None:
    """The pods as the loop reads them, with what Kubernetes says of their way into Ray; None
    while the source is not synced."""
    if not pods.synced:
        return None
    return [
        PodEntry(
            p.name,
            p.group,
            p.active,
            PodJoinFacts(p.created_s, p.unschedulable, p.container_failure),
        )
        for p in pods.pods()
    ]


def pod_ips(pods: PodSource) -> tuple[PodRef, ...]:
    """The active pods that have IPs, each with all of them: the reader's IP rule (a node names
    a pod only from one of its IPs) and its fallback for Ray nodes that carry no pod name."""
    return tuple(PodRef(p.name, p.group, p.pod_ips) for p in pods.pods() if p.pod_ips and p.active)


def _scale_down(
    specs: SpecView,
    source: PodSource,
    gcs: GcsConnection,
    reader: RayReader,
    clock: Clock,
    registry: CollectorRegistry,
    settings: AgentSettings,
    applier: ApplierFactory | None,
) -> _ScaleDown:
    """The join tracker, then the published victims' ledger, the applier reading it, and the
    victim controller writing it; the pods as the loop reads them."""
    joins = JoinTracker(specs, registry, settings.joins)
    groups = [g.name for g in specs.spec.worker_groups]
    ledger = VictimLedger(specs.spec.name, groups, registry)
    made = applier(ledger.victims, joins) if applier is not None else None
    drainer = RayDrainer(gcs.get, timeout_s=settings.ray_timeout_s)
    victims = VictimController(
        specs, source, reader, drainer, clock, registry, settings.victims,
        applier=made, launch_limit=joins.launch_limit, fence=Fence(drainer), ledger=ledger,
    )  # fmt: skip
    return _ScaleDown(joins, victims, made, partial(pod_entries, source))


def _watch(
    gcs: GcsConnection, reader: RayReader, raylet: HeadRaylet, settings: AgentSettings
) -> Watch:
    """The look between polls every ``--watch-interval`` (none at 0), on the reader's GCS
    connection and head raylet, against what the reader's last read saw."""
    every_s = settings.loop.watch_interval_s
    if every_s <= 0:
        return NO_WATCH
    timeout_s = settings.ray_timeout_s
    return StatusWatch(gcs, lambda: reader.seen, raylet, every_s=every_s, timeout_s=timeout_s)


def build_agent(
    spec: ClusterSpec | SpecView,
    gcs: GcsConnection,
    clock: Clock,
    settings: AgentSettings,
    *,
    pods: PodSource | None = None,
    applier: ApplierFactory | None = None,
    wrap_reader: Callable[[RayReader], StateReader] | None = None,
    registry: CollectorRegistry | None = None,
    on_unsupported: Callable[[UnsupportedRayVersion], None] | None = None,
    planned: PlannedTargets | None = None,
) -> Agent:
    """The agent for ``spec`` (fixed, or a view read afresh at each use: KubeRay mode's
    RayCluster watch); with ``pods``, the join tracker and the victim protocol too (none when
    ``settings.loop.scale_down`` is False). Series go to ``registry`` (new when None).
    ``on_unsupported``: the reader checks the head's Ray version first (:class:`RayReader`;
    each refusal is passed to it, e.g. the readiness of
    :class:`~keda_ray_scaler.agent.http.agent_health.HeadRefusal`); what the reader refuses
    from Ray is counted in ``registry`` (:class:`RefusalLog`);
    ``planned`` gets every published input (:mod:`~keda_ray_scaler.agent.kuberay.scale_up_lead`)."""
    registry = registry if registry is not None else CollectorRegistry()
    specs = spec_view(spec)
    source = pods if settings.loop.scale_down else None
    raylet = HeadRaylet()  # the reader's and the look's
    reader = RayReader(
        gcs,
        specs,
        timeout_s=settings.ray_timeout_s,
        pods=partial(pod_ips, source) if source is not None else None,
        on_unsupported=on_unsupported,
        demand=settings.demand_read,
        refusals=RefusalLog(registry, specs.spec.name),
        raylet=raylet,
        now=clock.now,
    )
    parts = None
    if source is not None:
        parts = _scale_down(specs, source, gcs, reader, clock, registry, settings, applier)
    loop = partial(
        AgentLoop,
        specs,
        wrap_reader(reader) if wrap_reader is not None else reader,
        SnapshotCollector(registry, StandInLog(registry, specs.spec.name), settings.seal_key),
        AgentMetrics(registry, specs.spec.name),
        clock,
        settings.loop,
        planned=planned if planned is not None else NO_PLANNED,
        watch=_watch(gcs, reader, raylet, settings),
    )
    if parts is None:
        return Agent(loop(), reader, registry)
    made = loop(victims=PlannedVictims(parts.victims, plan), pods=parts.pods, joins=parts.joins)
    return Agent(made, reader, registry, parts.victims, parts.joins, parts.applier)
