"""A rise of pending demand or of a node's use is exported once two polls agree."""

from __future__ import annotations

from keda_ray_scaler.agent.demand_filter import confirm_rises, confirm_use
from keda_ray_scaler.model import Bundle, Demand, NodeStatus, Resources, WorkerNode


def tasks(**counts: int) -> Demand:
    """Pending task bundles: ``cpu5=3`` is three {CPU: 5} bundles."""
    shapes = {"cpu5": {"CPU": 5}, "gpu1": {"GPU": 1}}
    return Demand(
        bundles=tuple(Bundle(Resources.of(shapes[name]), count) for name, count in counts.items())
    )


def test_the_first_poll_passes_unchanged() -> None:
    """Nothing to compare with: the demand as read."""
    assert confirm_rises(None, tasks(cpu5=20)) == tasks(cpu5=20)


def test_a_one_poll_spike_of_a_pending_shape_is_not_exported() -> None:
    """7 then 12 pending {CPU: 5} (measured on Ray 2.60 while nodes join): 7 is exported."""
    assert confirm_rises(tasks(cpu5=7), tasks(cpu5=12)) == tasks(cpu5=7)


def test_a_fall_is_exported_at_once() -> None:
    """Fewer pending tasks than before: the new count."""
    assert confirm_rises(tasks(cpu5=12), tasks(cpu5=7)) == tasks(cpu5=7)


def test_a_shape_new_this_poll_is_exported_at_once() -> None:
    """Scaling from zero (or for a new shape) is not delayed by a poll."""
    assert confirm_rises(tasks(cpu5=4), tasks(cpu5=4, gpu1=2)) == tasks(cpu5=4, gpu1=2)


def test_a_lasting_rise_is_exported_on_the_second_poll() -> None:
    """10 -> 20 -> 20 raw: exported 10, then 20."""
    assert confirm_rises(tasks(cpu5=10), tasks(cpu5=20)) == tasks(cpu5=10)
    assert confirm_rises(tasks(cpu5=20), tasks(cpu5=20)) == tasks(cpu5=20)


def test_placement_groups_and_floors_pass_unchanged() -> None:
    """Only task bundles race; placement groups and request_resources floors are objects."""
    floor = (Bundle(Resources.of(CPU=100)),)
    before = Demand(constraints=())
    after = Demand(bundles=tasks(cpu5=3).bundles, constraints=floor)
    assert confirm_rises(before, after) == after


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
