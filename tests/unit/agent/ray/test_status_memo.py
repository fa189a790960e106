"""A status reply is parsed again only when it says something new (issue 39): the GCS's
per-call counters and the idle times it advances are not news; anything else is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ray_input_fakes import SPEC, T, hexid, node, status, timed

from keda_ray_scaler.agent.ray import status_memo
from keda_ray_scaler.agent.ray.ray_status import RayState, parse_status
from keda_ray_scaler.agent.ray.status_memo import StatusMemo
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.agent.ray.task_load import QueuedShape
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.model import ClusterSpec, Resources, WorkerGroup

A, B, C = b"a", b"b", b"c"


def memo_at_t() -> StatusMemo:
    """A memo whose clock shows :data:`T`."""
    return StatusMemo(now=lambda: T)


def answer(call: int, *, idle_ms: int = 120_000, count: int = 20, **kw: Any) -> Any:
    """The GCS's reply at its ``call``-th call: counters at ``call``, the idle pod ``w-b`` idle
    for ``idle_ms``, ``count`` pending {CPU: 5} tasks."""
    nodes = [node(A, "w-a", "10.0.0.1", free=0), node(B, "w-b", "10.0.0.2"), *kw.get("more", ())]
    reply = status(*nodes, session=kw.get("session", "s1"))
    state = reply.cluster_resource_state
    state.cluster_resource_state_version = call
    state.last_seen_autoscaler_state_version = call - 1
    state.pending_resource_requests[0].count = count
    for ns in state.node_states:
        ns.node_state_version = call
        if ns.status == pb.IDLE or ns.instance_id == "w-b":
            ns.idle_duration_ms = idle_ms
    return reply


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the memo's calls of parse_status."""
    calls: list[int] = []

    def counted(*args: Any, **kw: Any) -> RayState:
        calls.append(1)
        return parse_status(*args, **kw)

    monkeypatch.setattr(status_memo, "parse_status", counted)
    return calls


def test_an_answer_that_moved_only_its_counters_and_idle_times_is_not_parsed_again(
    parses: list[int],
) -> None:
    """Call 2 differs from call 1 only where the GCS differs at every call: no parse, and the
    state is parse_status's of call 2 exactly (the idle pod's idle time moved on)."""
    memo = memo_at_t()
    memo.parse(answer(1), SPEC)
    state = memo.parse(answer(2, idle_ms=125_000), SPEC)
    assert (len(parses), memo.reused) == (1, 1)
    assert timed(state) == parse_status(answer(2, idle_ms=125_000), SPEC)
    assert {n.pod: n.idle_at(T) for n in state.nodes} == {"w-a": 0.0, "w-b": 125.0}


def test_answers_alike_are_answered_alike_poll_after_poll(parses: list[int]) -> None:
    """Ten polls of an idle cluster: one parse, each state the one parse_status gives."""
    memo = memo_at_t()
    for call in range(1, 11):
        reply = answer(call, idle_ms=120_000 + 5_000 * call)
        assert timed(memo.parse(reply, SPEC)) == parse_status(reply, SPEC)
    assert len(parses) == 1


ELSEWHERE = PodRef("w-b", "cpu", ("10.9.9.9",))
#: Each a change of what a parse reads: the reply (demand, a node's use, state, a node more, the
#: session) or another input (pods, R1's tasks, v1's request, the nodes' ages, the groups).
CHANGES: dict[str, tuple[Callable[[int], Any], dict[str, Any]]] = {
    "demand": (lambda k: answer(k, count=21), {}),
    "a node's use": (
        lambda k: _edit(answer(k), lambda ns: ns.available_resources.update(CPU=3)),
        {},
    ),
    "a node's state": (
        lambda k: _edit(answer(k), lambda ns: setattr(ns, "status", pb.DRAINING)),
        {},
    ),
    "a node more": (lambda k: answer(k, more=[node(C, "w-c", "10.0.0.3")]), {}),
    "the session": (lambda k: answer(k, session="s2"), {}),
    "the pods": (answer, {"pods": (ELSEWHERE,)}),
    "R1's tasks": (answer, {"tasks": (QueuedShape.of({"CPU": 1.0}, 3),)}),
    "v1's request": (answer, {"v1_requests": b'[{"CPU": 2}]'}),
    "the ages": (answer, {"first_seen": {hexid(A): 1, hexid(B): 2}}),
    "the groups": (
        answer,
        {"cluster": ClusterSpec("demo", (WorkerGroup("gpu", Resources.of(GPU=1)),))},
    ),
}


def _edit(reply: Any, change: Callable[[Any], object]) -> Any:
    """``reply`` with ``change`` made to its first node (w-a)."""
    change(reply.cluster_resource_state.node_states[0])
    return reply


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_changed_answer_is_parsed_again(
    change: tuple[Callable[[int], Any], dict[str, Any]], parses: list[int]
) -> None:
    """Anything else that differs is parsed again, and read as parse_status reads it."""
    make, inputs = change
    cluster = inputs.pop("cluster", SPEC)
    memo = memo_at_t()
    memo.parse(answer(1), SPEC)
    state = memo.parse(make(2), cluster, **inputs)
    assert (len(parses), memo.reused) == (2, 0)
    assert timed(state) == parse_status(make(2), cluster, **inputs)


def test_the_memo_never_changes_the_reply_it_reads() -> None:
    """The reply keeps its counters and idle times (R1 and the version check read it after)."""
    reply = answer(7, idle_ms=130_000)
    before = reply.SerializeToString()
    memo_at_t().parse(reply, SPEC)
    assert reply.SerializeToString() == before


def test_a_reply_listing_a_node_id_twice_is_always_parsed(parses: list[int]) -> None:
    """No node can be told from the other by its id: each such reply is parsed whole."""
    memo = memo_at_t()
    twice = [node(C, "w-c", "10.0.0.3"), node(C, "w-c", "10.0.0.3")]
    for call in (1, 2):
        reply = answer(call, more=twice)
        assert timed(memo.parse(reply, SPEC)) == parse_status(reply, SPEC)
    assert (len(parses), memo.reused) == (2, 0)


def test_a_reply_with_the_same_idle_times_too_is_answered_with_the_last_state_itself(
    parses: list[int],
) -> None:
    """Only the counters moved: the state is the last one, not a copy (what follows the read
    finds every node the same by identity); a change after it is parsed."""
    memo = memo_at_t()
    first = memo.parse(answer(1), SPEC)
    assert memo.parse(answer(2), SPEC) is first
    changed = memo.parse(answer(3, count=21), SPEC)
    assert timed(changed) == parse_status(answer(3, count=21), SPEC) and len(parses) == 2


def test_an_idle_node_whose_idle_time_grew_with_the_clock_is_answered_with_the_last_state(
    parses: list[int],
) -> None:
    """Ray's idle time grew as the clock did (give or take its reports' timing): the idle-since
    time is the one kept, so the state is the last one itself, no node made again; its idle
    time is taken at the time asked."""
    clock = [T]
    memo = StatusMemo(now=lambda: clock[0])
    first = memo.parse(answer(1, idle_ms=120_000), SPEC)
    clock[0] = T + 5.0
    assert memo.parse(answer(2, idle_ms=125_300), SPEC) is first
    assert {n.pod: n.idle_at(T + 5.0) for n in first.nodes} == {"w-a": 0.0, "w-b": 125.0}
    assert len(parses) == 1
