"""Small builders for scaler tests: snapshots, worker groups, nodes, metadata."""

from __future__ import annotations

from collections.abc import Mapping

from keda_ray_scaler.decisions import GroupPlan, Plan
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    NodeStatus,
    PlanningInput,
    Resources,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.rpc.cluster_refresh import Planner
from keda_ray_scaler.schema import ClusterSnapshot

T0 = 1_000_000.0  # the scaler tests' start of time: FakeClock(T0) (unix seconds)


def group(name: str = "cpu", cpu: float = 10, min: int = 0, max: int = 100) -> WorkerGroup:
    """A worker group of ``cpu``-CPU pods."""
    return WorkerGroup(name, Resources.of(CPU=cpu), min_replicas=min, max_replicas=max)


def node(
    pod: str,
    group: str = "cpu",
    cpu: float = 10,
    *,
    status: NodeStatus = NodeStatus.RUNNING,
    idle_s: float = 0.0,
) -> WorkerNode:
    """A worker pod, fully available."""
    res = Resources.of(CPU=cpu)
    return WorkerNode(pod=pod, group=group, total=res, available=res, idle_s=idle_s, status=status)


def snapshot(
    cluster: str = "ray",
    groups: tuple[WorkerGroup, ...] = (),
    *,
    tasks: Mapping[float, int] | None = None,
    nodes: tuple[WorkerNode, ...] = (),
    t: float = T0,
    success: bool = True,
    upscaling_speed: float = 1000.0,  # KubeRay's upscalingMode Default
) -> ClusterSnapshot:
    """A cluster snapshot; ``tasks`` maps a CPU amount to a count of pending bundles."""
    demand = Demand(
        bundles=tuple(Bundle(Resources.of(CPU=c), n) for c, n in sorted((tasks or {}).items()))
    )
    spec = ClusterSpec(cluster, groups or (group(),), upscaling_speed=upscaling_speed)
    return ClusterSnapshot(PlanningInput(spec, demand, nodes), snapshot_time_s=t, success=success)


def meta(cluster: str = "ray", group: str = "cpu", **extra: str) -> dict[str, str]:
    """Trigger metadata."""
    return {"rayCluster": cluster, "workerGroup": group, **extra}


def fixed_planner(targets: Mapping[str, int]) -> Planner:
    """A planner that answers the given targets whatever the input (to test the safety rules)."""

    def planner(inp: PlanningInput) -> Plan:
        return Plan(
            groups={
                name: GroupPlan(name=name, target=t, desired=t, floor=0, current=0, busy=0, new=0)
                for name, t in targets.items()
            }
        )

    return planner


#: The namespace of the tests' Ray clusters and ScaledObjects (as in manifests/examples).
NS = "ray"


def cluster_ref(name: str = "ray", namespace: str = NS) -> ClusterRef:
    """Ray cluster ``name`` in ``namespace``."""
    return ClusterRef(namespace, name)
