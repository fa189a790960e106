"""Refused values from Ray counted at each poll, and each distinct one logged once.

What :mod:`~keda_ray_scaler.agent.ray.refusals` left out of a poll is shown to
:class:`RefusalLog`: ``ray_scaler_agent_ray_input_refused_total{cluster, reason}`` counts it at
each poll that read it (a malformed KV value that stays is counted every poll: its rate says it
is still there), and one warning per distinct value says what it was (its first
:data:`LOGGED_CHARS`; the value may be megabytes), with memory bounded by ``remember``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Final

import structlog
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler import schema
from keda_ray_scaler.agent.metric_names import RAY_INPUT_REFUSED
from keda_ray_scaler.agent.ray.refusals import Refused

#: Distinct refused values remembered (by digest) so each is logged once.
DEFAULT_REMEMBER: Final = 4096
#: Characters of a refused value written to the log line.
LOGGED_CHARS: Final = 120

log = structlog.get_logger(__name__)


class LoggedOnce:
    """The keys already logged: at most ``remember``; when full, all are forgotten (so a key may
    be logged again, once per ``remember`` distinct keys: bounded memory and logs)."""

    def __init__(self, remember: int) -> None:
        self._remember = remember
        self._seen: set[object] = set()

    def first(self, key: object) -> bool:
        """True the first time ``key`` is shown (since the last forgetting), then False."""
        if key in self._seen:
            return False
        if len(self._seen) >= self._remember:
            self._seen.clear()
        self._seen.add(key)
        return True


class RefusalLog:
    """Counts every refused value it is shown, and logs each distinct one once.

    Remembers at most ``remember`` values (by reason and digest, :class:`LoggedOnce`).
    """

    def __init__(
        self, registry: CollectorRegistry, cluster: str, remember: int = DEFAULT_REMEMBER
    ) -> None:
        self._counter = Counter(
            RAY_INPUT_REFUSED.removesuffix("_total"),
            "Values read from Ray left out as untrusted, at each poll that read them, by reason "
            "(each distinct value logged once).",
            [schema.LABEL_CLUSTER, schema.LABEL_REASON],
            registry=registry,
        )
        self._cluster = cluster
        self._logged = LoggedOnce(remember)
        self._log = log.bind(cluster=cluster)

    def observe(self, refused: Iterable[Refused]) -> int:
        """Count each of ``refused``; log the ones not seen before; returns how many were new."""
        new = 0
        for r in refused:
            self._counter.labels(self._cluster, r.reason.value).inc()
            key = (r.reason, hashlib.sha256(r.value.encode(errors="replace")).digest()[:16])
            if not self._logged.first(key):
                continue
            new += 1
            self._log.warning(
                "value from Ray refused",
                reason=r.reason.value,
                value=r.value[:LOGGED_CHARS],
                value_chars=len(r.value),
                detail=r.detail[: LOGGED_CHARS * 2],
            )
        return new
