"""Tasks Ray counts both running and pending while they start are left out of the demand.

The cases are the polls recorded in the local demo (20 x {CPU: 5} on 10-CPU pods).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from keda_ray_scaler.agent.ray.demand_filter import (
    Poll,
    UseHistory,
    double_counted,
    poll_of,
    without,
)
from keda_ray_scaler.labels import LabelConstraint, LabelOperator, LabelSelector, selectors_of
from keda_ray_scaler.model import (
    Bundle,
    Demand,
    NodeStatus,
    PlacementGroup,
    Resources,
    Strategy,
    WorkerNode,
)

TASK = Resources.of(CPU=5)


def node(pod: str, *, used: int, status: NodeStatus = NodeStatus.RUNNING) -> WorkerNode:
    """A 10-CPU pod with ``used`` CPUs in use."""
    return WorkerNode(pod, "cpu", Resources.of(CPU=10), Resources.of(CPU=10 - used), status=status)


def tasks(n: int) -> Demand:
    return Demand(bundles=(Bundle(TASK, n),) if n else ())


def at(t: float, pending: int, **used: int) -> Poll:
    return poll_of(t, [node(p, used=u) for p, u in used.items()], tasks(pending))


def exported(earlier: list[Poll], now: Poll, pending: int) -> int:
    out, _ = without(tasks(pending), double_counted(earlier, now))
    return sum(b.count for b in out.bundles)


def test_use_the_pending_demand_did_not_pay_for_is_a_double_count() -> None:
    """Recorded: 18 pending + 2 on a, then 17 pending + 2 on a + 2 on b: 21 of 20 tasks."""
    earlier = [at(0.0, 18, a=10), at(1.0, 18, a=10)]
    assert exported(earlier, at(2.0, 17, a=10, b=10), 17) == 16


def test_a_bounce_of_pending_back_to_its_peak_is_taken_out() -> None:
    """Recorded: 20 pending, 18 with 2 running, then 20 again with the 2 still running."""
    earlier = [at(0.0, 20), at(1.0, 18, a=10)]
    assert exported(earlier, at(2.0, 20, a=10), 20) == 18


def test_use_that_pending_demand_paid_for_shows_at_once() -> None:
    """The HPA's rate limit (1 -> 5 pods): 10 tasks start as pending falls 20 -> 10; the 10
    left are real (hiding the 5 pods' use left the real loop at 5 pods for 14 s)."""
    earlier = [at(0.0, 20)]
    now = at(1.0, 10, a=10, b=10, c=10, d=10, e=10)
    assert double_counted(earlier, now) == Resources()
    assert exported(earlier, now, 10) == 10


def test_new_demand_with_nothing_starting_passes_at_once() -> None:
    """A new wave while every pod's use is unchanged: as read."""
    earlier = [at(0.0, 0, a=10)]
    assert exported(earlier, at(1.0, 8, a=10), 8) == 8


def test_use_held_over_the_whole_window_is_believed() -> None:
    """A rise the pending demand never explained stops counting once it lasted the window."""
    history = UseHistory(window_s=2.0)
    history.record(at(0.0, 4))
    history.record(at(1.0, 4, a=10))
    assert exported(list(history.earlier(1.5)), at(1.5, 4, a=10), 4) == 2
    history.record(at(1.5, 4, a=10))
    assert exported(list(history.earlier(3.5)), at(3.5, 4, a=10), 4) == 4


def test_a_placement_group_leaving_pending_explains_its_reservation() -> None:
    """A gang reserves its bundles on pods as it leaves pending: no task is taken out."""
    gang = PlacementGroup(Strategy.PACK, (Resources.of(CPU=10),))
    before = poll_of(
        0.0, [node("a", used=0)], Demand(bundles=(Bundle(TASK, 2),), placement_groups=(gang,))
    )
    now = poll_of(1.0, [node("a", used=10)], tasks(2))
    assert double_counted([before], now) == Resources()


def test_only_whole_bundles_that_fit_are_removed_largest_first() -> None:
    """7 CPUs of double count: one {CPU: 5} goes, never a part; {CPU: 1} fill the rest."""
    demand = Demand(bundles=(Bundle(Resources.of(CPU=1), 3), Bundle(TASK, 2)))
    out, removed = without(demand, Resources.of(CPU=7))
    assert removed == 3
    assert out.bundles == (Bundle(Resources.of(CPU=1), 1), Bundle(TASK, 1))


def test_a_pod_absent_or_pending_before_had_no_use() -> None:
    """A pod that joined in the window: all of its use is new."""
    pending_pod = poll_of(0.0, [node("a", used=0, status=NodeStatus.PENDING)], tasks(4))
    assert double_counted([pending_pod], at(1.0, 4, a=10)) == Resources.of(CPU=10)
    assert double_counted([at(0.0, 4)], at(1.0, 4, a=10)) == Resources.of(CPU=10)


def test_without_earlier_polls_nothing_is_taken_out() -> None:
    """The agent's first poll."""
    assert double_counted([], at(0.0, 4, a=10)) == Resources()


def test_the_history_keeps_only_the_window() -> None:
    """Polls older than the window are forgotten; a zero window keeps none."""
    history = UseHistory(window_s=2.0)
    for t in (0.0, 1.0, 2.0):
        history.record(at(t, 0))
    assert [p.at_s for p in history.earlier(3.0)] == [1.0, 2.0]
    off = UseHistory(window_s=0.0)
    off.record(at(0.0, 0))
    assert off.earlier(0.0) == ()
    with pytest.raises(ValueError, match="window_s"):
        UseHistory(window_s=-1.0)


def test_a_double_count_taken_out_earlier_does_not_hide_the_next_one() -> None:
    """Seen on the real node (KubeRay seed, load 12): pod a's lease read with its 2 tasks still
    pending (20 read, 18 exported), then for the window 18 pending with a running; pod b's lease
    read the same way (18 read, 16 true). With the peak over what was read (20) the second went
    through (22 tasks of 20, an 11th pod); over what was exported it is taken out."""
    history = UseHistory(window_s=10.0)

    def poll(t: float, pending: int, **used: int) -> int:
        nodes = [node(p, used=u) for p, u in used.items()]
        out = history.filter(t, nodes, tasks(pending))
        return sum(b.count for b in out.demand.bundles)

    assert poll(0.0, 20) == 20
    assert poll(1.0, 20, a=10) == 18  # a's lease: its 2 tasks still pending
    for t in range(2, 11):
        assert poll(float(t), 18, a=10) == 18  # the owner's report: as read
    assert poll(10.5, 18, a=10, b=10) == 16  # b's lease, double counted as a's was
    assert poll(11.5, 16, a=10, b=10) == 16  # the report: as read, nothing more taken out


def test_a_use_that_changed_after_polls_changing_only_idle_times_is_read() -> None:
    """Polls whose nodes differ only by idle time keep the use read; a pod's use rising after
    them is read at once (and taken for a double count, as nothing pending paid for it)."""
    history = UseHistory(window_s=10.0)
    idle = [replace(node("a", used=0), idle_s=float(t)) for t in range(3)]
    for t, n in enumerate(idle):
        out = history.filter(float(t), [n], tasks(2))
        assert out.current.used == {"a": Resources()}
    out = history.filter(3.0, [node("a", used=5)], tasks(2))
    assert out.current.used == {"a": Resources.of(CPU=5)}
    assert out.removed == 1


def test_the_use_of_a_few_pods_changed_is_read_as_a_whole_poll_reads_it() -> None:
    """Pods kept, changed, added and gone from poll to poll: the use each poll keeps is
    :func:`poll_of`'s of its nodes."""
    history = UseHistory(window_s=10.0)
    polls = [
        [node("a", used=0), node("b", used=5), node("c", used=0)],
        [node("a", used=0), node("b", used=2), node("d", used=10)],
        [node("b", used=2), node("a", used=3), node("d", used=10, status=NodeStatus.PENDING)],
    ]
    for t, nodes in enumerate(polls):
        out = history.filter(float(t), nodes, tasks(0))
        assert out.current.used == poll_of(float(t), nodes, tasks(0)).used


def asking(label: str, *fallbacks: str) -> tuple[LabelSelector, ...]:
    """The selectors of a task asking ``market-type: label``, then each fallback ('' for any
    node)."""
    return selectors_of(
        LabelSelector.of([LabelConstraint.of("market-type", LabelOperator.IN, [v])] if v else [])
        for v in (label, *fallbacks)
    )


def busy(*pods: str, used: int = 10) -> list[WorkerNode]:
    return [node(p, used=used) for p in pods]


def test_a_kind_that_arrives_after_others_started_is_shown_at_once() -> None:
    """vs-ray (e) phase 2: four spot tasks start on four pods, then, every pod busy, a task
    asking on-demand with a fallback to any node. The spot kind's fall explains the use; the
    new kind is no double count (summed over kinds it was hidden for the whole window, 9.3 s)."""
    spot = Bundle(Resources.of(CPU=10), 4, selectors=asking("spot"))
    fallback = Bundle(Resources.of(CPU=10), 1, selectors=asking("on-demand", ""))
    history = UseHistory(window_s=10.0)
    history.filter(0.0, busy("a", "b", "c", "d", used=0), Demand(bundles=(spot,)))
    history.filter(1.0, busy("a", "b", "c", "d"), Demand())
    out = history.filter(2.0, busy("a", "b", "c", "d"), Demand(bundles=(fallback,)))
    assert (out.removed, out.demand.bundles) == (0, (fallback,))


def test_a_unit_started_at_once_beside_others_arriving_is_no_double_count() -> None:
    """vs-ray (g): Serve goes from 1 to 6 replicas of {CPU: 5}; one starts at once on the rest
    pod's free half, four wait for new pods. Its use rose in the interval the others arrived in:
    it never waited, so nothing is taken out (it took out 1-2 of the 4 for up to the window,
    and the pods came in two steps: all Ready 12.1 s against Ray's 6.1 s). Real Ray 2.60 never
    counts an actor both pending and leased, even with a worker start of 10 s (R1 and the GCS's
    sum alike)."""
    history = UseHistory(window_s=10.0)
    assert history.filter(0.0, busy("rest", used=5), Demand()).removed == 0
    out = history.filter(1.0, busy("rest"), tasks(4))
    assert (out.removed, sum(b.count for b in out.demand.bundles)) == (0, 4)
    for t in (1.5, 5.0, 9.0):  # and not later in the window either
        assert history.filter(t, busy("rest"), tasks(4)).removed == 0


def test_a_start_read_one_poll_before_its_kind_arrives_is_no_double_count() -> None:
    """The node view and the load are two reads: a poll can see the replica's use before the
    others are read pending. The next interval's arrivals explain it."""
    history = UseHistory(window_s=10.0)
    history.filter(0.0, busy("rest", used=5), Demand())
    assert history.filter(0.5, busy("rest"), Demand()).removed == 0
    assert history.filter(1.0, busy("rest"), tasks(4)).removed == 0
    assert history.filter(1.5, busy("rest"), tasks(4)).removed == 0


def test_units_that_arrived_polls_before_a_lease_do_not_explain_it() -> None:
    """The seed: 20 tasks arrive, then a pod joins and leases 2 while they are still read
    pending. The arrival was an interval before the lease: a double count, taken out."""
    history = UseHistory(window_s=10.0)
    history.filter(0.0, [], tasks(0))
    history.filter(1.0, [], tasks(20))
    history.filter(2.0, [node("a", used=0, status=NodeStatus.PENDING)], tasks(20))
    out = history.filter(3.0, busy("a"), tasks(20))
    assert (out.removed, sum(b.count for b in out.demand.bundles)) == (2, 18)
    out = history.filter(4.0, busy("a"), tasks(20))  # still read: still taken out
    assert out.removed == 2


def test_an_arrival_explains_one_rise_only() -> None:
    """One task arrives pending while two pods' use rises by two tasks' worth: one is
    explained, the other (a lease of a task that waited) is taken out."""
    history = UseHistory(window_s=10.0)
    history.filter(0.0, busy("a", "b", used=0), tasks(3))
    out = history.filter(1.0, busy("a", "b", used=5), tasks(4))
    assert out.removed == 1


def test_a_kind_falling_explains_only_its_own_share() -> None:
    """Two kinds pending; one task of each starts on its own pod and the spot kind's owner
    reports at once while the on-demand one is still behind: one task is taken out (the spot
    kind's fall explains one start, not both)."""
    spot = Bundle(TASK, 2, selectors=asking("spot"))
    ondemand = Bundle(TASK, 2, selectors=asking("on-demand"))
    history = UseHistory(window_s=10.0)
    history.filter(0.0, busy("a", "b", used=0), Demand(bundles=(ondemand, spot)))
    out = history.filter(
        1.0, busy("a", "b", used=5), Demand(bundles=(ondemand, replace(spot, count=1)))
    )
    assert out.removed == 1
    assert sum(b.count for b in out.demand.bundles) == 2


def test_an_arrival_read_after_two_rises_explains_one() -> None:
    """A lease of a task that waited (pending as before), then one task arrives as another pod's
    use rises: the arrival explains one of the two rises (it is next to both), not both."""
    history = UseHistory(window_s=10.0)
    history.filter(0.0, busy("a", "b", used=0), tasks(3))
    history.filter(1.0, [node("a", used=5), node("b", used=0)], tasks(3))
    out = history.filter(2.0, busy("a", "b", used=5), tasks(4))
    assert out.removed == 1
