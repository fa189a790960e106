"""What the poll loop drives besides Ray: each part a protocol with an "off" implementation, so
the loop calls every part at every poll and an absent part is one that does nothing.

- :class:`Victims`: the victim protocol on a poll's input (:class:`PlannedVictims`: the
  planner's plan handed to ``victims.VictimController``); off: :class:`NoVictims`.
- :data:`PodList`: the pods as the loop reads them (None while not synced); off: :func:`no_pods`.
- :class:`JoinStep`: the pods against Ray's nodes (``joining.JoinTracker``); off: :class:`NoJoins`.
- :class:`Planned`: gets every published input (KubeRay mode's leads, ``PlannedTargets``); off:
  :class:`NoPlanned`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from keda_ray_scaler.agent.joining.join_tracker import JoinView
from keda_ray_scaler.agent.joining.joins import PodEntry
from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.model import PlanningInput

#: The planner the victim protocol steps on (:func:`keda_ray_scaler.planner.plan`).
Planner = Callable[[PlanningInput], Plan]

#: The pods as the loop reads them, with their way into Ray; None while the source is not synced.
PodList = Callable[[], Sequence[PodEntry] | None]


class VictimStep(Protocol):
    """The part of ``victims.VictimController`` the loop drives."""

    def victims(self) -> Mapping[str, str]: ...

    def saw_in_ray(self, pods: frozenset[str]) -> None: ...

    async def step(self, plan: Plan) -> Sequence[object]: ...


class Victims(Protocol):
    """Safe scale-down as the loop drives it: the published victims (pod -> worker group), the
    pods that are live Ray nodes at this poll, and one step on the poll's input."""

    def victims(self) -> Mapping[str, str]: ...

    def saw_in_ray(self, pods: frozenset[str]) -> None: ...

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
    """Gets every input the loop publishes (at the poll's time), and a failed poll's clear."""

    def observe(self, inp: PlanningInput, at: float) -> None: ...

    def clear(self) -> None: ...


class NoPlanned:
    """No lead: the published inputs go nowhere."""

    def observe(self, inp: PlanningInput, at: float) -> None:
        """Nothing kept."""

    def clear(self) -> None:
        """Nothing to clear."""


#: The parts that are off, shared (none holds state).
NO_VICTIMS, NO_JOINS, NO_PLANNED = NoVictims(), NoJoins(), NoPlanned()
