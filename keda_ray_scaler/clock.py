"""Time, injected: the one home of the types every time-dependent part takes as an argument.

Why: decisions never read the clock themselves (tests run on fake time), so each part is given
time. The scaler's parts take the two functions they use (:data:`Now`, :data:`Sleep`); the
agent's take one :class:`Clock` object holding both. Both are defined here, once, so the two
sides cannot grow two meanings of "clock".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

#: Seconds now: unix seconds for anything compared with an agent's snapshot time (those are
#: unix seconds), monotonic seconds where only durations matter.
Now = Callable[[], float]
#: Sleep this many seconds without blocking the event loop.
Sleep = Callable[[float], Awaitable[None]]


@runtime_checkable
class Clock(Protocol):
    """Time, injected. ``now`` is unix seconds (also used for drain deadlines)."""

    def now(self) -> float: ...

    async def sleep(self, s: float) -> None: ...


class SystemClock:
    """The real clock: ``time.time`` and ``asyncio.sleep``. Built only by the CLI."""

    def now(self) -> float:
        """Unix time in seconds."""
        return time.time()

    async def sleep(self, s: float) -> None:
        """Sleep ``s`` seconds without blocking the event loop."""
        await asyncio.sleep(s)
