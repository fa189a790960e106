"""A node's idle time is the input's time less its idle-since time when it has one (the agent's
nodes, issue 39), else its own: a plan is the same either way."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st
from test_planner_properties import inputs

from keda_ray_scaler.model import PlanningInput, Resources, WorkerNode
from keda_ray_scaler.planner import plan

NOW = 1_700_000_000.0


def since_form(node: WorkerNode, now_s: float) -> WorkerNode:
    """``node`` as the agent holds it: idle since ``now_s`` less its idle time, none its own."""
    if node.idle_s <= 0:
        return node
    return dataclasses.replace(node, idle_s=0.0, idle_since_s=now_s - node.idle_s)


@given(inputs(), st.sampled_from([NOW, NOW + 0.5, 86_400.0]))
@settings(max_examples=100, deadline=None)
def test_a_plan_from_idle_since_times_is_the_plan_from_idle_times(
    inp: PlanningInput, now_s: float
) -> None:
    """The same nodes, each idle since ``now_s`` less its idle time, planned at ``now_s``."""
    held = tuple(since_form(n, now_s) for n in inp.nodes)
    assert plan(dataclasses.replace(inp, nodes=held, now_s=now_s)) == plan(inp)


def test_a_node_is_idle_from_its_idle_since_time_at_the_time_asked() -> None:
    """``idle_at``: the time asked less the idle-since time (never below 0), else ``idle_s``."""
    node = WorkerNode("p", "g", Resources.of(CPU=1), Resources.of(CPU=1))
    assert node.idle_at(NOW) == 0.0
    assert dataclasses.replace(node, idle_s=30.0).idle_at(NOW) == 30.0
    assert dataclasses.replace(node, idle_since_s=NOW - 90.0).idle_at(NOW) == 90.0
    assert dataclasses.replace(node, idle_since_s=NOW + 1.0).idle_at(NOW) == 0.0
