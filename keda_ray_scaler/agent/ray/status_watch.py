"""The look between polls: the cheap reads that say whether a poll would read anything new.

Ray 2.60's GCS offers nothing cheaper that covers demand: ``GetClusterResourceState`` takes a
``last_seen_cluster_resource_state_version`` but only checks it, and builds and sends the whole
state anyway (``GcsAutoscalerStateManager::HandleGetClusterResourceState``); the version counts
up at every call, changed or not; the GCS's pubsub publishes nodes added and dead
(``GCS_NODE_INFO_CHANNEL``) but no demand. So a look makes two reads and compares each with what
the last poll read (:class:`Seen`):

1. with rule R1, the head raylet's own queue (``GetResourceLoad``, a few KB; drivers submit
   there): a task queued at the head is seen at the next look, not after the GCS's next pull of
   the loads (every second, ``gcs_pull_resource_loads_period_milliseconds``). A failed read here
   decides nothing: the GCS's reply does;
2. ``GetClusterStatus`` as bytes, its look form (:func:`~keda_ray_scaler.gcs.steady.look_form`:
   without the counters and idle times the GCS changes at every call, nor each node's use)
   against the form of the reply the last poll read
   (:func:`~keda_ray_scaler.agent.ray.status_memo.steady_part`).

Only what must be planned at once wakes a poll: demand that rose (a queue holds more of a
shape, a new placement group) and nodes that changed (added, gone, status, totals, labels), or
the constraints and the session. Use that moved (tasks that started or ended) and demand that
fell raise nothing, and wait for the next poll: under a steady stream of tasks (the bench's
200 tasks on 20 pods) every look saw one of those, and the agent polled every half second for
nothing new to plan.

The head's queue is read at every look; the GCS's reply at most every ``status_every_s``
(1 s: the GCS pulls the raylets' loads as often, so a faster read mostly sees what it saw), and
at every look the head's read cannot answer (no head read with demand ``gcs``, or a failed one).
A look that read only the head's unchanged queue is :attr:`Look.SAME` for what it read. A look
costs about 0.5 ms of CPU at 10 nodes and 2 ms at 1,000 with both reads (0.3 and 1.4 for the
GCS's alone; ``python -m bench agent``); a real look over gRPC about 1.8 ms with both.
A look never publishes anything: it stamps no data fresh (only a poll does), and a look that
cannot read the GCS is :attr:`Look.FAILED`, never :attr:`Look.SAME`. What neither read holds
(the pods, the worker groups, the time-bound demand filter, idle times) waits for the poll at
``--interval``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final, Protocol

from google.protobuf.message import DecodeError

from keda_ray_scaler.agent.ray.task_load import NodeLoad, node_load, task_load
from keda_ray_scaler.agent.ray.task_load_read import RayletRead
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs.raylet import NodeInfoApi
from keda_ray_scaler.gcs.steady import LookForm, look_form, look_form_of_state

#: Seconds between two reads of the GCS's reply by the looks, when the head's queue answers:
#: the GCS pulls the raylets' loads as often (``gcs_pull_resource_loads_period_milliseconds``).
STATUS_EVERY_S: Final = 1.0


class Look(Enum):
    """What one look between polls saw."""

    #: nothing a poll must see at once: what the last poll read, or only use moved (tasks that
    #: started or ended) and demand fell; the next poll (``--interval``, or an idle timeout's)
    #: sees it
    SAME = "same"
    #: demand rose (a shape queued more, a new placement group), or a node, its status,
    #: totals or labels, the constraints or the session changed
    CHANGED = "changed"
    #: the GCS could not be read: unknown, which is never "same"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Seen:
    """What the last poll read that a look compares with: the steady part of its status reply
    (None: no poll read one) and the head raylet's queue (None: not read, e.g. demand ``gcs``)."""

    steady: bytes | None = None
    head: NodeLoad | None = None


class LookApi(NodeInfoApi, Protocol):
    """The GCS calls a look makes (:class:`~keda_ray_scaler.gcs.client.GcsClient`)."""

    async def get_cluster_status_bytes(self, timeout_s: float) -> bytes: ...


class Connection(Protocol):
    """Where the client comes from (:class:`~keda_ray_scaler.gcs.client.GcsConnection`)."""

    def get(self) -> LookApi: ...

    def reset(self) -> None: ...


class StatusWatch:
    """Looks at the GCS of ``gcs`` and the head's ``raylet`` (the reader's, shared), ``every_s``
    apart as the loop asks, against ``seen()``: what the last poll read."""

    def __init__(
        self,
        gcs: Connection,
        seen: Callable[[], Seen],
        raylet: RayletRead,
        *,
        every_s: float,
        timeout_s: float,
        status_every_s: float = STATUS_EVERY_S,
    ) -> None:
        self._gcs = gcs
        self._seen = seen
        self._raylet = raylet
        self.every_s = every_s
        self._timeout_s = timeout_s
        #: looks between two reads of the GCS's reply when the head's queue answers
        self._status_every = max(1, round(status_every_s / every_s)) if every_s > 0 else 1
        self._since_status = self._status_every  # the first look reads it
        #: looks made, by what they saw (the tests' and the bench's count)
        self.seen: dict[Look, int] = dict.fromkeys(Look, 0)
        #: GCS replies read by looks (the tests' and the bench's count)
        self.status_reads = 0
        self._form_of: bytes | None = None  # the poll's steady part whose form is ``_form``
        self._form = LookForm(b"", Counter())

    async def look(self) -> Look:
        """One look: :attr:`Look.SAME` only when what it read says what the last poll read."""
        seen = self._seen()
        rose = None if seen.head is None else await self._head_rose(seen.head)
        self._since_status += 1
        if rose:
            look = Look.CHANGED
        elif rose is None or seen.steady is None or self._since_status >= self._status_every:
            self._since_status = 0
            self.status_reads += 1
            look = await self._status(seen.steady)
        else:
            look = Look.SAME
        self.seen[look] += 1
        return look

    async def _head_rose(self, head: NodeLoad) -> bool | None:
        """Whether the head raylet's queue holds more of a shape than ``head``; None when it
        cannot be read."""
        try:
            load = await self._raylet.resource_load(self._gcs.get(), head.node_id, self._timeout_s)
        except RayError:
            return None
        had = {(q.shape, q.selectors): q.count for q in head.queued}
        now = task_load([node_load(load)], ())
        return any(q.count > had.get((q.shape, q.selectors), 0) for q in now)

    async def _status(self, steady: bytes | None) -> Look:
        """The GCS's reply against the steady part ``steady`` of the last poll's."""
        try:
            raw = await self._gcs.get().get_cluster_status_bytes(self._timeout_s)
        except RayError:
            self._gcs.reset()  # as a failed read: the next call makes a new channel
            return Look.FAILED
        if steady is None:
            return Look.CHANGED
        try:
            return Look.CHANGED if look_form(raw).rose_from(self._before(steady)) else Look.SAME
        except DecodeError:  # no reply: the poll reads it and says why
            return Look.CHANGED

    def _before(self, steady: bytes) -> LookForm:
        """The look form of the last poll's steady part, made once per poll."""
        if steady is not self._form_of:
            self._form_of, self._form = steady, look_form_of_state(steady)
        return self._form
