"""The agent's client of the head's raylet: ``NodeManagerService/GetResourceLoad``, no Ray library.

The raylet answers ``GetResourceLoad`` (an empty request) with its ``ResourcesData``, load and
availability filled in one turn of its event loop (``NodeManager::HandleGetResourceLoad``): the
reply the GCS itself pulls every second (``GcsResourceLoadPuller``) and caches, asked here
directly so it is read *now*, after the poll's ``GetClusterStatus`` (rule R1,
:mod:`keda_ray_scaler.agent.ray.task_load`). Every Ray from 2.10 to 2.60 has the call with these
messages.

Where the raylet listens comes from the GCS (``GetAllNodeInfo``: ``node_manager_address`` and
``node_manager_port``, a random port unless the head was started with ``--node-manager-port``);
the agent runs beside the head (a sidecar in the head pod), so the address is reachable. The
call carries the GCS client's token (:mod:`keda_ray_scaler.gcs.auth`) and a deadline; a failure
is one :class:`RayError` line naming the raylet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

import grpc
from grpc import aio

from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs import auth
from keda_ray_scaler.gcs._generated import gcs_pb2, node_manager_pb2
from keda_ray_scaler.gcs._generated.node_manager_pb2_grpc import NodeManagerServiceStub
from keda_ray_scaler.gcs.client import CHANNEL_OPTIONS, failure
from keda_ray_scaler.gcs.loop_bound import LoopBound

#: A raylet's reply is small (a few KB: its resources and one entry per queued shape).
RAYLET_CHANNEL_OPTIONS: Final = CHANNEL_OPTIONS


class NodeInfoApi(Protocol):
    """The GCS call that finds a raylet (:class:`~keda_ray_scaler.gcs.client.GcsClient`)."""

    @property
    def address(self) -> str: ...

    async def get_node_info(self, node_id: str, timeout_s: float) -> gcs_pb2.GcsNodeInfo | None: ...


@dataclass(frozen=True, slots=True)
class RayletAddress:
    """Where one node's raylet serves gRPC."""

    node_id: str  # hex
    host: str
    port: int

    @property
    def target(self) -> str:
        """``host:port`` as gRPC takes it (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def raylet_address(info: gcs_pb2.GcsNodeInfo) -> RayletAddress:
    """The raylet of a node as the GCS registered it; :class:`RayError` without a port."""
    node_id = info.node_id.hex()
    if not info.node_manager_address or info.node_manager_port <= 0:
        raise RayError(f"GetAllNodeInfo: node {node_id} has no raylet address or port")
    return RayletAddress(node_id, info.node_manager_address, info.node_manager_port)


class RayletClient:
    """One raylet's ``GetResourceLoad``, over one channel; make it in the loop that uses it."""

    def __init__(self, address: RayletAddress, *, token: str | None = None) -> None:
        self.address = address
        self._channel = aio.insecure_channel(address.target, options=RAYLET_CHANNEL_OPTIONS)
        self._stub = NodeManagerServiceStub(self._channel)
        self._metadata = auth.metadata(token)

    @classmethod
    def from_env(
        cls, address: RayletAddress, environ: Mapping[str, str] | None = None
    ) -> RayletClient:
        """A client with the token Ray's clients would find (:func:`auth.load_token`)."""
        return cls(address, token=auth.load_token(environ))

    async def get_resource_load(self, timeout_s: float) -> gcs_pb2.ResourcesData:
        """The raylet's ``ResourcesData`` now (its queued shapes in ``resource_load_by_shape``)."""
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        try:
            reply = await self._stub.GetResourceLoad(
                node_manager_pb2.GetResourceLoadRequest(),
                timeout=timeout_s,
                metadata=self._metadata,
            )
        except grpc.RpcError as exc:
            target = self.address.target
            line = failure(
                "GetResourceLoad", target, timeout_s, bool(self._metadata), exc, "raylet"
            )
            raise RayError(line) from exc
        data: gcs_pb2.ResourcesData = reply.resources
        return data

    async def close(self, grace_s: float | None = None) -> None:
        """Close the channel, letting running calls finish for ``grace_s`` (None: cancel)."""
        await self._channel.close(grace_s)


class HeadRaylet(LoopBound[RayletClient]):
    """The head's raylet, found through the GCS once per head node and read at each poll.

    The address is looked up when the head's node id is new (a restarted head is a new node);
    after a failed read both the address and the channel are dropped, so the next poll looks
    the raylet up again. A channel belongs to the event loop it was made in, as
    :class:`~keda_ray_scaler.gcs.client.GcsConnection`'s.
    """

    def __init__(
        self, factory: Callable[[RayletAddress], RayletClient] = RayletClient.from_env
    ) -> None:
        super().__init__()
        self._factory = factory

    @property
    def address(self) -> RayletAddress | None:
        """The raylet read last, if its read has not failed since."""
        return self._client.address if self._client is not None else None

    async def resource_load(
        self, gcs: NodeInfoApi, node_id: str, timeout_s: float
    ) -> gcs_pb2.ResourcesData:
        """The raylet of node ``node_id``'s ``ResourcesData`` now; :class:`RayError` if not."""
        try:
            client = await self._client_of(gcs, node_id, timeout_s)
            return await client.get_resource_load(timeout_s)
        except RayError:
            self.reset()
            raise

    async def _client_of(self, gcs: NodeInfoApi, node_id: str, timeout_s: float) -> RayletClient:
        current = self.held()
        if current is not None and current.address.node_id == node_id:
            return current
        self.reset()
        info = await gcs.get_node_info(node_id, timeout_s)
        if info is None:
            raise RayError(f"GCS {gcs.address}: GetAllNodeInfo: no alive node {node_id}")
        return self.hold(self._factory(raylet_address(info)))
