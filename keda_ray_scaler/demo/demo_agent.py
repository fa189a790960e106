"""The agent, in-process, for the demo: the real agent loop on the demo's in-memory pods.

:class:`DemoAgent` is wired by the CLI's own builder (``agent/builder.py``): the Ray reader and
drainer on one GCS connection, the poll loop, the join tracker, the victim controller and the
``/metrics`` exporter, with :class:`~keda_ray_scaler.demo.pods.DemoPods` as the pod source in
place of the Kubernetes pod cache. One :meth:`DemoAgent.step` is one poll. Its HTTP port is the
CLI agent's (``agent/http/metrics_server.py``): ``/metrics`` and ``/healthz``, and the demo waits on
``/healthz`` as a kubelet's readiness probe would, so the endpoint the manifests probe is the one
the demo exercises.
"""

from __future__ import annotations

import asyncio
import dataclasses
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from keda_ray_scaler.agent.builder import build_agent
from keda_ray_scaler.agent.http.agent_health import (
    DEFAULT_INTERVALS,
    Health,
    HealthProbe,
    max_age_s,
)
from keda_ray_scaler.agent.http.metrics_server import HEALTH_PATH, start_metrics_server
from keda_ray_scaler.agent.loop import LoopSettings
from keda_ray_scaler.agent.ray.demand_filter import DEFAULT_WINDOW_S
from keda_ray_scaler.agent.ray.ray_state import DemandRead, RayReader
from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.agent.settings import AgentSettings
from keda_ray_scaler.agent.victims.marks import VictimSettings
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.demo.pods import DemoPods
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.model import ClusterSpec, NodeStatus, WorkerNode


class ActivePodsReader:
    """Ray's state without the nodes of pods that are gone or being deleted.

    A deleted pod's raylet can stay registered in Ray for its termination grace period; it is
    no pod of the group any more, and counting it would keep the scaler's floor one pod high
    (the HPA then creates a replacement). The real agent should apply the same filter from its
    pod cache (reported to the lead).
    """

    def __init__(self, reader: RayReader, pods: DemoPods) -> None:
        self._reader = reader
        self._pods = pods

    async def read(self) -> RayState:
        """Ray's state, nodes limited to active pods."""
        state = await self._reader.read()
        active = {p.name for p in self._pods.pods() if p.active}
        nodes = tuple(n for n in state.nodes if not n.group or n.pod in active)
        return dataclasses.replace(state, nodes=nodes)


#: The demo agent's poll interval, seconds.
POLL_INTERVAL_S = 1.0


class DemoAgent:
    """The agent's poll loop, one :meth:`step` at a time, with ``/metrics`` and ``/healthz`` on
    loopback."""

    def __init__(
        self,
        spec: ClusterSpec,
        gcs_address: str,
        env: Mapping[str, str],
        pods: DemoPods,
        clock: Clock,
        settle_s: float,
        demand_read: DemandRead = DemandRead.EXACT,
        use_window_s: float = DEFAULT_WINDOW_S,
    ) -> None:
        self.spec = spec
        self.gcs_address = gcs_address
        self.env = dict(env)
        self._clock = clock
        settings = AgentSettings(
            loop=LoopSettings(interval_s=POLL_INTERVAL_S, use_window_s=use_window_s),
            victims=VictimSettings(settle_s=settle_s, confirm_timeout_s=5.0),
            demand_read=demand_read,
        )
        self._gcs = GcsConnection(gcs_address)
        agent = build_agent(
            spec,
            self._gcs,
            clock,
            settings,
            pods=pods,
            wrap_reader=lambda reader: ActivePodsReader(reader, pods),
        )
        assert agent.victims is not None  # the demo always has pods
        self.registry = agent.registry
        self._victims = agent.victims
        self._loop = agent.loop
        # The CLI agent's default: stale after 3 polls without a success, at least 30 s.
        self._probe = HealthProbe(agent.loop, clock, max_age_s(DEFAULT_INTERVALS, POLL_INTERVAL_S))
        self.registered: set[str] = set()  # pods whose Ray node has been seen
        self._http: Any = None
        self.metrics_url = ""
        self.health_url = ""

    def serve(self) -> None:
        """Serve ``/metrics`` and ``/healthz`` on a free loopback port."""
        http = start_metrics_server(
            "127.0.0.1", 0, self.registry, self._probe, snapshot=self._loop.collector
        )
        self._http = http
        base = f"http://127.0.0.1:{http.server_port}"
        self.metrics_url = f"{base}/metrics"
        self.health_url = f"{base}{HEALTH_PATH}"

    async def started(self) -> DemoAgent:
        """This agent, serving its ``/metrics`` and ``/healthz``, once ``/healthz`` says Ray was
        read (``fresh``: ``starting`` also answers 200, but nothing is exported yet)."""
        self.serve()
        while True:
            await self.step()
            status, body = await self.healthz()
            if status == 200 and body.startswith(Health.FRESH.value):
                return self
            await self._clock.sleep(0.5)

    async def healthz(self) -> tuple[int, str]:
        """GET ``/healthz`` as a kubelet would: the status code and the one-line body."""

        def get() -> tuple[int, str]:
            try:
                with urllib.request.urlopen(self.health_url, timeout=5) as answer:
                    return answer.status, answer.read().decode()
            except urllib.error.HTTPError as exc:  # 503: stale
                with exc:
                    return exc.code, exc.read().decode()

        return await asyncio.to_thread(get)

    async def step(self) -> None:
        """One poll: read Ray, export, plan, run the victim protocol, export again."""
        snapshot = await self._loop.poll_once()
        self.registered |= {n.pod for n in snapshot.input.nodes if n.node_id}

    def _nodes(self) -> tuple[WorkerNode, ...]:
        return self._loop.snapshot.input.nodes

    def ready(self) -> bool:
        """The last poll of Ray succeeded."""
        return self._loop.snapshot.success

    def victims(self) -> Mapping[str, str]:
        """Published victims: pod -> group."""
        return self._victims.victims()

    def pending_bundles(self) -> int:
        """Pending task bundles Ray reported at the last poll."""
        return sum(b.count for b in self._loop.snapshot.input.demand.bundles)

    def busy_pods(self) -> set[str]:
        """Pods whose Ray node had resources in use at the last poll."""
        return {
            n.pod
            for n in self._nodes()
            if n.status in (NodeStatus.RUNNING, NodeStatus.DRAINING) and n.available != n.total
        }

    def pod_states(self) -> tuple[int, ...]:
        """The group's pods by state at the last poll, in ``progress.POD_STATES`` order."""
        nodes = self._nodes()
        busy = len(self.busy_pods())
        by_status = {s: sum(1 for n in nodes if n.status is s) for s in NodeStatus}
        idle = by_status[NodeStatus.RUNNING] - busy
        starting, draining = by_status[NodeStatus.PENDING], by_status[NodeStatus.DRAINING]
        return (starting, busy, idle, draining, by_status[NodeStatus.VICTIM])

    def describe_nodes(self) -> str:
        """The group's pods by state at the last poll, as one timeline line."""
        starting, busy, idle, draining, victims = self.pod_states()
        return (
            f"pods: {len(self._nodes())} ({starting} starting, {busy} busy, "
            f"{idle} idle, {draining} draining, {victims} drained victims)"
        )

    async def stop(self) -> None:
        """Stop serving ``/metrics`` and close the GCS channel."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        await self._gcs.close()
