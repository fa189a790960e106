"""asyncio tasks a test left running: the suite fails such a test (see tests/conftest.py).

A task that outlives its test keeps running on a loop pytest-asyncio is about to close: its
``finally`` never runs, a socket or a child process stays open, and the next test pays for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection

#: grpc.aio ends its own per-RPC tasks a few loop turns after ``server.stop()``; a task still
#: running after this many turns (of 10 ms) is a leak, not a straggler.
GRACE_TURNS = 100


def pending(exclude: Collection[asyncio.Task[object]] = ()) -> list[asyncio.Task[object]]:
    """Tasks of the running loop not done, but the current one and those in ``exclude``."""
    me = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not me and t not in exclude and not t.done()]


async def left_running(exclude: Collection[asyncio.Task[object]] = ()) -> list[str]:
    """The tasks still running after the grace turns (by name and coroutine), else []."""
    left = pending(exclude)
    for _ in range(GRACE_TURNS):
        if not left:
            return []
        await asyncio.sleep(0.01)
        left = pending(exclude)
    return [f"{t.get_name()}: {t.get_coro()!r}" for t in left]
