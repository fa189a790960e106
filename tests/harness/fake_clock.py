"""The tests' one fake clock: time that moves only when told, for both sides' clock types.

:class:`FakeClock` is both kinds of clock of :mod:`keda_ray_scaler.clock`: the agent's
:class:`~keda_ray_scaler.clock.Clock` (``now()`` and ``async sleep(s)``) and the scaler's
:data:`~keda_ray_scaler.clock.Now` (call it: ``clock()``). The time is the attribute ``t``;
tests move it with :meth:`FakeClock.advance` or by setting ``t``.

What ``sleep(s)`` does is chosen per test, at construction, because tests rely on different
meanings:

- ``advance_on_sleep=True`` (the default): the sleep moves ``t`` on by ``s`` at once, as if the
  time had passed (a loop's interval elapses instantly). ``False``: the time stays where the
  test put it.
- ``yield_on_sleep=False`` (the default): the sleep returns without suspending. ``True``: it
  yields to the event loop once (``asyncio.sleep(0)``), so other tasks run, as in a real sleep.
- Every sleep is recorded, in order, in ``sleeps`` (the ``s`` asked for), whatever the options.

The default start, 1000 s, is the agent tests'; other tests pass their own (the scaler's tests
``rpc_builders.T0``).
"""

from __future__ import annotations

import asyncio


class FakeClock:
    """Fake time at ``t`` (unix seconds), moved only by the test or, if asked, by ``sleep``."""

    def __init__(
        self, t: float = 1000.0, *, advance_on_sleep: bool = True, yield_on_sleep: bool = False
    ) -> None:
        self.t = t
        self.advance_on_sleep = advance_on_sleep
        self.yield_on_sleep = yield_on_sleep
        self.sleeps: list[float] = []

    def now(self) -> float:
        """The fake time (the agent's ``Clock.now``)."""
        return self.t

    def __call__(self) -> float:
        """The fake time (the scaler's ``Now``)."""
        return self.t

    def advance(self, seconds: float) -> None:
        """Move the time forward by ``seconds``."""
        self.t += seconds

    async def sleep(self, s: float) -> None:
        """Record ``s``; then advance by ``s`` and yield once, each as configured."""
        self.sleeps.append(s)
        if self.advance_on_sleep:
            self.advance(s)
        if self.yield_on_sleep:
            await asyncio.sleep(0)
