"""``plan(PlanningInput) -> Plan``: replicas per worker group, removable pods, unplaceable demand.

Pure: no I/O, no clock, no environment. Shaped like Ray's autoscaler v2
(``ResourceDemandScheduler.schedule`` in ``ray/autoscaler/v2/scheduler.py``): a context built
once (:mod:`.context`; label selectors as label ids, :mod:`.admission`), pods above a
cap set aside (:mod:`.caps`), one function per rule
(:mod:`.rules`: minReplicas, request_resources, placement groups, tasks under upscalingSpeed),
a run of them (:mod:`.solve`), a search over runs under a work budget (:mod:`.search`),
the reasons for what stays unplaceable (:mod:`.unplaceable`), then idle removal and targets
(:mod:`.scale_down`).
"""

from __future__ import annotations

from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.model import PlanningInput
from keda_ray_scaler.packing.shapes import (
    GroupScorer,
    ShapeOrderer,
    Strategies,
    ray_scorer,
    scarcity_orderer,
)
from keda_ray_scaler.planner.context import build_context
from keda_ray_scaler.planner.placed import placements
from keda_ray_scaler.planner.scale_down import group_plans
from keda_ray_scaler.planner.search import SearchLimits, search, shape_count
from keda_ray_scaler.planner.unplaceable import merge

_SEARCH = SearchLimits()


def plan(
    inp: PlanningInput,
    *,
    scorer: GroupScorer = ray_scorer,
    orderer: ShapeOrderer = scarcity_orderer,
    lookahead: int = 8,
    lookahead_budget: int = 4000,
    limits: SearchLimits = _SEARCH,
) -> Plan:
    """Decide every worker group's replicas for ``inp``; see the module docstring.

    The lookahead's rollouts grow with distinct shapes x worker groups x ``lookahead``: when
    distinct shapes x groups exceed ``lookahead_budget / lookahead``, the lookahead shrinks to
    ``lookahead_budget // (shapes x groups)`` (at least 1). Measured on a 1,000-pod cluster
    with 10 groups: 200 shapes 337 -> 83 ms for +0.5 % of cost; 100 shapes 76 -> 45 ms, +0.2 %.
    """
    ctx = build_context(inp)
    if lookahead > 0:
        work = max(1, shape_count(ctx) * len(ctx.specs))
        lookahead = min(lookahead, max(1, lookahead_budget // work))
    best = search(ctx, Strategies(scorer, orderer, lookahead), limits)
    return Plan(
        groups=group_plans(ctx, best),
        unplaceable=merge(best.unplaceable),
        decisions=ctx.caps.cluster + ctx.ignored,
        placed=placements(ctx, best.placed),
    )
