"""What each node of one parse gave it, kept for the next, so a node that says the same is not
read again.

A reply that says something new is parsed
(:func:`~keda_ray_scaler.agent.ray.ray_status.parse_status`), but most of its nodes say what
they said at the last parse: at 1,000 nodes with a tenth of them changing, reading every node's
resource maps, labels, name and IP again was most of the parse. So each node is read once per
:func:`node_keys` key: its ``NodeState`` serialized (deterministically) without what the GCS
changes at every call (``node_state_version``, ``idle_duration_ms``). What the node gave the
parse is a :class:`NodeSeen`: the worker node it is (:class:`NodeMade`: with its labels'
refusals and whether it is starting), or that it is the head, a dead pod's, or refused, and why.
While the parse maps nodes as the last did (the same pods and their IPs, the same worker groups:
its *context*), a key seen at the last parse gives its very ``NodeSeen``, the node not read at
all; otherwise a live node mapped to the same pod and group is still taken from it. Either way
its idle-since time is kept (:func:`idle_since`): a node holds no idle time of its own
(``WorkerNode.idle_at`` takes it at the poll's time), so an idle node whose Ray state is
unchanged is the very node of the last parse. A key of a parse before the last (a node gone
back to what it said then: busy, idle, busy) gives what it gave then, its idle-since time
computed anew, as a node read anew has it (up to :data:`OLDER_KEPT` keys, in the same context).
Everything else of the parse (the newest node of a pod, the demand) runs at every parse as
before.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import fields
from operator import attrgetter
from typing import Final, NamedTuple

from keda_ray_scaler.agent.ray.refusals import Refused
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import ClusterResourceState
from keda_ray_scaler.model import WorkerNode

#: A node's fields in order, and where its idle time and idle-since time are among them.
_FIELDS: Final = tuple(f.name for f in fields(WorkerNode))
_ALL, _IDLE, _SINCE = (
    attrgetter(*_FIELDS),
    _FIELDS.index("idle_s"),
    _FIELDS.index("idle_since_s"),
)
#: How far a node's idle-since time, computed anew at a poll, may be from the one kept before it
#: is replaced: Ray's ``idle_duration_ms`` is the idle time the raylet last reported plus the
#: time since that report, so it moves by the reports' timing, not only by the clock.
IDLE_SINCE_TOLERANCE_S: Final = 1.0
#: How many keys of parses before the last :class:`NodeMemo` keeps what they gave: a node
#: that goes back to what it said two polls ago (busy, idle, busy) is not read again.
OLDER_KEPT: Final = 4_096
#: The tag of ``ClusterResourceState.node_states`` (field 3, length-delimited) on the wire.
_NODE_STATES_TAG: Final = 3 << 3 | 2


def idle_since(kept_s: float, idle_s: float, now_s: float) -> float:
    """Unix seconds since when a node idle for ``idle_s`` at ``now_s`` is idle: 0 when it is not
    idle; ``kept_s`` (the last poll's, 0 for none) while the new time is within
    :data:`IDLE_SINCE_TOLERANCE_S` of it, so an idle node's export stays the same."""
    if idle_s <= 0:
        return 0.0
    since = now_s - idle_s
    if kept_s > 0 and abs(since - kept_s) <= IDLE_SINCE_TOLERANCE_S:
        return kept_s
    return since


def idle_for(node: WorkerNode, idle_s: float, now_s: float, *, keep: bool = True) -> WorkerNode:
    """``node`` idle for ``idle_s`` at ``now_s``: its idle-since time, kept (:func:`idle_since`;
    computed anew unless ``keep``), and no idle time of its own; ``node`` itself when that is
    what it holds (``dataclasses.replace`` at half its cost otherwise)."""
    since = idle_since(node.idle_since_s if keep else 0.0, idle_s, now_s)
    if since == node.idle_since_s and node.idle_s == 0:
        return node
    values = list(_ALL(node))
    values[_IDLE], values[_SINCE] = 0.0, since
    return WorkerNode(*values)


def node_keys(state: ClusterResourceState) -> tuple[bytes, ...]:
    """Each node of ``state``, in its order, serialized without its ``node_state_version`` and
    ``idle_duration_ms`` (zeroed for the serialization, set back after: ``state`` is left as
    it was)."""
    keys = []
    for ns in state.node_states:
        idle, version = ns.idle_duration_ms, ns.node_state_version
        ns.idle_duration_ms = ns.node_state_version = 0
        keys.append(ns.SerializeToString(deterministic=True))
        ns.idle_duration_ms, ns.node_state_version = idle, version
    return tuple(keys)


def keys_in(steady: bytes, count: int) -> tuple[bytes, ...] | None:
    """The :func:`node_keys` of a state whose steady part
    (:func:`~keda_ray_scaler.agent.ray.status_memo.steady_part`) is ``steady`` and which lists
    ``count`` nodes, cut from those bytes: a node's serialization inside its state's is its own,
    and its state's first fields (the counters, zeroed, are not written). None when the bytes
    do not start with ``count`` nodes (then :func:`node_keys` serializes each)."""
    keys, at = [], 0
    try:
        for _ in range(count):
            if steady[at] != _NODE_STATES_TAG:
                return None
            size, at = _varint(steady, at + 1)
            keys.append(steady[at : at + size])
            at += size
    except IndexError:
        return None
    return tuple(keys) if at <= len(steady) else None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` of ``data``, and where it ends."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


class NodeMade(NamedTuple):
    """One live node as a parse made it: the node, its labels' refusals, whether it is starting
    (resources allocated, no worker busy yet)."""

    node: WorkerNode
    refused: tuple[Refused, ...]
    starting: bool


class NodeSeen(NamedTuple):
    """What one node of a reply gave its parse (a tuple: one a node at every parse): its id (hex),
    the worker node it is (None for the head, a dead node and a node refused), the refusals of
    its id or name, the pod a dead node names, the pod it contests (its name, from another IP),
    whether it is unmapped."""

    node_id: str
    made: NodeMade | None = None
    refused: tuple[Refused, ...] = ()
    dead: str = ""
    contested: str = ""
    unmapped: bool = False


class NodeMemo:
    """What each node of the last parse gave it, by :func:`node_keys` key; a parse in progress
    keeps its own (module doc)."""

    def __init__(self) -> None:
        self._last: dict[bytes, NodeSeen] = {}
        self._older: dict[bytes, NodeSeen] = {}  # of parses before the last, oldest first
        self._now: dict[bytes, NodeSeen] = {}
        self._context: object = None  # what the last parse mapped the nodes with
        self._same = False  # whether the parse in progress maps them with the same
        self._now_s = 0.0  # the parse's time: the nodes' idle-since times are computed at it
        self._idle_ms: Sequence[int] = ()
        #: the reply's nodes' keys, in its order (:func:`node_keys`), for the parse in progress
        self.keys: Sequence[bytes] = ()
        #: each node's id, in the reply's order, of the last parse
        self.ids: tuple[str, ...] = ()
        self._ids: list[str] = []
        #: nodes taken from the last parse (the tests' and the bench's count)
        self.reused = 0

    def start(
        self, keys: Sequence[bytes], idle_ms: Sequence[int], now_s: float, context: object
    ) -> None:
        """A parse of a reply whose nodes have ``keys`` and are idle ``idle_ms`` begins, at
        ``now_s`` (unix seconds), mapping them with ``context`` (compared with ``==``)."""
        self.keys, self._idle_ms, self._now_s, self._now = keys, idle_ms, now_s, {}
        self._same, self._context, self._ids = context == self._context, context, []
        if not self._same:
            self._older = {}

    def seen(self, i: int) -> NodeSeen | None:
        """What the reply's node ``i`` gave the last parse, taken for this one, its idle-since
        time moved to this reply's idle time (:func:`idle_for`); None when the last parse had
        another context, saw no such node, or this one already took it (a node listed twice
        must be two nodes: the parse tells them apart by identity)."""
        key = self.keys[i]
        seen = self._last.get(key) if self._same else None
        keep = seen is not None
        if not keep and self._same:
            seen = self._older.get(key)
        if seen is None or key in self._now:
            return None
        self.reused += 1
        made = seen.made
        if made is not None:
            node = idle_for(made.node, self._idle_ms[i] / 1000.0, self._now_s, keep=keep)
            if node is not made.node:
                seen = seen._replace(made=made._replace(node=node))
        self.saw(i, seen)
        return seen

    def saw(self, i: int, seen: NodeSeen) -> NodeSeen:
        """The reply's node ``i`` gave ``seen``: kept for the next parse; ``seen``."""
        self._now[self.keys[i]] = seen
        self._ids.append(seen.node_id)
        return seen

    def made(self, i: int, pod: str, group: str, make: Callable[[], NodeMade]) -> NodeMade:
        """The live node ``i`` of the reply is, mapped to ``pod`` and ``group``: the last parse's
        node of the same key, pod and group, else ``make()`` (as :meth:`seen`, a node listed
        twice is made twice); its idle-since time as :meth:`seen` moves it."""
        key = self.keys[i]
        last = self._last.get(key)
        made = last.made if last is not None and key not in self._now else None
        if made is None or (made.node.pod, made.node.group) != (pod, group):
            made = make()
        else:
            self.reused += 1
        node = idle_for(made.node, self._idle_ms[i] / 1000.0, self._now_s)
        return made if node is made.node else made._replace(node=node)

    def finish(self) -> None:
        """The parse is done: what its nodes gave it is what is kept, and what the nodes of
        the parses before gave them, up to :data:`OLDER_KEPT`."""
        older = self._older
        for key, seen in self._last.items():
            if key not in self._now:
                older.pop(key, None)
                older[key] = seen
        for key in [k for k in older if k in self._now]:
            del older[key]
        for key in list(itertools.islice(older, max(len(older) - OLDER_KEPT, 0))):
            del older[key]
        self._last, self._now, self.keys, self._idle_ms = self._now, {}, (), ()
        self.ids, self._ids = tuple(self._ids), []
