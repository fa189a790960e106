"""KubeRay mode's scale-up lead: the agent's own plan raises a group at once, ahead of the HPA.

(Its mirror for drained victims is :mod:`~keda_ray_scaler.agent.kuberay.scale_down_lead`.)

Our path from demand to pods runs agent poll -> Prometheus scrape -> scaler refresh -> the HPA's
sync (15 s by default, not settable on managed Kubernetes) -> the RayWorkerGroup -> the applier
(``docs/concepts/latency.md``). The agent plans the very input it exports, with the planner the
scaler runs, so it knows the target the HPA will ask for one to four hops later. With the lead,
the applier carries ``max(spec.replicas, planned target)`` into the RayCluster:

- **scale-up here**: this lead only raises; a lower plan is the scale-down lead's, which
  lowers only by drained victims the applier names
  (:mod:`~keda_ray_scaler.agent.kuberay.scale_down_lead`,
  :mod:`~keda_ray_scaler.agent.kuberay.raycluster_scale`);
- **the ScaledObject's word first**: no lead for a RayWorkerGroup that no ScaledObject targets,
  nor while one that does is paused (``autoscaling.keda.sh/paused: "true"``,
  ``paused-replicas``, ``paused-scale-out: "true"``); the lead is capped by its
  ``maxReplicaCount`` and by one period of its HPA ``scaleUp`` policies from the current
  replicas (:func:`scale_up_limit`), as the HPA would cap itself (all read from the
  :class:`~keda_ray_scaler.agent.kuberay.scaledobject.ScaledObject` view);
- **fresh plans only**: a plan older than ``max_age_s`` (a stalled or failing poll) leads
  nothing; a failed poll clears the plans.

It acts on each poll the loop makes, and the loop polls as soon as a look between polls sees
Ray's demand or nodes change (:func:`~keda_ray_scaler.agent.loop_parts.until_next_poll`): new
demand leads within about ``--watch-interval`` plus Ray's own report delay, not ``--interval``.

When the HPA then syncs it asks the same number (the same planner on the same export) and the
applier has nothing left to do; should it ask fewer, the pods stay until Ray drains them idle.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence

from keda_ray_scaler.agent.kuberay.raycluster_scale import Lead
from keda_ray_scaler.agent.kuberay.scaledobject import HpaPolicy, ScaledObject, SelectPolicy
from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.model import NodeStatus, PlanningInput


def scale_up_limit(current: int, scaled_object: ScaledObject) -> int:
    """The most replicas the ScaledObject's HPA would allow in one period from ``current``
    (``selectPolicy`` Max by default, Min, or Disabled), as the HPA's
    ``calculateScaleUpLimitWithScalingRules`` does; from 0 it counts from 1 (KEDA activates)."""
    up = scaled_object.scale_up
    if up.select_policy is SelectPolicy.DISABLED:
        return current
    base = max(current, 1)
    limits = [_policy_limit(base, p) for p in up.policies]
    return min(limits) if up.select_policy is SelectPolicy.MIN else max(limits)


def _policy_limit(base: int, policy: HpaPolicy) -> int:
    if policy.percent:
        return math.ceil(base * (1 + policy.value / 100))
    return base + policy.value


def lead_replicas(
    desired: int, planned: int | None, scaled_objects: Sequence[ScaledObject]
) -> Lead:
    """``desired`` (the HPA's ``spec.replicas``) raised to ``planned`` where the ScaledObjects
    targeting the group allow it (module doc); pure."""
    if planned is None or planned <= desired:
        return Lead(desired)
    if not scaled_objects:
        return Lead(desired, "held: no ScaledObject targets the group")
    limit = planned
    for so in scaled_objects:
        if held := so.holds_scale_out():
            return Lead(desired, f"held: {held}")
        limit = min(limit, so.max_replicas, scale_up_limit(desired, so))
    if limit <= desired:
        return Lead(desired, f"held: the ScaledObject caps {planned} at {desired}")
    return Lead(limit, f"planned {planned}, the HPA asks {desired}", leads=True)


class PlannedTargets:
    """The targets of the agent's latest published input, by group, for the applier's lead.

    :meth:`observe` plans each published input (the loop calls it); a target that rose sets
    ``wake`` so the applier runs a round at once (:func:`~keda_ray_scaler.agent.modes.run_applier`).
    """

    def __init__(
        self,
        planner: Callable[[PlanningInput], Plan],
        *,
        max_age_s: float,
        wake: asyncio.Event | None = None,
    ) -> None:
        self._planner = planner
        self._max_age_s = max_age_s
        self.wake = wake if wake is not None else asyncio.Event()
        self._targets: dict[str, int] = {}
        self._zero_since: dict[str, float] = {}
        self._planned: dict[str, int] = {}  # this poll's plan, as planned
        self._previous: dict[str, int] = {}  # the previous poll's
        self._at = -math.inf

    def observe(self, inp: PlanningInput, at: float) -> None:
        """Plan ``inp`` (published at ``at``); wake the applier when a group's target moved.

        While a group has pods not yet in Ray, a rise must show on two polls in a row: as a
        node joins, its free capacity and the tasks about to land on it can be read one poll
        apart, and a lead acts on a single plan (seen on the busy real node: an 11th pod for
        10 needed). A republish within the same poll (newly confirmed victims) is no second
        poll."""
        planned = {g: gp.target for g, gp in self._planner(inp).groups.items()}
        if at != self._at:
            self._previous = self._planned
        self._planned = planned
        joining = {n.group for n in inp.nodes if n.status is NodeStatus.PENDING}
        targets = {
            g: min(t, self._previous.get(g, t)) if g in joining else t for g, t in planned.items()
        }
        if any(t != self._targets.get(g, 0) for g, t in targets.items()):
            self.wake.set()
        self._zero_since = {g: self._zero_since.get(g, at) for g, t in targets.items() if t == 0}
        self._targets, self._at = targets, at

    def rising(self) -> bool:
        """Whether a rise waits for a second poll (a group with pods joining planned above its
        target): the loop then polls again at its next look, so a rise that holds leads one
        look later (``--watch-interval``), not at the next change or ``--interval``."""
        return any(t > self._targets.get(g, 0) for g, t in self._planned.items())

    def clear(self) -> None:
        """A failed poll: nothing leads until the next success."""
        self._targets, self._zero_since, self._at = {}, {}, -math.inf
        self._planned, self._previous = {}, {}

    def zero_for(self, group: str, now: float) -> float:
        """How long the group's plans have asked zero in a row (0 when the last did not)."""
        since = self._zero_since.get(group)
        return 0.0 if since is None else max(now - since, 0.0)

    def get(self, group: str, now: float) -> int | None:
        """The group's planned target if the plan is fresh, else None."""
        if now - self._at > self._max_age_s:
            return None
        return self._targets.get(group)
