"""One worker group's scale decision in a KubeRay ``RayCluster``, and its JSON patch; pure.

:func:`decide` is the KubeRay half of "how a decision is applied": it turns a
``RayWorkerGroup``'s ``spec.replicas`` (set by KEDA's HPA through ``/scale``) into the group's
new ``replicas`` and ``scaleStrategy.workersToDelete``. KubeRay's ``reconcilePods`` always
deletes the pods named in ``workersToDelete`` and, when the group still has more pods than
``replicas`` and in-tree autoscaling is off, deletes others at random; so ``replicas`` is only
ever lowered by the number of drained victims named in the same patch.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from keda_ray_scaler.model import INT32_MAX

#: Ray's default when ``replicas`` is absent (``node_provider._worker_group_replicas``).
DEFAULT_REPLICAS = 1


@dataclass(frozen=True, slots=True)
class GroupState:
    """One worker group of a RayCluster as read (``index`` into ``workerGroupSpecs``)."""

    name: str
    index: int
    replicas: int
    min_replicas: int
    max_replicas: int
    workers_to_delete: tuple[str, ...] = ()


def group_state(raycluster: Mapping[str, Any], group: str) -> GroupState | None:
    """The named worker group's scaling fields, or None when the RayCluster has no such group."""
    for i, g in enumerate((raycluster.get("spec") or {}).get("workerGroupSpecs") or ()):
        if g.get("groupName") == group:
            strategy = g.get("scaleStrategy") or {}
            return GroupState(
                name=group,
                index=i,
                replicas=int(g.get("replicas", DEFAULT_REPLICAS)),
                min_replicas=int(g.get("minReplicas") or 0),
                max_replicas=int(g.get("maxReplicas") if "maxReplicas" in g else INT32_MAX),
                workers_to_delete=tuple(strategy.get("workersToDelete") or ()),
            )
    return None


@dataclass(frozen=True, slots=True)
class Lead:
    """The replicas to carry into the RayCluster and why they differ from ``spec.replicas``
    (the HPA's, led by the agent's plan: :mod:`~keda_ray_scaler.agent.kuberay.scale_up_lead`,
    :mod:`~keda_ray_scaler.agent.kuberay.scale_down_lead`)."""

    replicas: int
    reason: str = ""  # "" when the plan asked nothing the HPA did not
    leads: bool = False  # the plan moved the replicas from the HPA's


class Action(enum.StrEnum):
    """What :func:`decide` asks for (a metric label and a log field)."""

    NONE = "none"  # replicas already as desired
    SCALE_UP = "scale_up"  # replicas raised (bounded by min/max)
    SCALE_DOWN = "scale_down"  # replicas lowered by exactly the victims named
    CLEAR = "clear"  # only processed workersToDelete entries removed
    WAIT_VICTIMS = "wait_victims"  # fewer wanted, but no drained victim to name
    WAIT_OPERATOR = "wait_operator"  # KubeRay has not yet applied the last change
    SYNC = "sync"  # replicas written as KubeRay keeps them (clamped to min/max by an edit)


@dataclass(frozen=True, slots=True)
class ScaleDecision:
    """The group's new ``replicas`` and ``workersToDelete``, and why."""

    action: Action
    replicas: int
    workers_to_delete: tuple[str, ...]
    reason: str

    @property
    def changes(self) -> bool:
        """A patch is needed."""
        return self.action in (Action.SCALE_UP, Action.SCALE_DOWN, Action.CLEAR, Action.SYNC)


def kept_by_kuberay(state: GroupState) -> int:
    """The replicas KubeRay's operator keeps for the group: ``replicas`` clamped to min/max
    (``GetWorkerGroupDesiredReplicas``; min above max: max). It creates or deletes (at random)
    pods toward this number without writing it to ``replicas``."""
    if state.min_replicas > state.max_replicas:
        return state.max_replicas
    return min(max(state.replicas, state.min_replicas), state.max_replicas)


def decide(
    state: GroupState, desired: int, pods: Sequence[str], victims: Sequence[str]
) -> ScaleDecision:
    """The change that brings ``state`` toward ``desired`` replicas; pure.

    ``pods`` are the group's active pods (a synced cache); ``victims`` the group's published
    victims (drained by Ray, confirmed). The group's replicas are what KubeRay keeps
    (:func:`kept_by_kuberay`: an edited min/max moves them without writing ``replicas``).
    Rules, in order:

    1. a name in ``workersToDelete`` that is still an active pod: KubeRay has not processed the
       list yet; wait (Ray's ``safe_to_scale``);
    2. more pods than the replicas: KubeRay is about to delete some at random; wait;
    3. ``desired`` (clamped to min/max) above the replicas: raise ``replicas``;
    4. below: lower ``replicas`` by the number of victims it can name (at most the difference),
       naming them; with no victim, change nothing but 6;
    5. processed ``workersToDelete`` entries are cleared with any change (or alone);
    6. ``replicas`` unlike the replicas KubeRay keeps (a min raised above it, a max lowered
       below it): written as kept, so that a later edit of min or max never makes KubeRay
       delete pods at random toward a stale ``replicas``.
    """
    kept = kept_by_kuberay(state)
    if kept != state.replicas:
        state = replace(state, replicas=kept)
        synced = ScaleDecision(Action.SYNC, kept, (), f"replicas kept by KubeRay: {kept}")
    else:
        synced = None
    decision = _decide(state, desired, pods, victims)
    if synced is not None and not decision.changes and decision.action != Action.WAIT_OPERATOR:
        return synced
    return decision


def _decide(
    state: GroupState, desired: int, pods: Sequence[str], victims: Sequence[str]
) -> ScaleDecision:
    active = set(pods)
    pending = [p for p in state.workers_to_delete if p in active]
    if pending:
        return ScaleDecision(
            Action.WAIT_OPERATOR,
            state.replicas,
            state.workers_to_delete,
            f"KubeRay has not deleted {pending} yet",
        )
    if len(active) > state.replicas:
        return ScaleDecision(
            Action.WAIT_OPERATOR,
            state.replicas,
            state.workers_to_delete,
            f"{len(active)} pods above replicas {state.replicas}",
        )
    target = min(max(desired, state.min_replicas), state.max_replicas)
    if target > state.replicas:
        return ScaleDecision(
            Action.SCALE_UP,
            target,
            (),
            f"replicas {state.replicas} -> {target} (desired {desired})",
        )
    if target < state.replicas:
        named = sorted(v for v in set(victims) if v in active)[: state.replicas - target]
        if named:
            new = state.replicas - len(named)
            return ScaleDecision(
                Action.SCALE_DOWN, new, tuple(named), f"replicas {state.replicas} -> {new}"
            )
        if state.workers_to_delete:
            return ScaleDecision(Action.CLEAR, state.replicas, (), "no drained victim to name")
        return ScaleDecision(
            Action.WAIT_VICTIMS,
            state.replicas,
            (),
            f"desired {target} < replicas {state.replicas}, no drained victim to name",
        )
    if state.workers_to_delete:
        return ScaleDecision(Action.CLEAR, state.replicas, (), "workersToDelete processed")
    return ScaleDecision(Action.NONE, state.replicas, (), "replicas as desired")


def scale_patch(resource_version: str, state: GroupState, decision: ScaleDecision) -> list[Any]:
    """One JSON patch: the RayCluster's version and the group's name at its index are
    preconditions (409/422 when either changed), then ``replicas`` and ``workersToDelete``."""
    base = f"/spec/workerGroupSpecs/{state.index}"
    return [
        {"op": "test", "path": f"{base}/groupName", "value": state.name},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": resource_version},
        {"op": "add", "path": f"{base}/replicas", "value": decision.replicas},
        {
            "op": "add",
            "path": f"{base}/scaleStrategy",
            "value": {"workersToDelete": list(decision.workers_to_delete)},
        },
    ]
