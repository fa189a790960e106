"""Choose: which of a group's removable pods the victim protocol may take now; pure.

Step one of three (``choose`` here, then ``confirm`` and ``apply`` in ``victims/controller.py``):
plain values in (the group's plan, its active pods, a fresh read of Ray's nodes, the published
victims), the pods to take and a typed :class:`~keda_ray_scaler.agent.victims.verdicts.Verdict` for
each pod not taken out. No I/O, no clock: testable without an API emulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from keda_ray_scaler.agent.pod import DELETION_COST, PodInfo
from keda_ray_scaler.agent.victims.marks import VictimSettings, owns_cost
from keda_ray_scaler.agent.victims.verdicts import Outcome, Verdict
from keda_ray_scaler.decisions import DecisionKind, GroupPlan
from keda_ray_scaler.model import NodeStatus, WorkerNode

#: why a Ready serve endpoint waits: Serve drains the proxy of a node without replicas, its
#: readiness probe then fails and the serve Service stops sending it requests (KubeRay 1.x)
SERVING_REASON = "a Ready serve Service endpoint: waits for its Serve proxy to drain"


@dataclass(frozen=True, slots=True)
class GroupView:
    """What :func:`choose` reads about one group.

    - ``pods``: the group's active pods by name; ``nodes``: Ray's nodes by pod, read afresh;
    - ``victims``: pods published as victims (any group); ``waiting``: this group's published
      victims whose pods still exist, when pods go by deletion cost (a new mark would tie);
    - ``frozen``: the group's scale-down is frozen; ``refusal``: the applier's refusal ("");
    - ``idle_timeout_s``: the group's idleTimeoutSeconds;
    - ``contested``: pods two live Ray nodes name, or whose live node is superseded
      (``RayView.contested``): never taken, even where the plan lists them failing.
    """

    plan: GroupPlan
    pods: Mapping[str, PodInfo]
    nodes: Mapping[str, WorkerNode]
    victims: frozenset[str] = frozenset()
    waiting: tuple[str, ...] = ()
    frozen: bool = False
    refusal: str = ""
    idle_timeout_s: float = 0.0
    contested: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Choice:
    """The pods to take, in the plan's order, and the verdicts on the others."""

    chosen: tuple[PodInfo, ...]
    verdicts: tuple[Verdict, ...]
    #: seconds until the first candidate refused for its idle time alone (Ray's, read afresh)
    #: reaches the timeout: the agent's idle-since time may be up to a second ahead of Ray's
    #: (``node_memo.IDLE_SINCE_TOLERANCE_S``), so the poll at the agent's timeout can be early
    due_in_s: float | None = None


def choose(view: GroupView, settings: VictimSettings) -> Choice:
    """The pods of ``view.plan.removable`` the protocol may take now (see the module doc).

    Pods above a cap or failing (``plan.over_cap``) are not protected by the idle timeout and
    may have no Ray node; any other candidate needs an idle Ray node, nothing in use. A
    contested pod (two live Ray nodes name it, or its live node is superseded) is never taken,
    over a cap or not: which node is its own is unknown, and a pod with a live node must never
    go as one without.
    """
    gp = view.plan
    name = gp.name
    candidates = [p for p in gp.removable if p not in view.victims]
    if not candidates:
        return Choice((), ())
    if view.frozen:
        return _all(name, candidates, Outcome.FROZEN, "scale-down frozen")
    if view.refusal:
        return _all(name, candidates, Outcome.REFUSED, view.refusal)
    if view.waiting:
        reason = f"published victims {list(view.waiting)} not deleted yet"
        return _all(name, candidates, Outcome.AWAITING_DELETION, reason)
    verdicts: list[Verdict] = []
    chosen: list[PodInfo] = []
    due: list[float] = []
    over_cap = set(gp.over_cap)
    for pod_name in candidates:
        pod, node = view.pods.get(pod_name), view.nodes.get(pod_name)
        # above a cap the idle timeout does not protect; a pod not yet in Ray has no node
        timeout_s = 0.0 if pod_name in over_cap else view.idle_timeout_s
        if pod is None:
            verdicts.append(Verdict(name, pod_name, Outcome.POD_GONE, "no active pod"))
        elif pod_name in view.contested:
            reason = "two live Ray nodes name the pod"
            verdicts.append(Verdict(name, pod_name, Outcome.TWO_RAY_NODES, reason))
        elif node is None and pod_name not in over_cap:
            verdicts.append(Verdict(name, pod_name, Outcome.NO_NODE, "no Ray node"))
        elif node is not None and (problem := idle_problem(node, timeout_s)):
            verdicts.append(Verdict(name, pod_name, Outcome.NOT_IDLE, problem))
            if node.status is NodeStatus.RUNNING and node.available == node.total:
                due.append(timeout_s - node.idle_s)
        elif pod.serve_endpoint and pod.ready:
            verdicts.append(Verdict(name, pod_name, Outcome.SERVING, SERVING_REASON))
        elif not owns_cost(pod, settings):
            cost = pod.annotations.get(DELETION_COST)
            verdicts.append(
                Verdict(name, pod_name, Outcome.NOT_OWNED, f"cost {cost} set by another")
            )
        else:
            chosen.append(pod)
    return Choice(tuple(chosen), tuple(verdicts), min(due, default=None))


def to_release(
    plan: GroupPlan, waiting: tuple[str, ...], launch_limit: int | None = None
) -> tuple[str, ...]:
    """The published victims a scale-down will never take, when pods go by deletion cost.

    The scaler reports a group's non-victims plus the new pods it wants. With as many new pods
    wanted as victims (or more), that target is not below the pods there are: the HPA changes
    nothing, the ReplicaSet deletes no victim and makes no new pod, and both wait for ever (seen
    on the real node: a start-up pod that could not be scheduled kept its group's one slot for
    341 s while the group's new pod waited). Those victims hold no Ray state (drained, or never
    a Ray node), so the agent deletes them and the ReplicaSet replaces them. While the target
    is below the pods (a scale-down under way), none: a replacement, pending, would rank before
    the victims and be the pod the scale-down takes. Each one released is a new pod made, so at
    most ``launch_limit`` (the group's back-off after pods that did not join: 0 while it waits,
    then 1; None when not backed off): a failing pod held by minReplicas is replaced once per
    back-off period, never in a create/delete loop (kuberay#865).
    """
    if not waiting or plan.target < plan.current:
        return ()
    return waiting if launch_limit is None else waiting[: max(0, launch_limit)]


def _all(group: str, pods: list[str], outcome: Outcome, reason: str) -> Choice:
    return Choice((), tuple(Verdict(group, p, outcome, reason) for p in pods))


def removal_reasons(gp: GroupPlan) -> dict[str, str]:
    """Pod -> why the plan removes it (``not_joined``, ``max_replicas``, ``idle_timeout``...)."""
    return {
        pod: d.reason.value for d in gp.decisions if d.kind is DecisionKind.REMOVE for pod in d.pods
    }


def idle_problem(node: WorkerNode, idle_timeout_s: float) -> str:
    """Why ``node`` is not an idle Ray node past ``idle_timeout_s`` ("" when it is)."""
    if node.status != NodeStatus.RUNNING:
        return f"node is {node.status}"
    if node.available != node.total:
        return f"node uses resources (available {node.available} of {node.total})"
    if node.idle_s < idle_timeout_s:
        return f"idle {node.idle_s:g}s < idleTimeoutSeconds {idle_timeout_s:g}"
    return ""
