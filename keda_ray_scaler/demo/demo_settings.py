"""What the local demo runs: :class:`DemoSettings`, its cluster, workload and timings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from keda_ray_scaler.agent.ray.demand_filter import DEFAULT_WINDOW_S
from keda_ray_scaler.agent.ray.ray_state import DemandRead
from keda_ray_scaler.model import ClusterSpec, Resources, WorkerGroup


@dataclass(frozen=True, slots=True)
class DemoSettings:
    """What the demo runs; the defaults are the documented demo (under 2 minutes).

    ``upscaling_speed`` 10 lets all 10 pods be pending at once (Ray's rule: at most
    ``max(5, speed * running)`` pending pods per group), so the first answer is already 10.
    """

    workdir: Path  # HOME, Ray's temp dir and logs (the caller creates and removes it)
    ray_bin: Path  # the ``ray`` executable of the environment
    python: Path  # the interpreter that runs the driver
    base_env: Mapping[str, str]  # environment the Ray processes start from
    cluster: str = "demo"
    group: str = "cpu"
    pod_cpus: int = 10
    max_replicas: int = 20
    idle_timeout_s: float = 10.0
    upscaling_speed: float = 10.0
    tasks: int = 20
    task_cpus: int = 5
    task_seconds: float = 8.0
    long_tasks: int = 0  # tasks that keep their pod busy after the others ended
    long_seconds: float = 30.0
    worker_start_delay_s: float = 0.0  # each worker process of the workload starts this late
    demand_read: DemandRead = DemandRead.EXACT  # the agent's task demand source (--demand-read)
    use_window_s: float = DEFAULT_WINDOW_S  # the agent's double-count window (--use-window)
    poll_interval_s: float = 1.0  # agent poll, scaler refresh and KEDA poll
    settle_s: float = 1.0  # the victim protocol's settling delay (5 s in production)
    #: HPA scaleDown.stabilizationWindowSeconds: longer than agent poll + scaler refresh, the
    #: time it takes a new pod to show in the scaler's view (the manifests use 60 s)
    scale_down_window_s: float = 5.0
    #: the demo fails when nothing it watches (demand, target, replicas, pods by state, tasks
    #: done) changed for this long: longer than the idle timeout and the longest task
    stall_s: float = 60.0
    deadline_s: float = 600.0  # a hard cap on the whole run, however it progresses

    def cluster_spec(self) -> ClusterSpec:
        """The demo's Ray cluster: one group of ``pod_cpus``-CPU pods."""
        group = WorkerGroup(
            self.group,
            Resources.of(CPU=self.pod_cpus),
            min_replicas=0,
            max_replicas=self.max_replicas,
            idle_timeout_s=self.idle_timeout_s,
        )
        return ClusterSpec(self.cluster, (group,), upscaling_speed=self.upscaling_speed)
