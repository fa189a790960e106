"""An idle node's idle-since time is kept from poll to poll (issue 39), so the series the agent
exports for it does not change while its idle time grows: kept while the time computed anew is
within a second of it (Ray's idle times move by the raylets' report timing), replaced beyond,
reset when the node was busy, 0 while it is."""

from __future__ import annotations

from ray_input_fakes import SPEC, node, status

from keda_ray_scaler.agent.ray.node_memo import IDLE_SINCE_TOLERANCE_S, idle_for, idle_since
from keda_ray_scaler.agent.ray.status_memo import StatusMemo
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import GetClusterStatusReply
from keda_ray_scaler.model import Resources, WorkerNode

T = 1_800_000_000.0
CPU = Resources.of(CPU=10)


def test_a_time_within_the_tolerance_keeps_the_one_kept() -> None:
    """Idle 60 s at T, then 65.4 s 5 s later: 0.4 s of report jitter, the time kept."""
    first = idle_since(0.0, 60.0, T)
    assert first == T - 60.0
    assert idle_since(first, 65.4, T + 5.0) == first
    assert idle_since(first, 65.0 - IDLE_SINCE_TOLERANCE_S, T + 5.0) == first


def test_a_time_beyond_the_tolerance_replaces_the_one_kept() -> None:
    """Idle 3 s where 65 s were due: the node was busy in between, unseen; the new time holds."""
    kept = T - 60.0
    assert idle_since(kept, 3.0, T + 5.0) == T + 2.0
    assert idle_since(kept, 66.5, T + 5.0) == T - 61.5


def test_a_busy_node_has_none_and_turning_idle_starts_anew() -> None:
    """Busy: 0 whatever was kept; idle again after: the time computed now, nothing kept."""
    assert idle_since(T - 60.0, 0.0, T) == 0.0
    assert idle_since(0.0, 2.0, T + 5.0) == T + 3.0


def test_a_node_whose_idle_time_grew_is_the_same_node_its_time_kept() -> None:
    """idle_for: the same node while its idle-since time is kept (its idle time, taken at the
    time asked, grows with the clock), else a copy with the new time and its other fields; a
    node as a parse made it (Ray's idle time its own) holds the idle-since time alone."""
    node_ = WorkerNode("w", "cpu", CPU, CPU, node_id="n", idle_since_s=T - 60.0)
    assert idle_for(node_, 60.0, T) is node_
    grown = idle_for(node_, 65.2, T + 5.0)
    assert grown is node_ and grown.idle_at(T + 5.0) == 65.0
    again = idle_for(node_, 3.0, T + 5.0)
    assert (again.idle_s, again.idle_since_s, again.pod, again.node_id) == (0.0, T + 2, "w", "n")
    busy = idle_for(grown, 0.0, T + 10.0)
    assert (busy.idle_s, busy.idle_since_s) == (0.0, 0.0)
    made = idle_for(WorkerNode("w", "cpu", CPU, CPU, 60.0, node_id="n"), 60.0, T)
    assert (made.idle_s, made.idle_since_s, made.idle_at(T)) == (0.0, T - 60.0, 60.0)


def reply(call: int, idle_ms: int) -> GetClusterStatusReply:
    """Call ``call``: w-a busy, w-b idle for ``idle_ms``."""
    out = status(node(b"a", "w-a", "10.0.0.1", free=0), node(b"b", "w-b", "10.0.0.2"))
    for ns in out.cluster_resource_state.node_states:
        ns.node_state_version = call
        if ns.available_resources["CPU"] == 10:
            ns.idle_duration_ms = idle_ms
    return out


def test_the_reader_keeps_an_idle_nodes_time_over_unchanged_and_changed_replies() -> None:
    """Polls 5 s apart, Ray's idle time off by up to 0.3 s: the time read at the first poll is
    the time of every later one, whether the reply was parsed again or not; the idle time is
    the clock's since then."""
    clock = [T]
    memo = StatusMemo(lambda: clock[0])
    times = []
    for call, idle_ms in enumerate((60_000, 65_300, 69_800, 75_100), start=1):
        # the ages alternate: every other reply is parsed again (through the node memo)
        state = memo.parse(reply(call, idle_ms), SPEC, first_seen={"x": call % 2})
        times.append({n.pod: (n.idle_at(clock[0]), n.idle_since_s) for n in state.nodes})
        clock[0] += 5.0
    assert [t["w-b"][1] for t in times] == [T - 60.0] * 4
    assert [t["w-b"][0] for t in times] == [60.0, 65.0, 70.0, 75.0]
    assert {t["w-a"] for t in times} == {(0.0, 0.0)}
