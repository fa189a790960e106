"""A changed poll parses and writes only what changed (issue 39), and what it serves is what a
new agent would serve: each reply of a sequence of changes (nodes added, removed, busy and idle,
draining, demand and labels changed) read and written through the kept memos gives the very
body a new reader and writer give it from scratch, byte for byte."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.exposition import choose_encoder
from ray_input_fakes import SPEC, node, status

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exposition import Format
from keda_ray_scaler.agent.http.sealed_body import SnapshotWriter
from keda_ray_scaler.agent.http.series_memo import forget_series
from keda_ray_scaler.agent.ray.status_memo import StatusMemo
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.model import PlanningInput

T0 = 1_700_000_000.0
STEP_S = 5.0
FORM = Format(*reversed(choose_encoder("application/openmetrics-text;version=1.0.0")))
PODS = tuple(f"w-{i}" for i in range(6))


def reply(
    call: int, nodes: dict[str, tuple[int, str, str]], count: int
) -> pb.GetClusterStatusReply:
    """Call ``call`` of the GCS: each pod's node with ``free`` CPUs of 10, its status and a
    label; an idle node idle since the start (its idle time grows with the clock, as Ray's);
    ``count`` pending tasks; the GCS's counters at ``call``."""
    states = []
    for i, (pod, (free, state, label)) in enumerate(sorted(nodes.items())):
        ns = node(bytes([65 + PODS.index(pod)]), pod, f"10.0.0.{i + 1}", free=free)
        ns.status = {"busy": pb.RUNNING, "idle": pb.IDLE, "draining": pb.DRAINING}[state]
        ns.idle_duration_ms = int(1000 * (STEP_S * call + 30)) if free == 10 else 0
        ns.node_state_version = call
        if label:
            ns.labels["zone"] = label
        states.append(ns)
    out = status(*states)
    out.cluster_resource_state.cluster_resource_state_version = call
    out.cluster_resource_state.pending_resource_requests[0].count = count
    return out


def body(memo: StatusMemo, writer: SnapshotWriter, answer: pb.GetClusterStatusReply) -> bytes:
    """The body served after ``memo`` reads ``answer`` and ``writer`` writes its snapshot."""
    state = memo.parse(answer, SPEC)
    when = memo._read_s  # the poll's time: the memo's clock, read at the parse
    inp = PlanningInput(SPEC, state.demand, state.nodes, now_s=when)
    return writer.write(schema.ClusterSnapshot(inp, when, True)).text(FORM)


def clock() -> Iterator[float]:
    """The agent's clock: one step a poll."""
    t = T0
    while True:
        t += STEP_S
        yield t


def kept_and_new(polls: list[tuple[dict[str, tuple[int, str, str]], int]]) -> None:
    """Each poll's body through the kept memos equals a new reader's and writer's."""
    ticks = clock()
    now = [T0]
    kept, writer = StatusMemo(now=lambda: now[0]), SnapshotWriter()
    for call, (nodes, count) in enumerate(polls):
        now[0] = next(ticks)
        answer = reply(call, nodes, count)
        served = body(kept, writer, answer)
        forget_series()  # a new agent: no form or node run kept
        assert served == body(StatusMemo(now=lambda: now[0]), SnapshotWriter(), answer), call


BUSY, IDLE = (0, "busy", ""), (10, "idle", "")


def test_a_sequence_of_changes_is_served_as_from_scratch() -> None:
    """Nodes added, one going busy and back, one draining, one removed, a label set and
    changed, the demand moving: every body the same as a new agent's."""
    start = {"w-0": BUSY, "w-1": IDLE, "w-2": IDLE}
    polls = [
        (start, 20),
        (start, 20),  # nothing but the counters and idle times
        ({**start, "w-3": IDLE}, 20),  # a node added
        ({**start, "w-3": IDLE, "w-1": (4, "busy", "")}, 21),  # busy, demand moved
        ({**start, "w-3": IDLE}, 19),  # idle again
        ({**start, "w-3": (10, "draining", "")}, 19),  # draining
        ({"w-0": BUSY, "w-2": IDLE, "w-3": IDLE}, 18),  # a node removed
        ({"w-0": BUSY, "w-2": (10, "idle", "a"), "w-3": IDLE}, 18),  # a label set
        ({"w-0": BUSY, "w-2": (10, "idle", "b"), "w-3": IDLE}, 18),  # and changed
        ({"w-0": IDLE, "w-2": BUSY, "w-3": IDLE, "w-4": BUSY, "w-5": IDLE}, 30),
        ({}, 0),  # every node gone
        (start, 20),
    ]
    kept_and_new(polls)


NODE = st.tuples(
    st.sampled_from([0, 4, 10]),
    st.sampled_from(["busy", "idle", "draining"]),
    st.sampled_from(["", "a"]),
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.dictionaries(st.sampled_from(PODS), NODE, max_size=6), st.integers(0, 3)),
        min_size=1,
        max_size=8,
    )
)
def test_whatever_the_changes_the_kept_memos_serve_what_a_new_agent_serves(
    polls: list[tuple[dict[str, tuple[int, str, str]], int]],
) -> None:
    """Any sequence of polls: the bodies through the kept memos are a new agent's."""
    kept_and_new(polls)


@pytest.fixture(autouse=True)
def _forgotten() -> Iterator[None]:
    """No test leaves forms or node runs kept for the next."""
    yield
    forget_series()
