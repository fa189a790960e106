"""The one doubling back-off: the wait after ``n`` failures in a row, doubling, capped.

Three waits use it, each with its own numbers and its own count of failures: a group whose pods
do not join Ray (:mod:`keda_ray_scaler.agent.joining.joins`), a watch that keeps failing
(:mod:`keda_ray_scaler.agent.kube.list_watch`) and a refresher child that keeps exiting
(:mod:`keda_ray_scaler.rpc.refresh.restart_backoff`). Pure: the caller counts the failures and
keeps the time.

Why not tenacity's ``wait_exponential``, which computes the same numbers: its wait strategies
take a ``RetryCallState``, the attempts of one call, made by a ``Retrying`` object and reading
the monotonic clock when made. These waits span many calls, polls and processes, and what they
carry is a count (in a frozen value, for the join back-off), so the count is the input here.
tenacity stays the policy for the retries inside one call
(:func:`keda_ray_scaler.agent.kube.kube_retry.backoff`, the sources' retries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: 2.0 ** 1024 overflows a float; by then any cap is long reached.
_MOST_DOUBLINGS: Final = 1023


@dataclass(frozen=True, slots=True)
class DoublingBackoff:
    """``initial_s`` after the first failure, doubling with each failure in a row, at most
    ``max_s``."""

    initial_s: float
    max_s: float

    def delay_s(self, failures: int) -> float:
        """The wait after ``failures`` failures in a row (none after none)."""
        if failures < 1:
            return 0.0
        doublings = min(failures - 1, _MOST_DOUBLINGS)
        return min(self.initial_s * 2.0**doublings, self.max_s)
