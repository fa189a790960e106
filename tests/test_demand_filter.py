"""A rise of a node's use is exported once it has lasted the window (Ray's reports race)."""

from __future__ import annotations

import pytest

from keda_ray_scaler.agent.demand_filter import Poll, UseHistory, confirm_use
from keda_ray_scaler.model import NodeStatus, Resources, WorkerNode


def node(pod: str, *, free: int, status: NodeStatus = NodeStatus.RUNNING) -> WorkerNode:
    """A 10-CPU pod with ``free`` CPUs available."""
    return WorkerNode(pod, "cpu", Resources.of(CPU=10), Resources.of(CPU=free), status=status)


def poll(at_s: float, *nodes: WorkerNode) -> Poll:
    return Poll(at_s, {n.pod: n.available for n in nodes})


def test_use_ahead_of_the_pending_report_shows_as_free() -> None:
    """The demo's 21 tasks: a pod pending a poll ago, fully used now, counts as free."""
    earlier = [poll(0.0, node("a", free=10, status=NodeStatus.PENDING))]
    assert confirm_use(earlier, [node("a", free=0)]) == (node("a", free=10),)


def test_use_shows_only_once_every_poll_of_the_window_had_it() -> None:
    """Used on two polls but free on a third inside the window: still held back."""
    earlier = [poll(0.0, node("a", free=10)), poll(1.0, node("a", free=0))]
    assert confirm_use(earlier, [node("a", free=0)]) == (node("a", free=10),)
    assert confirm_use(earlier[1:], [node("a", free=0)]) == (node("a", free=0),)


def test_the_largest_free_amount_of_the_window_is_taken_per_resource() -> None:
    """5 CPUs free then, 2 now: 5 exported; never above the pod's total."""
    earlier = [poll(0.0, node("a", free=5))]
    assert confirm_use(earlier, [node("a", free=2)]) == (node("a", free=5),)


def test_freed_resources_show_at_once() -> None:
    """A fall of use (a task ended) passes at once."""
    assert confirm_use([poll(0.0, node("a", free=0))], [node("a", free=10)]) == (
        node("a", free=10),
    )


def test_a_pod_absent_from_an_earlier_poll_counts_as_free_there() -> None:
    """A node that joined after an earlier poll: its use is new, held back like any rise."""
    earlier = [poll(0.0, node("b", free=10))]
    assert confirm_use(earlier, [node("a", free=0)]) == (node("a", free=10),)


def test_without_earlier_polls_nodes_pass_as_read() -> None:
    """The agent's first poll: nothing to compare with."""
    assert confirm_use([], [node("a", free=0)]) == (node("a", free=0),)


def test_the_history_keeps_only_the_window() -> None:
    """Polls older than the window are forgotten; a zero window keeps none."""
    history = UseHistory(window_s=2.0)
    for t in (0.0, 1.0, 2.0):
        history.record(t, [node("a", free=int(t))])
    assert [p.at_s for p in history.earlier(3.0)] == [1.0, 2.0]
    off = UseHistory(window_s=0.0)
    off.record(0.0, [node("a", free=10)])
    assert off.earlier(0.0) == ()
    with pytest.raises(ValueError, match="window_s"):
        UseHistory(window_s=-1.0)
