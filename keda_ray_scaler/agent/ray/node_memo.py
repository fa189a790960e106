"""The worker nodes one parse made, kept for the next, so a node that says the same is not read
again.

A reply that says something new is parsed whole
(:func:`~keda_ray_scaler.agent.ray.ray_status.parse_status`), but most of its nodes say what
they said at the last parse: at 1,000 nodes with a tenth of them changing, reading every node's
resource maps and labels again was two thirds of the parse. So each live node is read once per
:func:`node_key`: its ``NodeState`` serialized (deterministically) without what the GCS changes
at every call (``node_state_version``, ``idle_duration_ms``), beside the pod and group it was
mapped to. The same key gives the same node, its idle-since time kept (:func:`idle_since`):
a node holds no idle time of its own (``WorkerNode.idle_at`` takes it at the poll's time), so
an idle node whose Ray state is unchanged is the very node of the last parse. The node's
labels' refusals and whether it is starting are kept with it. Everything else of the parse (the
mapping to pods, the rules of :mod:`~keda_ray_scaler.agent.ray.refusals` on names and IPs, the
newest node of a pod) runs at every parse as before. Only the last parse's nodes are kept.
"""

from __future__ import annotations

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


def idle_for(node: WorkerNode, idle_s: float, now_s: float) -> WorkerNode:
    """``node`` idle for ``idle_s`` at ``now_s``: its idle-since time, kept (:func:`idle_since`),
    and no idle time of its own; ``node`` itself when that is what it holds
    (``dataclasses.replace`` at half its cost otherwise)."""
    since = idle_since(node.idle_since_s, idle_s, now_s)
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


#: What a live node was made of: its :func:`node_key`, and the pod and group it was mapped to.
NodeKey = tuple[bytes, str, str]


class NodeMade(NamedTuple):
    """One live node as a parse made it: the node, its labels' refusals, whether it is starting
    (resources allocated, no worker busy yet)."""

    node: WorkerNode
    refused: tuple[Refused, ...]
    starting: bool


class NodeMemo:
    """The nodes the last parse made, by :data:`NodeKey`; a parse in progress keeps its own."""

    def __init__(self) -> None:
        self._last: dict[NodeKey, NodeMade] = {}
        self._now_s = 0.0  # the parse's time: the nodes' idle-since times are computed at it
        self._now: dict[NodeKey, NodeMade] = {}
        #: the reply's nodes' keys, in its order (:func:`node_keys`), for the parse in progress
        self.keys: Sequence[bytes] = ()
        #: nodes taken from the last parse (the tests' and the bench's count)
        self.reused = 0

    def start(self, keys: Sequence[bytes], now_s: float) -> None:
        """A parse of a reply whose nodes have ``keys`` begins, at ``now_s`` (unix seconds)."""
        self.keys, self._now, self._now_s = keys, {}, now_s

    def made(self, key: NodeKey, idle_s: float, make: Callable[[], NodeMade]) -> NodeMade:
        """The node ``key`` was made into at the last parse, idle for ``idle_s``; ``make()``
        when the last parse made no such node, or this one already took it (a node listed twice
        must be two nodes: the parse tells them apart by identity). Either way its idle-since
        time is the last parse's while within the tolerance (:func:`idle_for`). Kept for the
        next parse."""
        made = self._last.get(key)
        if made is None or key in self._now:
            made = make()
        else:
            self.reused += 1
        node = idle_for(made.node, idle_s, self._now_s)
        if node is not made.node:
            made = made._replace(node=node)
        self._now[key] = made
        return made

    def finish(self) -> None:
        """The parse is done: its nodes are the ones kept."""
        self._last, self._now, self.keys = self._now, {}, ()
