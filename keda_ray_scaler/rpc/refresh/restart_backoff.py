"""When to start the refresher child again after it exited: the doubling back-off
(:class:`~keda_ray_scaler.backoff.DoublingBackoff`) over the exits in a row.

Why a type of its own, with the clock and the sleep injected: the delay depends on how long the
child ran (a child that ran ``stable_s`` is not "failing again" and starts over at ``first_s``),
so tests drive it with a fake clock and a recording sleep instead of waiting out real seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from keda_ray_scaler.backoff import DoublingBackoff
from keda_ray_scaler.clock import Now, Sleep


@dataclass(slots=True)
class RestartBackoff:
    """Delays of ``first_s``, doubling up to ``most_s`` for each exit in a row."""

    first_s: float
    most_s: float
    stable_s: float  # a child that ran this long restarts after ``first_s`` again
    clock: Now  # monotonic seconds
    sleep: Sleep
    _failures: int = field(default=0, init=False)  # exits in a row: the delay doubles with each
    _started_s: float = field(default=0.0, init=False)

    def started(self) -> None:
        """A child is being started now."""
        self._started_s = self.clock()

    def exited(self) -> float:
        """The child exited: the delay before the next start (seconds)."""
        if self.clock() - self._started_s > self.stable_s:
            self._failures = 0
        self._failures += 1
        return DoublingBackoff(self.first_s, self.most_s).delay_s(self._failures)
