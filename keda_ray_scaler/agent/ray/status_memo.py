"""The last status reply parsed, so a reply that says the same is not parsed again.

Ray's GCS never answers ``GetClusterStatus`` twice alike: at every call it counts its
``cluster_resource_state_version`` up, stamps each node's ``node_state_version`` with it, and
gives each idle node the idle time reported plus the time since that report
(``GcsAutoscalerStateManager``). So a reply is compared without those (:func:`steady_part`):
the state serialized (deterministically) with the counters and idle times zeroed, beside every
other input of :func:`~keda_ray_scaler.agent.ray.ray_status.parse_status` (the pods and their
IPs, R1's task demand, ``request_resources()``'s KV value, the nodes' ages, the worker groups).
When all are equal to the last parse's, its state is the answer, each node's idle-since time
taken from this reply's idle time but kept while within a second of the one computed now (the
very state when no node's moved: a node holds no idle time of its own)
(:func:`~keda_ray_scaler.agent.ray.node_memo.idle_since`: the time exported, so an idle node's
series stays the same); anything else is parsed,
each node that says what it said at the last parse taken from it
(:mod:`~keda_ray_scaler.agent.ray.node_memo`). Nothing of the reply's demand or nodes can be
served stale: everything but the three fields named is compared byte for byte.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from keda_ray_scaler.agent.ray.node_memo import IDLE_SINCE_TOLERANCE_S as TOLERANCE_S
from keda_ray_scaler.agent.ray.node_memo import NodeMemo, idle_for, keys_in, node_keys
from keda_ray_scaler.agent.ray.ray_status import RayState, parse_status
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.agent.ray.task_load import QueuedShape
from keda_ray_scaler.clock import Now
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import (
    ClusterResourceState,
    GetClusterStatusReply,
)
from keda_ray_scaler.model import ClusterSpec, WorkerNode


def steady_part(state: ClusterResourceState) -> tuple[bytes, tuple[int, ...]]:
    """``state`` without what the GCS changes at every call, serialized (deterministic: map
    entries sorted); and each node's ``idle_duration_ms``, in the reply's node order.

    Those fields are zeroed for the serialization and set back after it (a copy of the state
    costs as much again): ``state`` is left as it was."""
    nodes = state.node_states
    saved = [(ns, ns.idle_duration_ms, ns.node_state_version) for ns in nodes]  # one pass
    counters = (state.cluster_resource_state_version, state.last_seen_autoscaler_state_version)
    for ns in nodes:
        ns.idle_duration_ms = ns.node_state_version = 0
    state.cluster_resource_state_version = state.last_seen_autoscaler_state_version = 0
    try:
        return state.SerializeToString(deterministic=True), tuple([s[1] for s in saved])
    finally:
        for ns, idle_ms, version in saved:
            ns.idle_duration_ms = idle_ms
            ns.node_state_version = version
        state.cluster_resource_state_version, state.last_seen_autoscaler_state_version = counters


@dataclass(frozen=True, slots=True)
class _Inputs:
    """Everything a parse depends on but the idle times."""

    steady: bytes
    cluster: ClusterSpec
    v1_requests: bytes | None
    pods: tuple[PodRef, ...] | None
    tasks: tuple[QueuedShape, ...] | None
    first_seen: Mapping[str, int]
    stale: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Parsed:
    """One parse: its inputs, its state, the idle times read, and which node of the state each
    node of the reply is (reply index, state index)."""

    inputs: _Inputs
    state: RayState
    idle_ms: tuple[int, ...]
    places: tuple[tuple[int, int], ...] | None


def _places(ids: Sequence[str], state: RayState) -> tuple[tuple[int, int], ...] | None:
    """Which node of ``state`` each node of the reply (whose node ids, in its order, are
    ``ids``) is; None when a node id is listed twice (then no node can be told from the other:
    such a reply is always parsed)."""
    at = {n.node_id: j for j, n in enumerate(state.nodes)}
    if len(set(ids)) < len(ids) or len(at) < len(state.nodes):
        return None
    return tuple((i, at[nid]) for i, nid in enumerate(ids) if nid in at)


def with_idle(
    last: _Parsed, places: tuple[tuple[int, int], ...], idle_ms: tuple[int, ...], now_s: float
) -> RayState:
    """``last``'s state with each node idle since when ``idle_ms`` says at ``now_s``, its
    idle-since time kept within the tolerance (``places``: which node of the state each of the
    reply's is; pure); ``last``'s state itself when no node's moved."""
    nodes, was = last.state.nodes, last.idle_ms
    out: list[WorkerNode] | None = None
    for i, j in places:
        ms = idle_ms[i]
        if ms == was[i]:
            continue
        node = nodes[j]
        kept = node.idle_since_s  # idle_for's answer for most idle nodes, inline: every node
        if ms > 0 < kept and abs(now_s - ms / 1000.0 - kept) <= TOLERANCE_S and not node.idle_s:
            continue
        moved = idle_for(node, ms / 1000.0, now_s)
        if moved is not node:
            out = list(nodes) if out is None else out
            out[j] = moved
    return last.state if out is None else replace(last.state, nodes=tuple(out))


class StatusMemo:
    """:func:`~keda_ray_scaler.agent.ray.ray_status.parse_status`, not run again for a reply that
    says the same as the last one parsed (module doc); ``now`` (unix seconds) is when a reply is
    read, for the nodes' idle-since times."""

    def __init__(self, now: Now = time.time) -> None:
        self._now = now
        self._last: _Parsed | None = None
        self._nodes = NodeMemo()  # the nodes of the last parse: a parse reads only new ones
        #: how many parses were answered from the last one (the tests' and the bench's count)
        self.reused = 0
        self._read_s = 0.0  # when the last reply was read

    def idle_now(self, nodes: Iterable[WorkerNode]) -> tuple[WorkerNode, ...]:
        """``nodes`` (of the last reply read) each with its idle time when it was read as its
        own ``idle_s`` (``WorkerNode.idle_at``): what a victim's re-check reads."""
        at = self._read_s
        return tuple(n if n.idle_since_s <= 0 else replace(n, idle_s=n.idle_at(at)) for n in nodes)

    @property
    def steady(self) -> bytes | None:
        """The steady part of the last reply parsed (:func:`steady_part`); None before one."""
        return None if self._last is None else self._last.inputs.steady

    def parse(
        self,
        reply: GetClusterStatusReply,
        cluster: ClusterSpec,
        *,
        v1_requests: bytes | None = None,
        pods: Iterable[PodRef] | None = None,
        tasks: Iterable[QueuedShape] | None = None,
        first_seen: Mapping[str, int] | None = None,
        stale: frozenset[str] = frozenset(),
    ) -> RayState:
        """``parse_status`` of these arguments (its signature), from the last parse when only
        the counters and idle times differ."""
        steady, idle_ms = steady_part(reply.cluster_resource_state)
        now_s = self._read_s = self._now()
        inputs = _Inputs(
            steady,
            cluster,
            v1_requests,
            None if pods is None else tuple(pods),
            None if tasks is None else tuple(tasks),
            dict(first_seen or {}),
            stale,
        )
        last = self._last
        if last is not None and last.places is not None and last.inputs == inputs:
            self.reused += 1
            state = (
                last.state
                if idle_ms == last.idle_ms
                else with_idle(last, last.places, idle_ms, now_s)
            )
            self._last = _Parsed(inputs, state, idle_ms, last.places)
            return state
        nodes = reply.cluster_resource_state.node_states
        keys = keys_in(steady, len(nodes)) or node_keys(reply.cluster_resource_state)
        known = frozenset(g.name for g in cluster.worker_groups)
        self._nodes.start(keys, idle_ms, now_s, (inputs.pods, known))
        try:
            state = parse_status(
                reply,
                cluster,
                v1_requests=v1_requests,
                pods=inputs.pods,
                tasks=inputs.tasks,
                first_seen=inputs.first_seen,
                stale=stale,
                memo=self._nodes,
            )
        finally:
            self._nodes.finish()
        ids = self._nodes.ids if len(self._nodes.ids) == len(nodes) else ()
        places = _places(ids, state) if ids or not nodes else None
        self._last = _Parsed(inputs, state, idle_ms, places)
        return state
