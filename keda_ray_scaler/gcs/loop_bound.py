"""A gRPC client held for the event loop it was made in, dropped after a failure.

A ``grpc.aio`` channel belongs to its event loop: a call from another loop needs a client of its
own. :class:`LoopBound` keeps one client, says whether it belongs to the running loop, and on
:meth:`~LoopBound.reset` lets the calls still running on the dropped channel finish for
:data:`CLOSE_GRACE_S` before it closes. The GCS connection and the head raylet both hold their
client this way.
"""

from __future__ import annotations

import asyncio
from typing import Final, Generic, Protocol, TypeVar

#: How long a replaced channel lets calls still running on it finish before it closes.
CLOSE_GRACE_S: Final = 30.0


class Closable(Protocol):
    """A client whose channel closes with a grace period."""

    async def close(self, grace_s: float | None = None) -> None: ...


C = TypeVar("C", bound=Closable)


class LoopBound(Generic[C]):
    """One client of type ``C``, made in (and valid for) one event loop."""

    def __init__(self) -> None:
        self._client: C | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def held(self) -> C | None:
        """The client, if there is one and it belongs to the running loop."""
        if self._client is None or self._loop is not asyncio.get_running_loop():
            return None
        return self._client

    def hold(self, client: C) -> C:
        """Keep ``client`` for the running loop (the caller has reset any earlier one)."""
        self._client, self._loop = client, asyncio.get_running_loop()
        return client

    def reset(self) -> None:
        """Forget the client after a failure; its channel closes after :data:`CLOSE_GRACE_S`."""
        client, self._client = self._client, None
        if client is None or self._loop is not _running_loop():
            return  # another loop's channel: that loop is gone or owns it
        task = asyncio.get_running_loop().create_task(client.close(CLOSE_GRACE_S))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close the current channel and wait for the replaced ones (at the agent's exit)."""
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
