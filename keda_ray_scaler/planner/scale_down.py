"""Per-group answers: pods above a cap, idle removal, targets and their decisions; pure.

Like Ray v2's ``_enforce_idle_termination``: idle pods nothing needs become removable, longest
idle first, while the group keeps its minReplicas and gets no new pods; and, ours, pods that
have not joined Ray a whole idle timeout after their creation while nothing needs them
(:func:`idle_candidate`), before those. Pods above a cap
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
    unjoined = tuple(n.pod for n in idle[:room] if n.status is NodeStatus.PENDING)
    idled = tuple(n.pod for n in idle[:room] if n.status is not NodeStatus.PENDING)
    for why, pods in ((Why.UNJOINED_IDLE, unjoined), (Why.IDLE_TIMEOUT, idled)):
        if pods:
            decisions.append(Decision(DecisionKind.REMOVE, len(pods), why, pods))
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


def idle_pods(
    g: WorkerGroup, nodes: list[WorkerNode], busy: set[str], leaving: set[str], now_s: float
) -> list[WorkerNode]:
    """Pods nothing needs, idle at least the timeout at ``now_s``: running Ray nodes with
    nothing in use, and pods not yet Ray nodes (idle since their creation: they have done no
    work; :func:`idle_candidate`), those first (nothing to drain), then longest idle first."""
    idle = [
        (n.idle_at(now_s), n)
        for n in nodes
        if idle_candidate(n) and n.pod not in busy and n.pod not in leaving
    ]
    kept = [t for t in idle if t[0] >= g.idle_timeout_s]
    kept.sort(key=lambda t: (t[1].status is not NodeStatus.PENDING, -t[0], t[1].pod))
    return [n for _, n in kept]


def idle_candidate(n: WorkerNode) -> bool:
    """A pod whose idle time can remove it: a running Ray node with nothing in use, or a pod
    not yet a Ray node with an idle time (the agent gives it its creation as idle-since time).

    The second is ours, not Ray's: Ray v2 keeps a launched node nothing needs until it joins
    and idles out (or fails). A pod that has not joined Ray after a whole idle timeout while
    nothing needs it (seen on the bed: pods whose ``ray start`` timed out on a loaded node
    joined 100-140 s late, after the work was done) holds no Ray state and is removed at once,
    without a drain. While demand is pending such a pod takes it first (``context._pod_order``),
    so it is busy and kept.
    """
    if n.status is NodeStatus.PENDING:
        return n.idle_since_s > 0 or n.idle_s > 0
    return n.status is NodeStatus.RUNNING and n.available == n.total


def next_idle_timeout(inp: PlanningInput) -> float | None:
    """When the next node of ``inp`` reaches its group's idle timeout (unix seconds): the
    earliest among :func:`idle_candidate` nodes idle now and not yet past the timeout at
    ``inp.now_s``; None when there is none. The agent polls then rather than at its next
    interval (up to ``--interval`` later), as :func:`idle_pods` decides on the poll's time."""
    timeouts = {g.name: g.idle_timeout_s for g in inp.cluster.worker_groups}
    due: float | None = None
    for n in inp.nodes:
        timeout_s = timeouts.get(n.group)
        if timeout_s is None or not idle_candidate(n):
            continue
        idle_s = n.idle_at(inp.now_s)
        if idle_s <= 0 or idle_s >= timeout_s:
            continue
        at = inp.now_s + timeout_s - idle_s
        due = at if due is None else min(due, at)
    return due


def _limit(step: Why, g: WorkerGroup) -> int | None:
    return g.min_replicas if step is Why.MIN_REPLICAS else None
