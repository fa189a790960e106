"""Per-group answers: pods above a cap, idle removal, targets and their decisions; pure.

Like Ray v2's ``_enforce_idle_termination``: idle pods nothing needs become removable, longest
idle first, while the group keeps its minReplicas and gets no new pods. Pods above a cap
(:mod:`.caps`) go first, whatever their idle time. Draining and victim pods never receive
demand; victims are not counted toward ``desired``. The target is :func:`clamp_target`.
"""

from __future__ import annotations

from keda_ray_scaler.decisions import Decision, DecisionKind, GroupPlan, Why, clamp_target
from keda_ray_scaler.model import NodeStatus, PlanningInput, WorkerGroup, WorkerNode
from keda_ray_scaler.planner.context import Context
from keda_ray_scaler.planner.solve import RunResult

#: The order new-pod decisions are listed in.
STEPS = (Why.MIN_REPLICAS, Why.CONSTRAINTS, Why.PLACEMENT_GROUPS, Why.DEMAND, Why.TASKS)


def group_plans(ctx: Context, out: RunResult) -> dict[str, GroupPlan]:
    """Every group's plan from the chosen run."""
    by_group: list[list[WorkerNode]] = [[] for _ in ctx.groups]
    gidx = {g.name: i for i, g in enumerate(ctx.groups)}
    for node in ctx.inp.nodes:
        gi = gidx.get(node.group)
        if gi is not None and node.status is not NodeStatus.VICTIM:
            by_group[gi].append(node)
    return {g.name: group_plan(ctx, out, i, by_group[i]) for i, g in enumerate(ctx.groups)}


def group_plan(ctx: Context, out: RunResult, i: int, nodes: list[WorkerNode]) -> GroupPlan:
    """One group's plan."""
    g = ctx.groups[i]
    decisions = [
        Decision(DecisionKind.ADD, out.by_step[step][i], step, limit=_limit(step, g))
        for step in STEPS
        if out.by_step.get(step) and out.by_step[step][i]
    ]
    decisions += ctx.caps.decisions[i]
    leaving = ctx.caps.leaving[i]
    idle = idle_pods(g, nodes, out.busy, set(leaving), ctx.inp.now_s)
    room = max(0, ctx.staying[i] - g.min_replicas) if out.new[i] == 0 else 0
    removable = tuple(n.pod for n in idle[:room])
    if len(idle) > room:
        why = Why.MIN_REPLICAS if out.new[i] == 0 else Why.NEW_PODS
        decisions.append(Decision(DecisionKind.KEEP, len(idle) - room, why, limit=g.min_replicas))
    if removable:
        decisions.append(Decision(DecisionKind.REMOVE, len(removable), Why.IDLE_TIMEOUT, removable))
    kept = ctx.floor[i] - len(leaving) - len(removable)
    desired = clamp_target(kept + out.new[i], g, floor=0)
    target = clamp_target(kept + out.new[i], g, floor=ctx.floor[i])
    if target > desired:
        decisions.append(
            Decision(DecisionKind.HOLD, target - desired, Why.NOT_VICTIMS, limit=ctx.floor[i])
        )
    return GroupPlan(
        name=g.name,
        target=target,
        desired=desired,
        floor=ctx.floor[i],
        current=ctx.current[i],
        busy=sum(1 for n in nodes if n.pod in out.busy),
        new=out.new[i],
        removable=leaving + removable,
        over_cap=leaving,
        decisions=tuple(decisions),
    )


def unused(n: WorkerNode) -> bool:
    """A running Ray node with nothing in use: one whose idle time can reach the timeout."""
    return n.status is NodeStatus.RUNNING and n.available == n.total


def idle_pods(
    g: WorkerGroup, nodes: list[WorkerNode], busy: set[str], leaving: set[str], now_s: float
) -> list[WorkerNode]:
    """Running pods with nothing in use or needed, idle at least the timeout at ``now_s``,
    longest first."""
    idle = [
        (n.idle_at(now_s), n)
        for n in nodes
        if unused(n) and n.pod not in busy and n.pod not in leaving
    ]
    kept = sorted((t for t in idle if t[0] >= g.idle_timeout_s), key=lambda t: (-t[0], t[1].pod))
    return [n for _, n in kept]


def next_idle_timeout(inp: PlanningInput) -> float | None:
    """When the next node of ``inp`` reaches its group's idle timeout (unix seconds): the
    earliest among running nodes with nothing in use, idle now and not yet past the timeout at
    ``inp.now_s``; None when there is none. The agent polls then rather than at its next
    interval (up to ``--interval`` later), as :func:`idle_pods` decides on the poll's time."""
    timeouts = {g.name: g.idle_timeout_s for g in inp.cluster.worker_groups}
    due: float | None = None
    for n in inp.nodes:
        timeout_s = timeouts.get(n.group)
        if timeout_s is None or not unused(n):
            continue
        idle_s = n.idle_at(inp.now_s)
        if idle_s <= 0 or idle_s >= timeout_s:
            continue
        at = inp.now_s + timeout_s - idle_s
        due = at if due is None else min(due, at)
    return due


def _limit(step: Why, g: WorkerGroup) -> int | None:
    return g.min_replicas if step is Why.MIN_REPLICAS else None
