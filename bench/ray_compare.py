"""Ray's own autoscaler v2 scheduler on the same instance, for a side-by-side comparison.

Builds a ``ray.autoscaler.v2.scheduler.SchedulingRequest`` the way Ray's autoscaler does
(Ray 2.60 source): worker groups become ``NodeTypeConfig`` (min/max workers, resources);
existing pods become ``AutoscalerInstance`` (running: ``Instance.RAY_RUNNING`` with a
``NodeState`` carrying total and available resources; pending: ``Instance.ALLOCATED``, which
Ray schedules at the node type's full capacity); task bundles become ``ResourceRequestByCount``;
each placement group becomes one ``GangResourceRequest`` whose bundles carry the placement
constraint the GCS gives them (``GenPlacementConstraintForPlacementGroup``: STRICT_SPREAD an
anti-affinity and STRICT_PACK an affinity on the label ``_PG_<id>``, PACK and SPREAD none);
request_resources floors become one ``ClusterResourceConstraint``. Idle termination and the
launch-config check are off, so the reply is the scale-up decision only. ``max_num_nodes`` is
maxWorkers: Ray passes ``max_workers + 1`` and counts the head among the nodes; the request
here holds no head.

Ray is optional (the ``bench`` extra): ``available()`` says whether it can be imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import multiprocessing
import queue as queues
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from keda_ray_scaler.model import NodeStatus, PlanningInput, Resources, Strategy


@dataclass(frozen=True, slots=True)
class RayResult:
    """What Ray's scheduler decided for one instance."""

    new: Mapping[str, int]  # nodes to launch per worker group
    infeasible: int  # bundles Ray reports infeasible (tasks, gang bundles, constraint bundles)
    seconds: float  # time of ``ResourceDemandScheduler().schedule(request)`` alone

    @property
    def pods(self) -> int:
        """New nodes in all."""
        return sum(self.new.values())

    def cost(self, inp: PlanningInput) -> float:
        """Total cost of the new nodes, priced with the instance's group costs."""
        price = {g.name: g.cost for g in inp.cluster.worker_groups}
        return sum(price[name] * n for name, n in self.new.items())


def available() -> bool:
    """True when Ray's autoscaler v2 scheduler can be imported."""
    return importlib.util.find_spec("ray") is not None


def _floats(r: Resources) -> dict[str, float]:
    return {k: float(v) for k, v in r.to_float_dict().items()}


def build_request(inp: PlanningInput) -> Any:
    """The ``SchedulingRequest`` Ray's autoscaler would build for ``inp``."""
    from ray.autoscaler.v2.instance_manager.config import NodeTypeConfig
    from ray.autoscaler.v2.scheduler import SchedulingRequest
    from ray.autoscaler.v2.schema import AutoscalerInstance
    from ray.autoscaler.v2.utils import ResourceRequestUtil

    # Generated protobuf modules: imported as modules, their classes are untyped (Any).
    pb: Any = importlib.import_module("ray.core.generated.autoscaler_pb2")
    im_pb: Any = importlib.import_module("ray.core.generated.instance_manager_pb2")
    ClusterResourceConstraint = pb.ClusterResourceConstraint
    GangResourceRequest = pb.GangResourceRequest
    NodeState = pb.NodeState
    ResourceRequestByCount = pb.ResourceRequestByCount
    RayNodeStatus = pb.NodeStatus
    Instance = im_pb.Instance
    NodeKind = im_pb.NodeKind

    configs = {
        g.name: NodeTypeConfig(
            name=g.name,
            min_worker_nodes=g.min_replicas,
            max_worker_nodes=g.max_replicas,
            resources=_floats(g.resources),
        )
        for g in inp.cluster.worker_groups
    }
    instances = []
    for i, node in enumerate(inp.nodes):
        if node.status not in (NodeStatus.RUNNING, NodeStatus.PENDING):
            continue  # draining / victim: Ray no longer schedules onto them
        if node.status == NodeStatus.PENDING:
            im = Instance(
                instance_id=f"im-{i}",
                instance_type=node.group,
                status=Instance.ALLOCATED,
                node_kind=NodeKind.WORKER,
                cloud_instance_id=node.pod,
            )
            instances.append(AutoscalerInstance(im_instance=im, cloud_instance_id=node.pod))
            continue
        node_id = node.node_id or f"{i:056x}"
        im = Instance(
            instance_id=f"im-{i}",
            instance_type=node.group,
            status=Instance.RAY_RUNNING,
            node_kind=NodeKind.WORKER,
            node_id=node_id,
            cloud_instance_id=node.pod,
        )
        ray_node = NodeState(
            node_id=bytes.fromhex(node_id) if len(node_id) % 2 == 0 else node_id.encode(),
            instance_id=node.pod,
            ray_node_type_name=node.group,
            total_resources=_floats(node.total),
            available_resources=_floats(node.available),
            idle_duration_ms=int(node.idle_s * 1000),
            status=RayNodeStatus.RUNNING,
        )
        instances.append(
            AutoscalerInstance(im_instance=im, ray_node=ray_node, cloud_instance_id=node.pod)
        )

    demand = inp.demand
    make = ResourceRequestUtil.make
    requests = [
        ResourceRequestByCount(request=make(_floats(b.resources)), count=b.count)
        for b in demand.bundles
        if b.count > 0
    ]
    gangs = []
    kind = ResourceRequestUtil.PlacementConstraintType
    pg_index = 0
    for pg in demand.placement_groups:
        for _ in range(pg.count):
            pg_index += 1
            label = f"_PG_{pg_index:036x}"
            if pg.strategy == Strategy.STRICT_SPREAD:
                constraints = [(kind.ANTI_AFFINITY, label, "")]
            elif pg.strategy == Strategy.STRICT_PACK:
                constraints = [(kind.AFFINITY, label, "")]
            else:
                constraints = None
            gangs.append(
                GangResourceRequest(
                    requests=[make(_floats(r), constraints) for r in pg.bundles],
                    details=f"{label}:{pg.strategy.value}|PENDING",
                )
            )
    floors = []
    if demand.constraints:
        floors.append(
            ClusterResourceConstraint(
                resource_requests=[
                    ResourceRequestByCount(request=make(_floats(b.resources)), count=b.count)
                    for b in demand.constraints
                ]
            )
        )
    return SchedulingRequest(
        disable_launch_config_check=True,
        node_type_configs=configs,
        max_num_nodes=inp.cluster.max_workers,
        idle_timeout_s=None,
        resource_requests=requests,
        gang_resource_requests=gangs,
        cluster_resource_constraints=floors,
        current_instances=instances,
    )


def schedule(inp: PlanningInput) -> RayResult:
    """Run Ray's ``ResourceDemandScheduler`` on ``inp`` in this process."""
    from ray.autoscaler.v2.scheduler import ResourceDemandScheduler

    logging.getLogger("ray.autoscaler").setLevel(logging.WARNING)
    request = build_request(inp)
    scheduler = ResourceDemandScheduler()
    started = time.perf_counter()
    reply = scheduler.schedule(request)
    seconds = time.perf_counter() - started
    new = {g.name: 0 for g in inp.cluster.worker_groups}
    for launch in reply.to_launch:
        new[launch.instance_type] = new.get(launch.instance_type, 0) + launch.count
    infeasible = len(reply.infeasible_resource_requests)
    infeasible += sum(len(g.requests) for g in reply.infeasible_gang_resource_requests)
    infeasible += sum(
        r.count for c in reply.infeasible_cluster_resource_constraints for r in c.resource_requests
    )
    return RayResult(new=new, infeasible=infeasible, seconds=seconds)


def _child(fn: Callable[[PlanningInput], RayResult], inp: PlanningInput, queue: Any) -> None:
    queue.put(fn(inp))


def schedule_with_timeout(
    inp: PlanningInput,
    timeout_s: float,
    fn: Callable[[PlanningInput], RayResult] = schedule,
) -> RayResult | None:
    """``fn`` (v2's ``schedule``) in a forked child; ``None`` if it takes over ``timeout_s``.

    The child is stopped by its own PID when it runs over.
    """
    ctx = multiprocessing.get_context("fork")
    results: Any = ctx.Queue()
    child = ctx.Process(target=_child, args=(fn, inp, results), daemon=True)
    child.start()
    try:
        result: RayResult | None = results.get(timeout=timeout_s)
    except queues.Empty:  # the child ran over its time, or died
        result = None
    finally:
        if child.is_alive():
            child.terminate()
        child.join(5)
    return result
