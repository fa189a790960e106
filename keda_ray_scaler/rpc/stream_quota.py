"""Open ExternalScaler streams counted per client address and per connection, each bounded.

A ``StreamIsActive`` or ``StreamMetricSpec`` stays open for as long as the client likes and holds
one of the server's ``--max-concurrent-rpcs`` slots. Unbounded, one client opening thousands of
them leaves none for KEDA. :class:`StreamQuota` admits a stream only while its connection holds
fewer than ``per_connection`` and its client address fewer than ``per_peer``; a refusal is a
typed :class:`StreamRefusal` naming the bound, which the caller turns into RESOURCE_EXHAUSTED.

A connection is grpc's peer string (``ipv4:10.0.0.7:41234``: address and source port), a
client address the same without the port (:func:`peer_address`). The server's one event loop is
the only caller, so the counts need no lock; an address or connection with no open stream is
forgotten, so the tables hold only what is open.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from keda_ray_scaler.errors import Limit


def peer_address(peer: str) -> str:
    """The client address of grpc's peer string, without the port.

    ``ipv4:10.0.0.7:41234`` -> ``10.0.0.7``; ``ipv6:[fd00::7]:41234`` (or percent-encoded, as
    newer grpc writes it) -> ``fd00::7``; anything else (``unix:...``) is its own address.
    """
    scheme, _, rest = peer.partition(":")
    if scheme in ("ipv4", "ipv6"):
        host, colon, port = unquote(rest).rpartition(":")
        if colon and port.isdigit():
            return host.removeprefix("[").removesuffix("]")
    return peer


@dataclass(frozen=True, slots=True)
class StreamRefusal:
    """A stream refused: the bound reached (a metric label) and the text the client gets."""

    limit: Limit
    message: str


class StreamQuota:
    """Open streams per connection and per client address; at most ``per_connection`` and
    ``per_peer`` at once."""

    def __init__(self, *, per_peer: int, per_connection: int) -> None:
        for name, value in (("per_peer", per_peer), ("per_connection", per_connection)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self._per_peer = per_peer
        self._per_connection = per_connection
        self._by_peer: dict[str, int] = {}
        self._by_connection: dict[str, int] = {}

    def open(self, peer: str) -> StreamRefusal | None:
        """Count one more stream of ``peer`` (grpc's peer string), or the bound it would pass
        (nothing counted then)."""
        address = peer_address(peer)
        if self._by_connection.get(peer, 0) >= self._per_connection:
            return StreamRefusal(
                Limit.STREAMS_PER_CONNECTION,
                f"at most {self._per_connection} streams at once on one connection "
                "(--max-streams-per-connection)",
            )
        if self._by_peer.get(address, 0) >= self._per_peer:
            return StreamRefusal(
                Limit.STREAMS_PER_PEER,
                f"at most {self._per_peer} streams at once from one client address "
                "(--max-streams-per-peer)",
            )
        self._by_connection[peer] = self._by_connection.get(peer, 0) + 1
        self._by_peer[address] = self._by_peer.get(address, 0) + 1
        return None

    def close(self, peer: str) -> None:
        """One stream of ``peer`` ended (one that :meth:`open` admitted)."""
        _decrement(self._by_connection, peer)
        _decrement(self._by_peer, peer_address(peer))

    def open_streams(self, peer: str) -> tuple[int, int]:
        """``(on peer's connection, from its address)``: what is open now."""
        return self._by_connection.get(peer, 0), self._by_peer.get(peer_address(peer), 0)


def _decrement(counts: dict[str, int], key: str) -> None:
    left = counts.get(key, 0) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)
