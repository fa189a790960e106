"""A reply that says something new is parsed, but a node that says what it said at the last
parse is not read again (issue 39): taken from the last parse, its idle-since time from this
reply, and the state is parse_status's exactly (its idle times taken at the memo's clock)."""

from __future__ import annotations

from typing import Any

from ray_input_fakes import SPEC, T, hexid, node, status, timed

from keda_ray_scaler.agent.ray.node_memo import NodeMemo, keys_in, node_keys
from keda_ray_scaler.agent.ray.ray_status import parse_status
from keda_ray_scaler.agent.ray.status_memo import StatusMemo, steady_part
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.model import Resources

A, B, C = b"a", b"b", b"c"


def reply(call: int, *, free_c: int = 10, idle_ms: int = 120_000, count: int = 20) -> Any:
    """Call ``call`` of the GCS: w-a busy, w-b and w-c idle for ``idle_ms`` (w-c with
    ``free_c`` CPUs free), counters at ``call``, ``count`` pending tasks."""
    nodes = [
        node(A, "w-a", "10.0.0.1", free=0),
        node(B, "w-b", "10.0.0.2"),
        node(C, "w-c", "10.0.0.3", free=free_c),
    ]
    out = status(*nodes)
    state = out.cluster_resource_state
    state.cluster_resource_state_version = call
    state.pending_resource_requests[0].count = count
    for ns in state.node_states:
        ns.node_state_version = call
        if ns.available_resources["CPU"] == 10:
            ns.idle_duration_ms = idle_ms
    return out


def nodes_of(memo: StatusMemo) -> NodeMemo:
    return memo._nodes  # the count is the test's subject


def test_a_changed_node_after_an_unchanged_parse_is_read_anew_the_others_taken() -> None:
    """Demand and w-c change: the reply is parsed, w-a and w-b taken from the last parse (w-b
    with its new idle time), w-c read again; the state is parse_status's."""
    memo = StatusMemo(now=lambda: T)
    memo.parse(reply(1), SPEC)
    changed = reply(2, free_c=4, idle_ms=125_000, count=21)
    state = memo.parse(changed, SPEC)
    assert timed(state) == parse_status(changed, SPEC)
    assert nodes_of(memo).reused == 2
    by_pod = {n.pod: n for n in state.nodes}
    assert (by_pod["w-b"].idle_at(T), by_pod["w-c"].available) == (125.0, Resources.of(CPU=4))


def test_a_node_that_says_the_same_is_the_very_node_of_the_last_parse() -> None:
    """The busy node's idle time did not move: its node is the last state's (kept by identity,
    so nothing after the parse compares it field by field); the idle one's, idle 10 s more at
    the same time, is a new node."""
    memo = StatusMemo(now=lambda: T)
    first = {n.pod: n for n in memo.parse(reply(1), SPEC).nodes}
    then = {n.pod: n for n in memo.parse(reply(2, idle_ms=130_000, count=19), SPEC).nodes}
    assert then["w-a"] is first["w-a"]
    assert then["w-b"] is not first["w-b"] and then["w-b"].idle_at(T) == 130.0


def test_a_node_mapped_to_another_pod_is_read_again() -> None:
    """The pods' IPs are inputs of the mapping: w-c's pod moved to another IP, so the node
    (whose IP is no longer its pod's) is refused as parse_status refuses it, not taken."""
    memo = StatusMemo(now=lambda: T)
    memo.parse(reply(1), SPEC, pods=[PodRef("w-c", "cpu", ("10.0.0.3",))])
    moved = [PodRef("w-c", "cpu", ("10.9.9.9",))]
    state = memo.parse(reply(2, count=21), SPEC, pods=moved)
    assert timed(state) == parse_status(reply(2, count=21), SPEC, pods=moved)
    assert "w-c" not in {n.pod for n in state.nodes}


def test_a_node_listed_twice_is_two_nodes_after_a_parse_that_kept_it() -> None:
    """The same node twice: each occurrence a node of its own (the parse tells a pod's nodes
    apart by identity), as parse_status makes them."""
    memo = StatusMemo(now=lambda: T)
    twice = status(node(C, "w-c", "10.0.0.3"), node(C, "w-c", "10.0.0.3"))
    memo.parse(status(node(C, "w-c", "10.0.0.3")), SPEC)
    state = memo.parse(twice, SPEC)
    assert timed(state) == parse_status(twice, SPEC)
    assert state.superseded == parse_status(twice, SPEC).superseded


def test_node_keys_ignore_what_the_gcs_moves_at_every_call_and_leave_the_reply() -> None:
    """Versions and idle times apart, the keys are the nodes' bytes; the reply keeps them."""
    one, two = reply(1), reply(2, idle_ms=999_000)
    before = two.SerializeToString()
    assert node_keys(one.cluster_resource_state) == node_keys(two.cluster_resource_state)
    assert two.SerializeToString() == before
    busy = reply(2, free_c=4)
    keys = node_keys(busy.cluster_resource_state)
    assert keys[:2] == node_keys(one.cluster_resource_state)[:2] and keys[2] != keys[0]
    assert hexid(C) == busy.cluster_resource_state.node_states[2].node_id.hex()
    assert pb.NodeState.FromString(keys[2]).idle_duration_ms == 0


def test_keys_cut_from_the_steady_part_are_the_nodes_own() -> None:
    """The keys cut from the steady part's bytes are each node serialized apart."""
    answer = reply(3, free_c=4, idle_ms=7_000)
    state = answer.cluster_resource_state
    steady, _ = steady_part(state)
    assert keys_in(steady, len(state.node_states)) == node_keys(state)
    assert keys_in(steady, len(state.node_states) + 1) is None  # no such node: serialized apart
    assert keys_in(b"\x22\x00", 1) is None  # not a node first
