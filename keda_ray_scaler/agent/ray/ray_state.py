"""Ray's view of one cluster: pending demand and worker nodes, read from the GCS.

One RPC per poll, ``AutoscalerStateService/GetClusterStatus`` (:mod:`keda_ray_scaler.gcs.client`;
the call behind Ray's ``GcsClient.get_cluster_status()`` and
``ray.autoscaler.v2.sdk.get_cluster_status``), gives the snapshot S: nodes, placement groups,
constraints and Ray's summed task demand. By default (:attr:`DemandRead.EXACT`) the task and
actor demand is not S's sum but rule R1's, read after S: the head raylet's queue read directly
and the other nodes' queues from the GCS (:mod:`~keda_ray_scaler.agent.ray.task_load`, two RPCs
more), so a task starting on a fresh node is never both pending and running; when those reads
fail the poll keeps S's sum and says why (``RayState.fallback``).
The reply's raw state is parsed by :mod:`~keda_ray_scaler.agent.ray.ray_status` (pure), not again
when it says what the last one did (:mod:`~keda_ray_scaler.agent.ray.status_memo`).

The agent command's reader first reads the head's Ray version (the internal KV key
``CLUSTER_METADATA``) and refuses one outside the supported range, or a value that is no
metadata (:mod:`keda_ray_scaler.gcs.versions`; any task may write the key): the poll fails, reads
nothing else, and the version is read again at the next poll, so a head restarted on a
supported Ray is read again. A supported version, once read, holds for that head: the GCS's
session (``cluster_session_name``, new at each start of a GCS) names it, so neither a failed
call nor a task rewriting the key later makes the agent read it again; a reply of another
session (a restarted head, which may run another Ray) has the version read before it is parsed.
What Ray sent that the agent refuses (:mod:`~keda_ray_scaler.agent.ray.refusals`) is counted and
logged once by the reader's :class:`~keda_ray_scaler.agent.ray.refusal_log.RefusalLog`.

The messages are Ray 2.60's; every version from 2.10 reads the same way (``min_bundles``, the
constraints' field before 2.41, is ``resource_requests``'s field number), as
``tests/real/ray/test_ray_versions.py`` shows against each.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from enum import StrEnum
from typing import TYPE_CHECKING, Final, Protocol

from keda_ray_scaler.agent.interfaces import SpecView, spec_view
from keda_ray_scaler.agent.ray.node_ages import NodeAges
from keda_ray_scaler.agent.ray.ray_status import V1_REQUEST_KEY, RayState
from keda_ray_scaler.agent.ray.refusals import Refusal, Refused
from keda_ray_scaler.agent.ray.status_memo import StatusMemo
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.agent.ray.status_watch import Seen
from keda_ray_scaler.agent.ray.task_load import NodeLoad
from keda_ray_scaler.agent.ray.task_load_read import (
    LoadsApi,
    RayletRead,
    read_task_load,
)
from keda_ray_scaler.clock import Now
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import (
    GetClusterStatusReply,
)
from keda_ray_scaler.gcs.client import GcsConnection
from keda_ray_scaler.gcs.raylet import HeadRaylet
from keda_ray_scaler.gcs.versions import (
    CLUSTER_METADATA_KEY,
    CLUSTER_NAMESPACE,
    MalformedClusterMetadata,
    UnsupportedRayVersion,
    parse_cluster_metadata,
    unsupported,
)
from keda_ray_scaler.model import (
    ClusterSpec,
    WorkerNode,
)

if TYPE_CHECKING:  # the log brings prometheus_client and structlog: --help reads this module
    from keda_ray_scaler.agent.ray.refusal_log import RefusalLog

#: Seconds between the agent's polls by default (``--interval``): Ray's autoscaler reads the GCS
#: as often (its ``AUTOSCALER_UPDATE_INTERVAL_S``).
POLL_INTERVAL_S: Final = 5.0
#: Seconds between the looks at the GCS between polls by default (``--watch-interval``; 0: none):
#: a change of demand or nodes is polled within this, not at the next ``--interval``.
WATCH_INTERVAL_S: Final = 0.5
#: The deadline of one GCS call by default, in seconds (``--ray-timeout``).
GCS_TIMEOUT_S: Final = 5.0


class DemandRead(StrEnum):
    """Where a poll's task and actor demand comes from."""

    EXACT = "exact"  # rule R1: the head raylet read after the snapshot (the default)
    GCS = "gcs"  # the snapshot's own sum, as Ray's autoscaler reads it (counts starts twice)


class GcsApi(LoadsApi, Protocol):
    """The GCS calls a poll makes (:class:`~keda_ray_scaler.gcs.client.GcsClient`)."""

    async def get_cluster_status(self, timeout_s: float) -> GetClusterStatusReply: ...

    async def internal_kv_get(
        self, key: bytes, namespace: bytes | None, timeout_s: float
    ) -> bytes | None: ...


class RayReader:
    """Polls one Ray cluster; also the :class:`~keda_ray_scaler.agent.interfaces.RayView`.

    Every call reads the GCS afresh (a reply is parsed again only when it says something new),
    each RPC with a deadline of ``timeout_s``. Any failure is :class:`RayError`, after which
    the connection is made anew.

    With ``on_unsupported``, the first read also reads the head's Ray version
    (:mod:`keda_ray_scaler.gcs.versions`; one KV call more, until a version is known, and again
    when a status reply names another GCS session: a restarted head may run another Ray): a
    version outside the supported range, or metadata that names none
    (:class:`MalformedClusterMetadata`), is passed to ``on_unsupported`` and raised as
    :class:`UnsupportedRayVersion` at each read, and nothing else is read until a supported one
    is known (a read before the head wrote its version fails). A supported version is kept
    across failed reads and later writes of the key: only a new session reads it again.

    ``refusals`` counts and logs what :meth:`read` left out (:attr:`RayState.refused`, an
    unsupported version); :meth:`nodes`, the victim protocol's re-check, counts nothing again.

    ``demand`` chooses the task demand's source (:class:`DemandRead`); with R1 a failed raylet
    or load read is no failed poll, it is the state's ``fallback``. ``now`` is the time a node's
    idle-since time is computed at: the agent's clock, as its snapshot time.
    """

    def __init__(
        self,
        gcs: GcsConnection,
        cluster: ClusterSpec | SpecView,
        *,
        timeout_s: float = GCS_TIMEOUT_S,
        pods: Callable[[], Iterable[PodRef]] | None = None,
        on_unsupported: Callable[[UnsupportedRayVersion], None] | None = None,
        demand: DemandRead = DemandRead.EXACT,
        raylet: RayletRead | None = None,
        refusals: RefusalLog | None = None,
        now: Now = time.time,
    ) -> None:
        self._gcs = gcs
        self._refusals = refusals
        self._version_read = False  # a supported version read for the head served now
        self._session: str | None = None  # that head's GCS session, once a status named it
        self._contested: frozenset[str] = frozenset()
        self.demand = demand
        self._raylet: RayletRead = raylet if raylet is not None else HeadRaylet()
        self._on_unsupported = on_unsupported
        #: The head's Ray version once read (only with ``on_unsupported``).
        self.ray_version: str | None = None
        self._specs = spec_view(cluster)  # read at each parse: the groups as they are now
        self._timeout_s = timeout_s
        # Returns the active pods with their IPs (from the pod cache): the IP rule and fallback.
        self._pods = pods
        self._ages = NodeAges()  # which of a pod's live nodes is its own (a restarted raylet's)
        # a reply saying the same as the last is not parsed again; ``now``: idle-since times
        self._memo = StatusMemo(now)
        self._head: NodeLoad | None = None  # the head raylet's queue, as the last read found it
        #: What the last :meth:`read` read (nothing when it failed) that the look between polls
        #: compares with (:mod:`~keda_ray_scaler.agent.ray.status_watch`).
        self.seen = Seen()

    async def read(self) -> RayState:
        """Demand and nodes now; raises :class:`RayError` when Ray cannot be read."""
        self.seen = Seen()
        try:
            state = await self._read()
            self.seen = Seen(self._memo.steady, self._head)  # not a later re-check's (nodes())
        except UnsupportedRayVersion as exc:
            malformed = isinstance(exc, MalformedClusterMetadata)
            reason = Refusal.MALFORMED_METADATA if malformed else Refusal.UNSUPPORTED_VERSION
            self._refuse([Refused(reason, exc.version, str(exc))])
            raise
        self._refuse(state.refused)
        return state

    def _refuse(self, refused: tuple[Refused, ...] | list[Refused]) -> None:
        if refused and self._refusals is not None:
            self._refusals.observe(refused)

    def contested(self) -> frozenset[str]:
        """Pods two live nodes named at the last read, or one from another IP, or whose live
        node is superseded (RayView): never victims."""
        return self._contested

    async def _read(self) -> RayState:
        # The pods' IPs are taken before the calls, as the pod cache has them now.
        pods = tuple(self._pods()) if self._pods is not None else None
        try:
            client: GcsApi = self._gcs.get()
            if self._on_unsupported is not None and not self._version_read:
                await self._check_version(client, self._on_unsupported)
            reply = await client.get_cluster_status(timeout_s=self._timeout_s)
            if self._on_unsupported is not None:
                await self._same_head(client, reply, self._on_unsupported)
            v1 = None
            if not reply.cluster_resource_state.cluster_resource_constraints:
                v1 = await client.internal_kv_get(V1_REQUEST_KEY, None, timeout_s=self._timeout_s)
        except UnsupportedRayVersion:  # the connection is sound: the version is asked again
            raise
        except RayError:  # the version read holds: a new session, not a failure, reads it again
            self._gcs.reset()
            raise
        state = await self._parse(client, reply, v1, pods)
        self._contested = state.contested
        return state

    async def _parse(
        self,
        client: GcsApi,
        reply: GetClusterStatusReply,
        v1: bytes | None,
        pods: tuple[PodRef, ...] | None,
    ) -> RayState:
        """The reply parsed, with R1's task demand read after it unless asked otherwise."""
        seen = self._ages.observe(
            ns.node_id.hex() for ns in reply.cluster_resource_state.node_states
        )
        stale = self._ages.stale
        self._head = None
        if self.demand is DemandRead.GCS:
            state = self._memo.parse(
                reply,
                self._specs.spec,
                v1_requests=v1,
                pods=pods,
                first_seen=seen,
                stale=stale,
            )
            self._ages.supersede(state.superseded)
            return state
        # R1: after S returned (never before, never beside it); no failure here fails the poll.
        tasks = await read_task_load(client, self._raylet, reply, self._timeout_s)
        self._head = tasks.head
        state = self._memo.parse(
            reply,
            self._specs.spec,
            v1_requests=v1,
            pods=pods,
            tasks=tasks.queued,
            first_seen=seen,
            stale=stale,
        )
        self._ages.supersede(state.superseded)
        if tasks.fallback is None:
            return state
        return replace(state, fallback=tasks.fallback, fallback_error=tasks.error)

    async def read_version(self) -> str | None:
        """The head's Ray version (its cluster metadata); None while the head has written none."""
        client: GcsApi = self._gcs.get()
        raw = await client.internal_kv_get(
            CLUSTER_METADATA_KEY, CLUSTER_NAMESPACE, timeout_s=self._timeout_s
        )
        return None if raw is None else parse_cluster_metadata(raw)

    async def _check_version(
        self, client: GcsApi, on_unsupported: Callable[[UnsupportedRayVersion], None]
    ) -> None:
        raw = await client.internal_kv_get(
            CLUSTER_METADATA_KEY, CLUSTER_NAMESPACE, timeout_s=self._timeout_s
        )
        if raw is None:  # the head writes it just after its GCS starts: the next read asks again
            raise RayError(
                f"GCS {self._gcs.address}: no Ray version yet ({CLUSTER_METADATA_KEY.decode()} "
                "not written): nothing is read from a Ray of unknown version"
            )
        where = f"GCS {self._gcs.address}"
        try:
            version = parse_cluster_metadata(raw)
        except MalformedClusterMetadata as exc:
            refused: UnsupportedRayVersion = MalformedClusterMetadata(
                exc.version, f"{where}: {exc}"
            )
        else:
            problem = unsupported(version)
            if problem is None:
                self.ray_version = version
                self._version_read = True
                return
            refused = UnsupportedRayVersion(version, f"{where}: {problem}")
        on_unsupported(refused)
        raise refused

    async def _same_head(
        self,
        client: GcsApi,
        reply: GetClusterStatusReply,
        on_unsupported: Callable[[UnsupportedRayVersion], None],
    ) -> None:
        """The version read holds for ``reply``'s GCS session; another session (a restarted
        head) has its version read (and maybe refused) before the reply is parsed."""
        session = reply.cluster_resource_state.cluster_session_name
        if self._session is not None and session != self._session:
            self._version_read, self._session = False, None
            await self._check_version(client, on_unsupported)
        self._session = session

    async def nodes(self) -> tuple[WorkerNode, ...]:
        """Mapped worker nodes (RayView), idle times their own: unmapped nodes are left out,
        they have no pod."""
        state = await self._read()
        return self._memo.idle_now(n for n in state.nodes if n.group)
