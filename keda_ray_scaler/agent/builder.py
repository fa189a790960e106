"""One place that wires the agent: the CLI (``keda-ray-scaler agent``) and the demo both call
:func:`build_agent`, so the two can never wire it differently.

Parts: the Ray reader and drainer on one GCS connection, the ``/metrics`` exporter, the poll loop
(:class:`~keda_ray_scaler.agent.loop.AgentLoop`) and, with a pod source, the join tracker and
the victim controller (with the KubeRay applier when one is made). What differs between callers
is passed in: the pod source (Kubernetes pod cache or the demo's pods), the settings, an applier
factory, and a wrapper of the reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.interfaces import Clock, PodSource, SpecView, spec_view
from keda_ray_scaler.agent.joining.join_tracker import JoinTracker
from keda_ray_scaler.agent.joining.joins import PodEntry, PodJoinFacts
from keda_ray_scaler.agent.kuberay.scale_up_lead import PlannedTargets
from keda_ray_scaler.agent.loop import AgentLoop, StateReader
from keda_ray_scaler.agent.modes import Applier
from keda_ray_scaler.agent.ray.drain import RayDrainer
from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.agent.ray.resource_names import StandInLog
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.agent.settings import AgentSettings
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.agent.victims.fence import Fence
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.gcs.versions import UnsupportedRayVersion
from keda_ray_scaler.model import ClusterSpec
from keda_ray_scaler.planner import plan

#: Makes the applier once the victims and the join tracker exist (KubeRay mode).
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


def pod_ips(pods: PodSource) -> dict[str, PodRef]:
    """Active pods by IP: the reader's fallback for Ray nodes that carry no pod name."""
    return {p.pod_ip: PodRef(p.name, p.group) for p in pods.pods() if p.pod_ip and p.active}


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
    ``on_unsupported``: the reader checks the head's Ray version first (:class:`RayReader`);
    ``planned`` gets every published input (:mod:`~keda_ray_scaler.agent.kuberay.scale_up_lead`)."""
    registry = registry if registry is not None else CollectorRegistry()
    specs = spec_view(spec)
    source = pods if settings.loop.scale_down else None
    reader = RayReader(
        gcs,
        specs,
        timeout_s=settings.ray_timeout_s,
        pods_by_ip=(lambda: pod_ips(source)) if source is not None else None,
        on_unsupported=on_unsupported,
        demand=settings.demand_read,
    )
    victims = joins = made = None
    if source is not None:
        joins = JoinTracker(specs, registry, settings.joins)
        holder: list[VictimController] = []
        made = applier(lambda: holder[0].victims(), joins) if applier is not None else None
        drainer = RayDrainer(gcs.get, timeout_s=settings.ray_timeout_s)
        victims = VictimController(
            specs, source, reader, drainer, clock, registry, settings.victims,
            applier=made, launch_limit=joins.launch_limit, fence=Fence(drainer),
        )  # fmt: skip
        holder.append(victims)
    loop = AgentLoop(
        specs,
        wrap_reader(reader) if wrap_reader is not None else reader,
        SnapshotCollector(registry, StandInLog(registry, specs.spec.name)),
        AgentMetrics(registry, specs.spec.name),
        clock,
        settings.loop,
        planner=plan,
        victims=victims,
        pods=(lambda: pod_entries(source)) if source is not None else None,
        joins=joins,
        planned=planned,
    )
    return Agent(loop, reader, registry, victims, joins, made)
