"""Small builders for planner inputs: ``group(cpu=10, max=50)``, ``node(...)``, ``tasks(...)``.

Tests of every layer may import these. Amounts are plain numbers (``cpu=5``); memory in bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)

#: upscalingSpeed of KubeRay's default upscalingMode: no rate limit.
NO_SPEED_LIMIT = 1000.0


def res(cpu: float = 0, gpu: float = 0, memory: int = 0, **custom: float) -> Resources:
    """``Resources`` from keyword amounts: ``res(cpu=5)``, ``res(cpu=8, gpu=1, A100=1)``."""
    amounts: dict[str, float] = {"CPU": cpu, "GPU": gpu, "memory": memory}
    amounts.update(custom)
    return Resources.of({k: v for k, v in amounts.items() if v})


def group(
    name: str = "cpu",
    *,
    cpu: float = 10,
    gpu: float = 0,
    memory: int = 0,
    min: int = 0,
    max: int = 1000,
    idle: float = 60.0,
    cost: float = 1.0,
    **custom: float,
) -> WorkerGroup:
    """A worker group of pods with the given resources and bounds."""
    return WorkerGroup(
        name=name,
        resources=res(cpu=cpu, gpu=gpu, memory=memory, **custom),
        min_replicas=min,
        max_replicas=max,
        idle_timeout_s=idle,
        cost=cost,
    )


def cluster(
    *groups: WorkerGroup, max_workers: int | None = None, speed: float = NO_SPEED_LIMIT
) -> ClusterSpec:
    """A cluster spec named ``demo`` (default group: ``group()``)."""
    return ClusterSpec("demo", groups or (group(),), max_workers=max_workers, upscaling_speed=speed)


def node(
    pod: str,
    g: WorkerGroup,
    *,
    used: Mapping[str, float] | None = None,
    idle: float = 0.0,
    status: NodeStatus = NodeStatus.RUNNING,
) -> WorkerNode:
    """A pod of group ``g`` with ``used`` resources taken (``used={"CPU": 8}``)."""
    total = g.resources
    available = total - Resources.of(used or {})
    return WorkerNode(
        pod=pod, group=g.name, total=total, available=available, idle_s=idle, status=status
    )


def tasks(*pairs: tuple[Resources, int]) -> tuple[Bundle, ...]:
    """Task bundles from ``(resources, count)`` pairs."""
    return tuple(Bundle(r, n) for r, n in pairs)


def pg(strategy: Strategy, *bundles: Resources, count: int = 1) -> PlacementGroup:
    """``count`` identical placement groups."""
    return PlacementGroup(strategy, tuple(bundles), count)


def inp(
    spec: ClusterSpec,
    *,
    bundles: Iterable[tuple[Resources, int]] = (),
    pgs: Iterable[PlacementGroup] = (),
    constraints: Iterable[tuple[Resources, int]] = (),
    nodes: Iterable[WorkerNode] = (),
) -> PlanningInput:
    """A planning input."""
    return PlanningInput(
        spec,
        Demand(tasks(*bundles), tuple(pgs), tasks(*constraints)),
        tuple(nodes),
    )
