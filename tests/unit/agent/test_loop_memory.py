"""The poll loop's memory between polls (agent/loop_memory.py), stepped by pure functions, and
the "off" parts of agent/loop_parts.py."""

from __future__ import annotations

import asyncio

import pytest

from keda_ray_scaler.agent.loop_memory import Change, Observation, PollMemory, spec_seen, step
from keda_ray_scaler.agent.loop_parts import (
    NO_JOINS,
    NO_PLANNED,
    NO_VICTIMS,
    PlannedVictims,
    no_pods,
)
from keda_ray_scaler.agent.ray.task_load_read import Fallback
from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.model import ClusterSpec, PlanningInput

PODS = frozenset({"p-1", "p-2"})


def seen(
    pods: frozenset[str] | None = PODS,
    in_ray: frozenset[str] = PODS,
    fallback: Fallback | None = None,
    superseded: tuple[str, ...] = (),
) -> Observation:
    """One poll's read: by default both pods listed and in Ray, R1, nothing superseded."""
    return Observation(superseded, fallback, pods, in_ray)


# --- the worker groups' freshness -------------------------------------------------------------


@pytest.mark.parametrize(
    ("stale", "fresh", "changes"),
    [
        (False, True, frozenset()),
        (False, False, frozenset({Change.SPEC_STALE})),
        (True, False, frozenset()),
        (True, True, frozenset({Change.SPEC_FRESH})),
    ],
)
def test_a_change_of_freshness_either_way_is_one_change(
    stale: bool, fresh: bool, changes: frozenset[Change]
) -> None:
    """Stale after fresh, fresh after stale: one change; the same as before: none."""
    after, got = spec_seen(PollMemory(stale=stale), fresh)
    assert (after.stale, got) == (not fresh, changes)


def test_freshness_leaves_the_rest_of_the_memory_as_it_was() -> None:
    """Only ``stale`` moves."""
    before = PollMemory(False, ("n",), Fallback.RAYLET, PODS, frozenset({"p-1"}))
    after, _ = spec_seen(before, False)
    assert after == PollMemory(True, ("n",), Fallback.RAYLET, PODS, frozenset({"p-1"}))


# --- the task demand's fallback and the superseded nodes --------------------------------------


def test_a_fallback_is_a_change_once_per_reason_and_r1_again_is_one() -> None:
    """raylet, raylet, node_loads, R1, R1: changes on the first, third and fourth poll."""
    memory, changes = PollMemory(), []
    for fallback in (Fallback.RAYLET, Fallback.RAYLET, Fallback.NODE_LOADS, None, None):
        memory, got = step(memory, seen(fallback=fallback))
        changes.append(got)
    assert changes == [
        frozenset({Change.FELL_BACK}),
        frozenset(),
        frozenset({Change.FELL_BACK}),
        frozenset({Change.R1_AGAIN}),
        frozenset(),
    ]
    assert memory.fallback is None


def test_superseded_nodes_are_a_change_when_they_differ_and_are_some() -> None:
    """(a), (a), (a, b), (): a change on the first and third poll only."""
    memory, changes = PollMemory(), []
    for superseded in (("a",), ("a",), ("a", "b"), ()):
        memory, got = step(memory, seen(superseded=superseded))
        changes.append(Change.SUPERSEDED in got)
    assert changes == [True, False, True, False]
    assert memory.superseded == ()


# --- pods gone --------------------------------------------------------------------------------


def test_a_pod_that_left_the_listing_while_ray_reports_it_is_gone() -> None:
    """p-2 leaves the synced listing, its Ray node stays: gone; p-1 stays listed."""
    memory, _ = step(PollMemory(), seen())
    memory, changes = step(memory, seen(pods=frozenset({"p-1"})))
    assert (memory.gone, memory.known_pods, changes) == (
        frozenset({"p-2"}),
        frozenset({"p-1"}),
        frozenset(),
    )


def test_a_gone_pod_stops_being_gone_when_ray_drops_it_or_it_is_listed_again() -> None:
    """Gone p-2: kept while Ray reports it; forgotten once Ray does not, or when listed."""
    memory = PollMemory(known_pods=frozenset({"p-1"}), gone=frozenset({"p-2"}))
    kept, _ = step(memory, seen(pods=frozenset({"p-1"})))
    dropped, _ = step(memory, seen(pods=frozenset({"p-1"}), in_ray=frozenset({"p-1"})))
    listed, _ = step(memory, seen())
    assert (kept.gone, dropped.gone, listed.gone) == (frozenset({"p-2"}), frozenset(), frozenset())


def test_an_unsynced_listing_keeps_the_known_pods_and_decides_nothing_new() -> None:
    """``pods`` None: known and gone pods as they were, even if Ray dropped a gone pod."""
    memory = PollMemory(known_pods=PODS, gone=frozenset({"p-3"}))
    after, _ = step(memory, seen(pods=None, in_ray=frozenset()))
    assert (after.known_pods, after.gone) == (PODS, frozenset({"p-3"}))


def test_a_pod_never_listed_is_never_gone() -> None:
    """A Ray node whose pod the listing never held is not a pod gone."""
    memory, _ = step(PollMemory(), seen(pods=frozenset(), in_ray=frozenset({"p-9"})))
    assert memory.gone == frozenset()


def test_step_keeps_the_freshness_it_was_given() -> None:
    """``stale`` is the spec check's, not the read's."""
    after, _ = step(PollMemory(stale=True), seen())
    assert after.stale


# --- the parts that are off -------------------------------------------------------------------


def test_the_off_parts_publish_nothing_limit_nothing_and_list_no_pods() -> None:
    """No victims, no failing pod, no launch limit, no listing; stepping and clearing do
    nothing."""
    inp = PlanningInput(ClusterSpec("demo", ()))
    NO_VICTIMS.saw_in_ray(PODS)
    asyncio.run(NO_VICTIMS.step(inp))
    NO_PLANNED.observe(inp, 1.0)
    NO_PLANNED.clear()
    view = NO_JOINS.observe(1.0, None, set(PODS), set(), {})
    assert (NO_VICTIMS.victims(), view.failing, view.launch_limits, no_pods()) == ({}, {}, (), None)


def test_planned_victims_step_the_controller_on_the_plan_of_the_input() -> None:
    """The input is planned and the controller stepped with that plan; the pods Ray saw and
    the published victims pass through."""
    inp = PlanningInput(ClusterSpec("demo", ()))
    plan = Plan({})
    calls: list[object] = []

    class Controller:
        def victims(self) -> dict[str, str]:
            return {"p-1": "cpu"}

        def saw_in_ray(self, pods: frozenset[str]) -> None:
            calls.append(pods)

        def due_at(self) -> float | None:
            return 1234.5

        async def step(self, got: Plan) -> tuple[object, ...]:
            calls.append(got)
            return ()

    def planner(given: PlanningInput) -> Plan:
        calls.append(given)
        return plan

    victims = PlannedVictims(Controller(), planner)
    victims.saw_in_ray(PODS)
    asyncio.run(victims.step(inp))
    assert (calls, victims.victims()) == ([PODS, inp, plan], {"p-1": "cpu"})
    assert (victims.due_at(), NO_VICTIMS.due_at()) == (1234.5, None)
