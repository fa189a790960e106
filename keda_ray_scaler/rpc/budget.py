"""A token bucket on an injected clock: how many rechecks of unknown Ray clusters per second.

A ScaledObject may name a Ray cluster that does not exist (a typo, or on purpose, many times).
Each check costs the data source queries (Prometheus: two), so the rechecks of clusters found
unknown share one :class:`TokenBucket`: at most ``rate_per_s`` on average, ``burst`` at once,
whatever the number of names. Pure: time is an argument.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class TokenBucket:
    """``rate_per_s`` tokens a second, at most ``burst`` saved; starts full."""

    rate_per_s: float
    burst: float
    _tokens: float = -1.0
    _at_s: float | None = None

    def __post_init__(self) -> None:
        if not self.rate_per_s > 0 or not self.burst >= 1:
            raise ValueError(f"need rate_per_s > 0 and burst >= 1, got {self}")
        self._tokens = self.burst

    def take(self, now_s: float) -> bool:
        """Spend one token at ``now_s``; False (nothing spent) when none is left."""
        if self._at_s is not None:
            self._tokens = min(self.burst, self._tokens + (now_s - self._at_s) * self.rate_per_s)
        self._at_s = now_s
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
