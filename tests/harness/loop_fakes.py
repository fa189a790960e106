"""Fakes for the poll loop's tests: a Ray reader with queued answers, a victim controller, a
look between polls.

:class:`FakeReader` returns the queued states (and raises a queued exception), :class:`FakeVictims`
records the plans it is stepped with, :class:`FakeWatch` answers the queued looks (then
:attr:`Look.SAME`) and notes when it was asked; :func:`ray_state` is one idle node with the given
demand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from keda_ray_scaler.agent.ray.ray_status import RayState
from keda_ray_scaler.agent.ray.status_watch import Look
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.model import Bundle, Demand, Resources, WorkerNode


def r(**amounts: float) -> Resources:
    """Resources.of shorthand."""
    return Resources.of(amounts)


class FakeReader:
    """Returns the queued states; an exception in the queue is raised."""

    def __init__(self, *states: RayState | Exception) -> None:
        self.states = list(states)

    async def read(self) -> RayState:
        item = self.states.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


class FakeVictims:
    """Records the plans; publishes ``after`` once stepped."""

    def __init__(self, after: Mapping[str, str]) -> None:
        self.plans: list[Plan] = []
        self.current: Mapping[str, str] = {}
        self.after = after

    def victims(self) -> Mapping[str, str]:
        return self.current

    def saw_in_ray(self, pods: frozenset[str]) -> None:
        self.in_ray = pods

    def due_at(self) -> float | None:
        return None

    async def step(self, plan: Plan) -> Sequence[object]:
        self.plans.append(plan)
        self.current = self.after
        return ()


def ray_state(*bundles: Bundle) -> RayState:
    """A RayState with one idle node."""
    node = WorkerNode("ray-cpu-a", "cpu", r(CPU=10), r(CPU=10), idle_s=120, node_id="ab" * 28)
    return RayState(Demand(bundles=bundles), (node,))


class FakeWatch:
    """Answers the queued looks (an exception is raised), then :attr:`Look.SAME`; ``at`` holds
    the clock's time of each look."""

    def __init__(self, clock: Clock, *looks: Look | Exception, every_s: float = 0.5) -> None:
        self.clock = clock
        self.looks = list(looks)
        self.every_s = every_s
        self.at: list[float] = []

    async def look(self) -> Look:
        self.at.append(self.clock.now())
        item = self.looks.pop(0) if self.looks else Look.SAME
        if isinstance(item, Exception):
            raise item
        return item
