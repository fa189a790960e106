"""DoublingBackoff: the one doubling, capped wait (join back-off, watch retries, child restarts)."""

from __future__ import annotations

import pytest

from keda_ray_scaler.backoff import DoublingBackoff


def test_the_wait_doubles_with_each_failure_up_to_the_cap() -> None:
    """30, 60, 120, 240, 480, 600, 600: the join back-off's default numbers."""
    backoff = DoublingBackoff(initial_s=30.0, max_s=600.0)
    assert [backoff.delay_s(n) for n in range(1, 8)] == [30, 60, 120, 240, 480, 600, 600]


@pytest.mark.parametrize("failures", [0, -1])
def test_no_failure_means_no_wait(failures: int) -> None:
    """Before the first failure there is nothing to wait for."""
    assert DoublingBackoff(1.0, 8.0).delay_s(failures) == 0.0


def test_a_cap_below_the_first_wait_wins() -> None:
    """The cap bounds every wait, the first one too."""
    assert DoublingBackoff(5.0, 2.0).delay_s(1) == 2.0


@pytest.mark.parametrize("failures", [1024, 1025, 10**6])
def test_any_number_of_failures_gives_the_cap_not_an_overflow(failures: int) -> None:
    """A child that exits for days keeps its capped wait (2.0 ** 1024 overflows a float)."""
    assert DoublingBackoff(1.0, 30.0).delay_s(failures) == 30.0
    assert DoublingBackoff(0.0, 30.0).delay_s(failures) == 0.0
