"""The agent, in-process, for the demo: read Ray, plan, run the victim protocol, export.

One :meth:`DemoAgent.step` is one agent poll: a fresh read of Ray's GCS (demand shapes and worker
nodes), the planner, :class:`~keda_ray_scaler.agent.victims.VictimController` (mark, confirm,
drain, publish) on the demo's in-memory pods, then the snapshot, with published victims as
``victim``, exported on ``/metrics`` in the :mod:`keda_ray_scaler.schema` contract, where the
scaler's scrape source reads it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import structlog
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from keda_ray_scaler import schema
from keda_ray_scaler.agent.kube import PodCache
from keda_ray_scaler.agent.ports import Clock, DrainResult
from keda_ray_scaler.agent.victims import VictimController, VictimSettings
from keda_ray_scaler.demo.pods import DemoPods
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    NodeStatus,
    PlanningInput,
    Resources,
    WorkerNode,
)
from keda_ray_scaler.planner import plan

if TYPE_CHECKING:
    from keda_ray_scaler.demo.run import DemoSettings

log = structlog.get_logger(__name__)

_RAY_TIMEOUT_S = 5.0


class RayReader:
    """Demand and worker nodes from Ray's GCS (``get_cluster_resource_state``); a RayView.

    Interim stand-in for the agent's ``ray_state.py`` in the demo: task/actor demand and
    worker nodes mapped by ``instance_id`` (the pod) and ``ray_node_type_name`` (the group).
    """

    def __init__(self, gcs_address: str, spec: ClusterSpec) -> None:
        self._address = gcs_address
        self._gcs: Any = None
        self._spec = spec

    def _client(self) -> Any:
        if self._gcs is None:
            # Ray only where the agent runs; _raylet is compiled and ships no type stubs.
            from ray._raylet import GcsClient  # type: ignore[attr-defined]

            self._gcs = GcsClient(address=self._address)
        return self._gcs

    async def read(self) -> tuple[Demand, tuple[WorkerNode, ...]]:
        """Pending task demand and the worker nodes, read now; RayError when Ray fails."""
        try:
            state = await asyncio.wait_for(asyncio.to_thread(self._state), _RAY_TIMEOUT_S)
        except Exception as exc:  # any GCS failure means "unknown", never "nothing"
            raise RayError(f"cannot read Ray's cluster state: {exc}") from exc
        bundles = tuple(
            Bundle(Resources.of(dict(r.request.resources_bundle)), r.count)
            for r in state.pending_resource_requests
            if r.count > 0
        )
        groups = {g.name for g in self._spec.worker_groups}
        nodes = []
        for n in state.node_states:
            if n.status == _DEAD or n.ray_node_type_name not in groups or not n.instance_id:
                continue
            total = Resources.of(dict(n.total_resources))
            nodes.append(
                WorkerNode(
                    pod=n.instance_id,
                    group=n.ray_node_type_name,
                    total=total,
                    available=Resources.of(dict(n.available_resources)),
                    idle_s=n.idle_duration_ms / 1000 if n.status == _IDLE else 0.0,
                    status=NodeStatus.DRAINING if n.status == _DRAINING else NodeStatus.RUNNING,
                    node_id=n.node_id.hex(),
                )
            )
        return Demand(bundles=bundles), tuple(sorted(nodes, key=lambda w: w.pod))

    async def nodes(self) -> tuple[WorkerNode, ...]:
        """The RayView the victim protocol re-checks against."""
        return (await self.read())[1]

    async def drain(self, node_id: str, message: str, deadline_ms: int) -> DrainResult:
        """Drain for idle termination, as Ray's autoscaler v2 does; never raises."""
        try:
            accepted, rejection = await asyncio.to_thread(
                self._client().drain_node, node_id, _IDLE_TERMINATION, message, deadline_ms
            )
        except Exception as exc:  # a failed call is a rejection: the pod is restored
            return DrainResult(False, str(exc))
        return DrainResult(bool(accepted), "" if accepted else str(rejection))

    def _state(self) -> Any:
        from ray.autoscaler.v2.sdk import get_cluster_resource_state

        return get_cluster_resource_state(self._client())


_DEAD, _IDLE, _DRAINING = 2, 3, 4  # autoscaler.proto NodeStatus
_IDLE_TERMINATION = 1  # autoscaler.proto DrainNodeReason DRAIN_NODE_REASON_IDLE_TERMINATION


class SnapshotCollector(Collector):
    """Exposes the latest snapshot's series (``schema.encode``) as gauges."""

    def __init__(self) -> None:
        self.snapshot: schema.ClusterSnapshot | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One gauge family per series name of the snapshot."""
        if self.snapshot is None:
            return
        families: dict[str, GaugeMetricFamily] = {}
        for s in schema.encode(self.snapshot):
            labels = sorted(s.labels)
            family = families.get(s.name)
            if family is None:
                family = families[s.name] = GaugeMetricFamily(s.name, s.name, labels=labels)
            family.add_metric([s.labels[k] for k in labels], s.value)
        yield from families.values()


class DemoAgent:
    """The agent's poll loop, one :meth:`step` at a time."""

    def __init__(
        self,
        spec: ClusterSpec,
        gcs_address: str,
        env: Mapping[str, str],
        pods: DemoPods,
        clock: Clock,
        settle_s: float,
    ) -> None:
        self.spec = spec
        self.gcs_address = gcs_address
        self.env = dict(env)
        self._clock = clock
        self._ray = RayReader(gcs_address, spec)
        self.registry = CollectorRegistry()
        self._collector = SnapshotCollector()
        self.registry.register(self._collector)
        # The victim controller reads the pod cache through five members DemoPods provides.
        self._victims = VictimController(
            spec,
            cast(PodCache, pods),
            self._ray,
            self._ray,
            clock,
            self.registry,
            VictimSettings(settle_s=settle_s, confirm_timeout_s=5.0),
        )
        self._pods = pods
        self._nodes: tuple[WorkerNode, ...] = ()
        self.registered: set[str] = set()  # pods whose Ray node has been seen
        self._ok = False
        self._pending = 0
        self._http: Any = None
        self.metrics_url = ""

    def serve(self) -> None:
        """Serve ``/metrics`` on a free loopback port."""
        http, _thread = start_http_server(0, addr="127.0.0.1", registry=self.registry)
        self._http = http
        self.metrics_url = f"http://127.0.0.1:{http.server_port}/metrics"

    async def step(self) -> None:
        """One poll: read Ray, plan, run the victim protocol, export the snapshot."""
        try:
            demand, nodes = await self._ray.read()
        except RayError as exc:
            self._ok = False
            log.warning("ray poll failed", error=str(exc))
            self._export(self._collector.snapshot, success=False)
            return
        self.registered |= {n.pod for n in nodes}
        self._pending = sum(b.count for b in demand.bundles)
        decided = plan(PlanningInput(self.spec, demand, self._with_pods(nodes)))
        await self._victims.step(decided)
        self._nodes = self._with_pods(nodes)
        self._ok = True
        snapshot = schema.ClusterSnapshot(
            PlanningInput(self.spec, demand, self._nodes), self._clock.now(), True
        )
        self._export(snapshot, success=True)

    def _with_pods(self, nodes: tuple[WorkerNode, ...]) -> tuple[WorkerNode, ...]:
        """The group's pods as the scaler must see them.

        Ray's nodes of active pods (a deleted pod's raylet may still be shutting down: not a
        pod any more), published victims as ``victim``, and pods with no Ray node yet as
        ``pending`` at their group's full capacity, so a starting pod is never invisible and
        the scaler's floor (pods that are not victims) counts it.
        """
        victims = self._victims.victims()
        active = {p.name for p in self._pods.pods() if p.active}
        out = [
            dataclasses.replace(n, status=NodeStatus.VICTIM) if n.pod in victims else n
            for n in nodes
            if n.pod in active  # a deleted pod's raylet may still be shutting down
        ]
        seen = {n.pod for n in nodes}
        for pod in self._pods.pods():
            group = self.spec.group(pod.group)
            if pod.name in seen or group is None or not pod.active:
                continue
            status = NodeStatus.VICTIM if pod.name in victims else NodeStatus.PENDING
            out.append(
                WorkerNode(pod.name, pod.group, group.resources, group.resources, 0.0, status)
            )
        return tuple(sorted(out, key=lambda n: n.pod))

    def _export(self, snapshot: schema.ClusterSnapshot | None, success: bool) -> None:
        if snapshot is None:
            return
        self._collector.snapshot = dataclasses.replace(
            snapshot,
            success=success,
            snapshot_time_s=self._clock.now() if success else snapshot.snapshot_time_s,
        )

    def ready(self) -> bool:
        """The last poll of Ray succeeded."""
        return self._ok

    def victims(self) -> Mapping[str, str]:
        """Published victims: pod -> group."""
        return self._victims.victims()

    def pending_bundles(self) -> int:
        """Pending task bundles Ray reported at the last poll."""
        return self._pending

    def describe_nodes(self) -> str:
        """Ray worker nodes by state at the last poll, as one timeline line."""
        busy = len(self.busy_pods())
        by_status = {s: sum(1 for n in self._nodes if n.status is s) for s in NodeStatus}
        idle = by_status[NodeStatus.RUNNING] - busy
        return (
            f"pods: {len(self._nodes)} ({by_status[NodeStatus.PENDING]} starting, {busy} busy, "
            f"{idle} idle, {by_status[NodeStatus.DRAINING]} draining, "
            f"{by_status[NodeStatus.VICTIM]} drained victims)"
        )

    def busy_pods(self) -> set[str]:
        """Pods whose Ray node had resources in use at the last poll."""
        return {
            n.pod
            for n in self._nodes
            if n.status is not NodeStatus.PENDING and n.available != n.total
        }

    async def stop(self) -> None:
        """Stop serving ``/metrics``."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None


async def start_agent(
    settings: DemoSettings,
    gcs_address: str,
    env: Mapping[str, str],
    pods: DemoPods,
    clock: Clock,
) -> DemoAgent:
    """Build the agent, serve its ``/metrics``, wait until it reads Ray."""
    agent = DemoAgent(settings.cluster_spec(), gcs_address, env, pods, clock, settings.settle_s)
    agent.serve()
    while True:
        await agent.step()
        if agent.ready():
            return agent
        await clock.sleep(0.5)
