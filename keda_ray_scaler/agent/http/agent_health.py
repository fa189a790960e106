"""Is the agent doing its job? ``/healthz``'s decision: the age of the last successful poll.

``/metrics`` keeps answering whatever the poll loop does (it serves the last snapshot), so a
probe on it says only that the process runs. A probe on ``/healthz`` says that Ray was read
recently: it fails when the last successful poll is older than ``max_age_s``, i.e. when Ray has
been unreadable, or the loop has stopped or hangs, for that long. Readiness then takes the head
pod out of its Services, and liveness restarts the agent container.

A head running a Ray version the agent refuses (:mod:`keda_ray_scaler.gcs.versions`) is no
reason to restart the agent: it stays up, reads nothing else from that head, exports no fresh
data (``snapshot_success`` 0: the scaler answers UNAVAILABLE, never zero) and asks the version
again at each poll. While that refusal is recent it is :attr:`Health.REFUSED`: ``/healthz``
(liveness) answers 200 and ``/readyz`` (readiness) 503, both naming the version and the range;
a later successful poll (a head restarted on a supported Ray) ends it.

The decision is pure (:func:`check`, the time is an argument); :class:`HealthProbe` reads the
loop's snapshot, the last refusal (:class:`HeadRefusal`) and the clock for the HTTP server
(``agent/http/metrics_server.py``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, Protocol

from keda_ray_scaler import schema
from keda_ray_scaler.clock import Clock

#: Default ``--health-intervals``: stale after this many poll intervals without a success.
DEFAULT_INTERVALS: Final = 3.0
#: The least ``max_age_s``, whatever the interval: a GCS restarting (the head's GCS process
#: restarted in place, or a slow start) must not fail the probe and restart the agent with it.
MIN_MAX_AGE_S: Final = 30.0


def max_age_s(intervals: float, interval_s: float) -> float:
    """The age beyond which the agent is unhealthy: ``intervals`` polls, at least 30 s."""
    return max(intervals * interval_s, MIN_MAX_AGE_S)


class Health(enum.StrEnum):
    """The verdict of one check."""

    FRESH = "fresh"  # the last successful poll is recent enough
    STARTING = "starting"  # no success yet, but started less than max_age_s ago
    STALE = "stale"  # no success for more than max_age_s: the probe fails
    #: the head's Ray refused at a recent poll, no success since: alive, but not ready
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class HealthCheck:
    """A verdict and its one-line reason (the body of the ``/healthz`` answer)."""

    health: Health
    reason: str

    @property
    def ok(self) -> bool:
        """Alive (``/healthz``): True unless stale."""
        return self.health is not Health.STALE

    @property
    def ready(self) -> bool:
        """Ready (``/readyz``): neither stale nor refused."""
        return self.health not in (Health.STALE, Health.REFUSED)


@dataclass(frozen=True, slots=True)
class HeadRefused:
    """The last time the head was refused (unix seconds), and why (one line)."""

    at_s: float
    reason: str


class HeadRefusal:
    """The reader's ``on_unsupported``: keeps the last refusal of the head, with its time."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.last: HeadRefused | None = None

    def refuse(self, problem: Exception) -> None:
        """The head was refused now, for ``problem``."""
        self.last = HeadRefused(self._clock.now(), str(problem))


def check(
    last_success_s: float | None,
    started_s: float,
    now_s: float,
    max_age_s: float,
    refused: HeadRefused | None = None,
) -> HealthCheck:
    """The verdict at ``now_s`` (unix seconds); ``last_success_s`` None: no success yet;
    ``refused``: the head's last refusal, REFUSED while within ``max_age_s`` and after the last
    success (an older one with no success since: the loop stopped, STALE)."""
    if refused is not None and (last_success_s is None or refused.at_s > last_success_s):
        age = now_s - refused.at_s
        if age <= max_age_s:
            return HealthCheck(
                Health.REFUSED, f"{refused.reason}: nothing read (refused {age:.1f} s ago)"
            )
    if last_success_s is None:
        age = now_s - started_s
        if age <= max_age_s:
            return HealthCheck(Health.STARTING, f"no successful poll yet, started {age:.1f} s ago")
        return HealthCheck(
            Health.STALE,
            f"no successful poll in the {age:.1f} s since the start (max {max_age_s:g} s)",
        )
    age = now_s - last_success_s
    if age <= max_age_s:
        return HealthCheck(Health.FRESH, f"last successful poll {age:.1f} s ago")
    return HealthCheck(Health.STALE, f"last successful poll {age:.1f} s ago (max {max_age_s:g} s)")


class SnapshotSource(Protocol):
    """What the probe reads: the poll loop (``AgentLoop``), or a fake."""

    @property
    def snapshot(self) -> schema.ClusterSnapshot: ...


class HealthProbe:
    """``check`` on the loop's current snapshot and the head's last refusal (``head``, when
    the reader checks the version); the start is when the probe was made."""

    def __init__(
        self,
        loop: SnapshotSource,
        clock: Clock,
        max_age_s: float,
        head: HeadRefusal | None = None,
    ) -> None:
        self._loop = loop
        self._clock = clock
        self._max_age_s = max_age_s
        self._started_s = clock.now()
        self._head = head

    def __call__(self) -> HealthCheck:
        """The verdict now."""
        snap = self._loop.snapshot
        # A failed poll keeps the time of the last success; time 0 means no success yet.
        last = snap.snapshot_time_s if snap.snapshot_time_s > 0 else None
        refused = self._head.last if self._head is not None else None
        return check(last, self._started_s, self._clock.now(), self._max_age_s, refused)
