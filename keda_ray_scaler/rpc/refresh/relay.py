"""The refresher child's metrics, re-exposed in the RPC process's own ``/metrics``.

Why: the refresh side's series (plan time, refreshes, source errors, data age, targets, the
source's HTTP metrics) live in the refresher child's registry; a scrape reaches only the RPC
process, which asks the child for its exposition and relays it unchanged.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

_METRICS_WAIT_S: Final = 2.0  # a scrape waits this long for the child's registry


class RelayCollector:
    """Re-exposes the child's registry in the parent's, asking the child at every collection.

    The child renders its registry only when asked (a scrape), so an unscraped scaler spends
    nothing on it. A collection waits up to two seconds for the answer, else serves the
    previous one; while no child runs it serves nothing (the series are absent, not stale).
    The answer arrives through the event loop, so a collection on the loop's own thread does
    not wait: it serves the previous answer.
    """

    def __init__(self) -> None:
        self._ask: Callable[[int], bool] | None = None
        self._loop_thread: int | None = None
        self._tokens = itertools.count(1)
        self._answer: tuple[int, str] = (0, "")
        self._arrived = threading.Condition()

    def attach(self, ask: Callable[[int], bool], loop_thread: int) -> None:
        """``ask(token)`` requests the child's exposition (False: no child to ask), answered
        by :meth:`deliver` on the event loop running in thread ``loop_thread``."""
        self._ask = ask
        self._loop_thread = loop_thread

    def deliver(self, token: int, text: str) -> None:
        """The child's exposition for ``token`` (called on the event loop)."""
        with self._arrived:
            self._answer = (token, text)
            self._arrived.notify_all()

    def collect(self) -> Iterator[Metric]:
        token = next(self._tokens)
        if self._ask is None:
            return
        if threading.get_ident() != self._loop_thread:
            if not self._ask(token):
                return  # no child runs
            with self._arrived:
                self._arrived.wait_for(lambda: self._answer[0] >= token, _METRICS_WAIT_S)
        yield from text_string_to_metric_families(self._answer[1])
