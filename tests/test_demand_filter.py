"""A rise of a node's use is exported once two polls agree (Ray's reports race)."""

from __future__ import annotations

from keda_ray_scaler.agent.demand_filter import confirm_use
from keda_ray_scaler.model import NodeStatus, Resources, WorkerNode


def node(pod: str, *, free: int, status: NodeStatus = NodeStatus.RUNNING) -> WorkerNode:
    """A 10-CPU pod with ``free`` CPUs available."""
    return WorkerNode(pod, "cpu", Resources.of(CPU=10), Resources.of(CPU=free), status=status)


def test_use_a_poll_ahead_of_the_pending_report_shows_a_poll_late() -> None:
    """The demo's 21 tasks: a pod pending last poll, fully used now, counts as free this poll."""
    before = [node("a", free=10, status=NodeStatus.PENDING)]
    assert confirm_use(before, [node("a", free=0)]) == (node("a", free=10),)


def test_lasting_use_shows_on_the_second_poll() -> None:
    """Used on two polls in a row: exported as used."""
    assert confirm_use([node("a", free=0)], [node("a", free=0)]) == (node("a", free=0),)


def test_freed_resources_show_at_once() -> None:
    """A fall of use (a task ended) passes at once."""
    assert confirm_use([node("a", free=0)], [node("a", free=10)]) == (node("a", free=10),)


def test_a_pod_new_this_poll_passes_unchanged() -> None:
    """No earlier view of the pod: as read."""
    assert confirm_use([node("a", free=0)], [node("b", free=5)]) == (node("b", free=5),)
