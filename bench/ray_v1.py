"""Ray's autoscaler v1 scheduler on the same instance: the ``plan`` command's end-to-end yardstick.

Why v1 beside v2 (``bench.ray_compare``): on the free-capacity shape Ray 2.60's v2 scheduler
grows super-linearly (~105 s for 1,000 pods and 2,000 demands), so it is no yardstick for a
command that answers in a fraction of a second; v1's ``ResourceDemandScheduler`` (Ray's
``autoscaler/_private/resource_demand_scheduler.py``, still what ``ray up`` runs without v2)
bin-packs the same input in seconds. It is called as Ray's ``StandardAutoscaler`` calls it
(``get_nodes_to_launch``): worker groups become ``available_node_types`` (plus a head type with
no resources and no workers), each running pod a node whose IP maps to its available resources,
pending pods ``launching_nodes``, task bundles the demand vector, placement groups pending
``PlacementGroupTableData``, ``request_resources`` floors ``ensure_min_cluster_size``.
``max_workers`` is maxWorkers, or the sum of maxReplicas.

Ray is optional (the ``bench`` extra): callers check ``ray_compare.available()`` first.
"""

from __future__ import annotations

import importlib
import logging
import time
from typing import Any

from bench.ray_compare import RayResult
from keda_ray_scaler.model import NodeStatus, PlanningInput, Resources, Strategy

HEAD = "ray-head"
_KIND = "ray-node-type"  # ray.autoscaler.tags.TAG_RAY_NODE_KIND
_TYPE = "ray-user-node-type"  # TAG_RAY_USER_NODE_TYPE


def _floats(r: Resources) -> dict[str, float]:
    return {k: float(v) for k, v in r.to_float_dict().items()}


class _Provider:
    """The two calls v1's scheduler makes of a node provider: tags and IP of a node id."""

    def __init__(self, kinds: dict[str, tuple[str, str]]) -> None:
        self._kinds = kinds

    def node_tags(self, node_id: str) -> dict[str, str]:
        kind, node_type = self._kinds[node_id]
        return {_KIND: kind, _TYPE: node_type}

    def internal_ip(self, node_id: str) -> str:
        return node_id


def _placement_groups(inp: PlanningInput) -> list[Any]:
    gcs: Any = importlib.import_module("ray.core.generated.gcs_pb2")
    common: Any = importlib.import_module("ray.core.generated.common_pb2")
    strategy = {
        Strategy.PACK: common.PlacementStrategy.PACK,
        Strategy.SPREAD: common.PlacementStrategy.SPREAD,
        Strategy.STRICT_PACK: common.PlacementStrategy.STRICT_PACK,
        Strategy.STRICT_SPREAD: common.PlacementStrategy.STRICT_SPREAD,
    }
    out = []
    for pg in inp.demand.placement_groups:
        for _ in range(pg.count):
            data = gcs.PlacementGroupTableData(strategy=strategy[pg.strategy])
            for r in pg.bundles:
                data.bundles.add().unit_resources.update(_floats(r))
            out.append(data)
    return out


def schedule_v1(inp: PlanningInput) -> RayResult:
    """Ray's v1 ``ResourceDemandScheduler.get_nodes_to_launch`` on ``inp``, timed alone."""
    from ray.autoscaler._private.node_provider_availability_tracker import (
        NodeAvailabilitySummary,
    )
    from ray.autoscaler._private.resource_demand_scheduler import ResourceDemandScheduler

    logging.getLogger("ray.autoscaler").setLevel(logging.WARNING)
    groups = inp.cluster.worker_groups
    node_types: dict[str, dict[str, Any]] = {
        g.name: {
            "resources": _floats(g.resources),
            "min_workers": g.min_replicas,
            "max_workers": g.max_replicas,
            "node_config": {},
        }
        for g in groups
    }
    node_types[HEAD] = {"resources": {}, "min_workers": 0, "max_workers": 0, "node_config": {}}
    max_workers = inp.cluster.max_workers
    if max_workers is None:
        max_workers = sum(g.max_replicas for g in groups)
    kinds = {HEAD: ("head", HEAD)}
    unused: dict[str, dict[str, float]] = {HEAD: {}}
    totals: dict[str, dict[str, float]] = {HEAD: {}}
    launching: dict[str, int] = {}
    for node in inp.nodes:
        if node.status is NodeStatus.PENDING:
            launching[node.group] = launching.get(node.group, 0) + 1
        elif node.status is NodeStatus.RUNNING:
            kinds[node.pod] = ("worker", node.group)
            unused[node.pod] = _floats(node.available)
            totals[node.pod] = _floats(node.total)
    demands = [_floats(b.resources) for b in inp.demand.bundles for _ in range(b.count)]
    floors = [_floats(b.resources) for b in inp.demand.constraints for _ in range(b.count)]
    pgs = _placement_groups(inp)
    scheduler = ResourceDemandScheduler(
        _Provider(kinds), node_types, max_workers, HEAD, inp.cluster.upscaling_speed
    )
    started = time.perf_counter()
    to_launch, unfulfilled = scheduler.get_nodes_to_launch(
        list(kinds),
        launching,
        demands,
        unused,
        pgs,
        totals,
        floors,
        NodeAvailabilitySummary(node_availabilities={}),
    )
    seconds = time.perf_counter() - started
    new = {g.name: int(to_launch.get(g.name, 0)) for g in groups}
    return RayResult(new=new, infeasible=len(unfulfilled), seconds=seconds)
