"""RestartBackoff: the refresher child's restart delays, on a fake clock."""

from __future__ import annotations

from fake_clock import FakeClock

from keda_ray_scaler.rpc.refresh.restart_backoff import RestartBackoff


async def _no_sleep(delay_s: float) -> None:
    """Never waits: the delays are asserted, not slept."""


def test_delays_double_up_to_the_maximum_while_the_child_keeps_exiting() -> None:
    """1, 2, 4, 8, 8: each exit in a row doubles the delay, bounded by most_s."""
    clock = FakeClock(0.0)  # monotonic seconds
    backoff = RestartBackoff(1.0, 8.0, 60.0, clock, _no_sleep)
    delays = []
    for _ in range(5):
        backoff.started()
        clock.advance(1.0)
        delays.append(backoff.exited())
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0]


def test_a_child_that_ran_stable_s_starts_over_at_the_first_delay() -> None:
    """After a run longer than stable_s the next delay is first_s again."""
    clock = FakeClock(0.0)  # monotonic seconds
    backoff = RestartBackoff(1.0, 30.0, 60.0, clock, _no_sleep)
    backoff.started()
    assert backoff.exited() == 1.0
    backoff.started()
    assert backoff.exited() == 2.0
    backoff.started()
    clock.advance(61.0)
    assert backoff.exited() == 1.0
