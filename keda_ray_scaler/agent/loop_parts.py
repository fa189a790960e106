"""What the poll loop drives besides its Ray read: each part a protocol with an "off"
implementation, so the loop calls every part and an absent part is one that does nothing.

- :class:`Victims`: the victim protocol on a poll's input (:class:`PlannedVictims`: the
  planner's plan handed to ``victims.VictimController``); off: :class:`NoVictims`.
- :data:`PodList`: the pods as the loop reads them (None while not synced); off: :func:`no_pods`.
- :class:`JoinStep`: the pods against Ray's nodes (``joining.JoinTracker``); off: :class:`NoJoins`.
- :class:`Planned`: gets every published input (KubeRay mode's leads, ``PlannedTargets``); off:
  :class:`NoPlanned`.
- :class:`Watch`: a cheap look at Ray between polls (``ray.status_watch.StatusWatch``); off:
  :class:`NoWatch`. :func:`until_next_poll` is the wait between two polls, with or without one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

import structlog

from keda_ray_scaler.agent.joining.join_tracker import JoinView
from keda_ray_scaler.agent.joining.joins import PodEntry
from keda_ray_scaler.agent.ray.status_watch import Look
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.model import PlanningInput

log = structlog.get_logger(__name__)

#: The planner the victim protocol steps on (:func:`keda_ray_scaler.planner.plan`).
Planner = Callable[[PlanningInput], Plan]

#: The pods as the loop reads them, with their way into Ray; None while the source is not synced.
PodList = Callable[[], Sequence[PodEntry] | None]


class VictimStep(Protocol):
    """The part of ``victims.VictimController`` the loop drives."""

    def victims(self) -> Mapping[str, str]: ...

    def saw_in_ray(self, pods: frozenset[str]) -> None: ...

    def due_at(self) -> float | None: ...

    async def step(self, plan: Plan) -> Sequence[object]: ...


class Victims(Protocol):
    """Safe scale-down as the loop drives it: the published victims (pod -> worker group), the
    pods that are live Ray nodes at this poll, one step on the poll's input, and when a pod the
    last step refused for its idle time alone reaches the timeout (``due_at``)."""

    def victims(self) -> Mapping[str, str]: ...

    def saw_in_ray(self, pods: frozenset[str]) -> None: ...

    def due_at(self) -> float | None: ...

    async def step(self, inp: PlanningInput) -> None: ...


@dataclass(frozen=True, slots=True)
class PlannedVictims:
    """The victim controller, stepped on the planner's plan of each input it is given."""

    controller: VictimStep
    planner: Planner

    def victims(self) -> Mapping[str, str]:
        """The controller's published victims."""
        return self.controller.victims()

    def saw_in_ray(self, pods: frozenset[str]) -> None:
        """Tells the controller which pods are live Ray nodes now."""
        self.controller.saw_in_ray(pods)

    def due_at(self) -> float | None:
        """The controller's."""
        return self.controller.due_at()

    async def step(self, inp: PlanningInput) -> None:
        """Plans ``inp`` and steps the controller on the plan."""
        await self.controller.step(self.planner(inp))


class NoVictims:
    """Scale-down off: no victims, nothing planned, nothing stepped."""

    def victims(self) -> Mapping[str, str]:
        """None published."""
        return {}

    def saw_in_ray(self, pods: frozenset[str]) -> None:
        """Nothing to remember."""

    def due_at(self) -> float | None:
        """Nothing refused."""
        return None

    async def step(self, inp: PlanningInput) -> None:
        """Nothing to do."""


def no_pods() -> Sequence[PodEntry] | None:
    """No pod source: never a synced listing."""
    return None


class JoinStep(Protocol):
    """The pods against Ray's nodes at one poll (``joining.JoinTracker.observe``): the failing
    pods and the groups' launch limits."""

    def observe(
        self,
        now_s: float,
        pods: Sequence[PodEntry] | None,
        in_ray: set[str],
        dead: set[str],
        victims: Mapping[str, str],
    ) -> JoinView: ...


class NoJoins:
    """No join tracking: no pod failing, no group limited."""

    def observe(
        self,
        now_s: float,
        pods: Sequence[PodEntry] | None,
        in_ray: set[str],
        dead: set[str],
        victims: Mapping[str, str],
    ) -> JoinView:
        """The empty view."""
        return JoinView({}, ())


class Planned(Protocol):
    """Gets every input the loop publishes (at the poll's time), and a failed poll's clear;
    ``rising()``: a rise is held until a second poll plans it too (the loop polls at its next
    look then, not at the next change)."""

    def observe(self, inp: PlanningInput, at: float) -> None: ...

    def clear(self) -> None: ...

    def rising(self) -> bool: ...


class NoPlanned:
    """No lead: the published inputs go nowhere."""

    def observe(self, inp: PlanningInput, at: float) -> None:
        """Nothing kept."""

    def clear(self) -> None:
        """Nothing to clear."""

    def rising(self) -> bool:
        """Nothing held."""
        return False


class Watch(Protocol):
    """A look at Ray between polls, ``every_s`` apart (0: none): whether a poll would read
    anything new (:class:`~keda_ray_scaler.agent.ray.status_watch.Look`)."""

    @property
    def every_s(self) -> float: ...

    async def look(self) -> Look: ...


class NoWatch:
    """No look: the loop sleeps from one poll to the next."""

    every_s = 0.0

    async def look(self) -> Look:
        """Never asked (``every_s`` is 0); unknown if it were."""
        return Look.FAILED


class Wake(Enum):
    """Why the loop polls again (:func:`until_next_poll`)."""

    INTERVAL = "interval"  # the poll interval passed: the floor
    CHANGED = "changed"  # a look saw Ray say something new
    FAILED = "failed"  # a look could not read Ray: the poll finds out (and marks the data stale)
    CONFIRM = "confirm"  # the lead holds a rise for a second poll
    IDLE = "idle"  # a node reached its group's idle timeout (``next_idle_timeout``)


#: How long after a node's idle timeout the poll that may remove it runs: the victim step reads
#: Ray again and takes the node only once Ray's own idle time is past the timeout.
IDLE_WAKE_AFTER_S = 0.5


async def until_next_poll(
    clock: Clock,
    interval_s: float,
    watch: Watch,
    *,
    watched: bool,
    rising: Callable[[], bool],
    idle_due: float | None = None,
) -> Wake:
    """Wait ``interval_s``, or until :data:`IDLE_WAKE_AFTER_S` after ``idle_due`` (when a node
    reaches its idle timeout) when that comes first; with a ``watch``, after a ``watched``
    (successful) poll, look every ``watch.every_s`` and end the wait at the first look that is
    not :attr:`Look.SAME`, or at once when the lead holds a rise (``rising()``). A look
    publishes nothing: the data's time is a poll's. After a failed poll nothing is looked at
    and no idle time is trusted: the next poll is the interval's."""
    every_s = watch.every_s if watched else 0.0
    now = clock.now()
    due, woke = now + interval_s, Wake.INTERVAL
    if watched and idle_due is not None and idle_due + IDLE_WAKE_AFTER_S < due:
        due, woke = max(idle_due + IDLE_WAKE_AFTER_S, now), Wake.IDLE
    if every_s <= 0:
        await clock.sleep(due - now)
        return woke
    while due - clock.now() > every_s:
        await clock.sleep(every_s)
        if rising():
            return Wake.CONFIRM
        try:
            look = await watch.look()
        except Exception:  # a bug in a look: the poll reads Ray itself
            log.exception("look between polls crashed")
            return Wake.FAILED
        if look is not Look.SAME:
            return Wake.CHANGED if look is Look.CHANGED else Wake.FAILED
    await clock.sleep(max(due - clock.now(), 0.0))
    return woke


#: The parts that are off, shared (none holds state).
NO_VICTIMS, NO_JOINS, NO_PLANNED, NO_WATCH = NoVictims(), NoJoins(), NoPlanned(), NoWatch()
