"""A node's idle time is the input's time less its idle-since time when it has one (the agent's
nodes, issue 39), else its own: a plan is the same either way; and when the next node reaches
its idle timeout (the agent polls then)."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st
from test_planner_properties import inputs

from keda_ray_scaler.model import (
    ClusterSpec,
    NodeStatus,
    PlanningInput,
    Resources,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.planner import plan
from keda_ray_scaler.planner.scale_down import next_idle_timeout

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


def _at(node: WorkerNode, **changes: object) -> WorkerNode:
    return dataclasses.replace(node, **changes)  # type: ignore[arg-type]


def test_the_next_idle_timeout_is_the_earliest_idle_node_not_past_its_groups() -> None:
    """Nodes idle 20 s (its own idle time) and since 50 s ago (an idle-since time) in a 60 s
    group, one of 200 s in a 300 s group: the next timeout is the 50 s one's, 10 s on; nodes
    past it, in use, not idle, not running or of no group never make one."""
    cpu = WorkerGroup("cpu", Resources.of(CPU=10), idle_timeout_s=60.0)
    gpu = WorkerGroup("gpu", Resources.of(CPU=8, GPU=1), idle_timeout_s=300.0)
    free = WorkerNode("a", "cpu", Resources.of(CPU=10), Resources.of(CPU=10))
    nodes = (
        _at(free, pod="own-20", idle_s=20.0),
        _at(free, pod="since-50", idle_since_s=NOW - 50.0),
        _at(free, pod="gpu-200", group="gpu", idle_s=200.0, total=gpu.resources,
            available=gpu.resources),
    )  # fmt: skip
    never = (
        _at(free, pod="past", idle_since_s=NOW - 61.0),
        _at(free, pod="used", idle_s=59.0, available=Resources.of(CPU=5)),
        _at(free, pod="busy-0"),
        _at(free, pod="pending", idle_s=59.0, status=NodeStatus.PENDING),
        _at(free, pod="victim", idle_s=59.0, status=NodeStatus.VICTIM),
        _at(free, pod="no-group", group="gone", idle_s=59.0),
    )
    inp = PlanningInput(ClusterSpec("c", (cpu, gpu)), nodes=nodes + never, now_s=NOW)
    assert next_idle_timeout(inp) == NOW + 10.0
    assert next_idle_timeout(dataclasses.replace(inp, nodes=nodes[2:] + never)) == NOW + 100.0
    assert next_idle_timeout(dataclasses.replace(inp, nodes=never)) is None
