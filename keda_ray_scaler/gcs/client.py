"""The agent's client of a Ray head's GCS: five RPCs over ``grpc.aio``, no Ray library.

- ``AutoscalerStateService/GetClusterStatus``: the call behind Ray's
  ``GcsClient.get_cluster_status()``, one consistent ``GetClusterStatusReply`` per poll (also
  as its bytes, unparsed: the watch between polls, :mod:`keda_ray_scaler.gcs.steady`);
- ``InternalKVGcsService/InternalKVGet``: ``request_resources()``'s key under autoscaler v1;
- ``AutoscalerStateService/DrainNode``: the call behind ``GcsClient.drain_node()``;
- ``NodeResourceInfoGcsService/GetAllResourceUsage``: each node's last pulled load (the queued
  tasks of nodes other than the head, :mod:`keda_ray_scaler.agent.ray.task_load`);
- ``NodeInfoGcsService/GetAllNodeInfo``: the head raylet's address and port
  (:mod:`keda_ray_scaler.gcs.raylet`).

Every call has a deadline and carries Ray's token when one is configured
(:mod:`keda_ray_scaler.gcs.auth`); every gRPC failure is a :class:`RayError` naming the RPC and
the address. The stubs are generated from Ray's own ``.proto`` files (``protos/ray/``), so the
messages are Ray's. A channel belongs to the event loop it was made in: :class:`GcsConnection`
makes the client lazily, in the running loop, and anew after a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import grpc
from grpc import aio

from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs import auth
from keda_ray_scaler.gcs._generated import autoscaler_pb2, gcs_pb2, gcs_service_pb2
from keda_ray_scaler.gcs._generated.autoscaler_pb2_grpc import AutoscalerStateServiceStub
from keda_ray_scaler.gcs._generated.gcs_service_pb2_grpc import (
    InternalKVGcsServiceStub,
    NodeInfoGcsServiceStub,
    NodeResourceInfoGcsServiceStub,
)
from keda_ray_scaler.gcs.loop_bound import LoopBound

#: Ray's ``StatusCode::NotFound`` (``src/ray/common/status.h``): the KV key does not exist.
_RAY_NOT_FOUND: Final = 17

#: The GCS is on the cluster's network, never behind an HTTP proxy; a big cluster's status is
#: larger than gRPC's default 4 MiB (Ray's own limit, ``max_grpc_message_size``, is 512 MiB);
#: after a lost connection the channel tries again within 2 s, not gRPC's default up to 120 s.
CHANNEL_OPTIONS: Final = (
    ("grpc.enable_http_proxy", 0),
    ("grpc.max_receive_message_length", 512 * 1024 * 1024),
    ("grpc.initial_reconnect_backoff_ms", 500),
    ("grpc.max_reconnect_backoff_ms", 2_000),
)


def failure(
    rpc: str,
    address: str,
    timeout_s: float,
    sent_token: bool,
    exc: grpc.RpcError,
    peer: str = "GCS",
) -> str:
    """One line saying why ``rpc`` to ``address`` (the ``peer``: GCS or raylet) failed."""
    code = exc.code() if isinstance(exc, aio.AioRpcError) else None
    details = exc.details() if isinstance(exc, aio.AioRpcError) else str(exc)
    where = f"{peer} {address}: {rpc}"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"{where}: no answer within {timeout_s:g}s (DEADLINE_EXCEEDED)"
    if code is grpc.StatusCode.UNAUTHENTICATED:
        sent = "the token sent was refused" if sent_token else "no token was sent"
        return (
            f"{where}: Ray token authentication failed, {sent} (UNAUTHENTICATED: {details}); "
            "the token comes from RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"
        )
    if code is grpc.StatusCode.UNAVAILABLE:
        return f"{where}: {peer} unavailable (UNAVAILABLE: {details})"
    name = code.name if code is not None else type(exc).__name__
    return f"{where} failed ({name}: {details})"


class GcsClient:
    """Ray's GCS calls the agent makes, over one channel; make it in the loop that uses it."""

    def __init__(self, address: str, *, token: str | None = None) -> None:
        self.address = address
        self._channel = aio.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._autoscaler = AutoscalerStateServiceStub(self._channel)
        self._status_bytes = self._channel.unary_unary(
            "/ray.rpc.autoscaler.AutoscalerStateService/GetClusterStatus",
            request_serializer=autoscaler_pb2.GetClusterStatusRequest.SerializeToString,
        )  # no response deserializer: the reply's bytes as sent
        self._kv = InternalKVGcsServiceStub(self._channel)
        self._usage = NodeResourceInfoGcsServiceStub(self._channel)
        self._nodes = NodeInfoGcsServiceStub(self._channel)
        self._metadata = auth.metadata(token)

    @classmethod
    def from_env(cls, address: str, environ: Mapping[str, str] | None = None) -> GcsClient:
        """A client with the token Ray's clients would find (:func:`auth.load_token`)."""
        return cls(address, token=auth.load_token(environ))

    async def _call(self, rpc: str, method: Any, request: Any, timeout_s: float) -> Any:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        try:
            return await method(request, timeout=timeout_s, metadata=self._metadata)
        except grpc.RpcError as exc:
            raise RayError(
                failure(rpc, self.address, timeout_s, bool(self._metadata), exc)
            ) from exc

    async def get_cluster_status(self, timeout_s: float) -> autoscaler_pb2.GetClusterStatusReply:
        """The cluster's demand and nodes (``GetClusterStatusReply``)."""
        reply: autoscaler_pb2.GetClusterStatusReply = await self._call(
            "GetClusterStatus",
            self._autoscaler.GetClusterStatus,
            autoscaler_pb2.GetClusterStatusRequest(),
            timeout_s,
        )
        return reply

    async def get_cluster_status_bytes(self, timeout_s: float) -> bytes:
        """``GetClusterStatus``' reply as the GCS serialized it, not parsed."""
        reply: bytes = await self._call(
            "GetClusterStatus",
            self._status_bytes,
            autoscaler_pb2.GetClusterStatusRequest(),
            timeout_s,
        )
        return reply

    async def internal_kv_get(
        self, key: bytes, namespace: bytes | None, timeout_s: float
    ) -> bytes | None:
        """The value under ``key`` in Ray's internal KV, None when there is none."""
        request = gcs_service_pb2.InternalKVGetRequest(key=key, namespace=namespace or b"")
        reply = await self._call("InternalKVGet", self._kv.InternalKVGet, request, timeout_s)
        if reply.status.code == _RAY_NOT_FOUND:
            return None
        if reply.status.code != 0:
            raise RayError(
                f"GCS {self.address}: InternalKVGet {key!r}: Ray status {reply.status.code}: "
                f"{reply.status.message}"
            )
        return bytes(reply.value)

    async def get_all_resource_usage(
        self, timeout_s: float
    ) -> gcs_service_pb2.GetAllResourceUsageReply:
        """Every alive node's last pulled ``ResourcesData`` (``resource_usage_data.batch``)."""
        reply: gcs_service_pb2.GetAllResourceUsageReply = await self._call(
            "GetAllResourceUsage",
            self._usage.GetAllResourceUsage,
            gcs_service_pb2.GetAllResourceUsageRequest(),
            timeout_s,
        )
        return reply

    async def get_node_info(self, node_id: str, timeout_s: float) -> gcs_pb2.GcsNodeInfo | None:
        """The alive node ``node_id`` (hex) as the GCS registered it; None when there is none.

        Asked with a node-id selector (2.60); a GCS that does not know the selector (before
        2.48: no filter, or another field) answers every node, and the one asked is picked.
        """
        try:
            binary = bytes.fromhex(node_id)
        except ValueError as exc:
            raise RayError(f"GetAllNodeInfo: not a hex node id: {node_id!r}") from exc
        selector = gcs_service_pb2.GetAllNodeInfoRequest.NodeSelector(node_id=binary)
        request = gcs_service_pb2.GetAllNodeInfoRequest(node_selectors=[selector])
        reply = await self._call("GetAllNodeInfo", self._nodes.GetAllNodeInfo, request, timeout_s)
        for info in reply.node_info_list:
            if info.node_id == binary and info.state == gcs_pb2.GcsNodeInfo.ALIVE:
                found: gcs_pb2.GcsNodeInfo = info
                return found
        return None

    async def drain_node(
        self,
        node_id: str,
        reason: autoscaler_pb2.DrainNodeReason,
        reason_message: str,
        deadline_timestamp_ms: int,
        timeout_s: float,
    ) -> tuple[bool, str]:
        """Ask the GCS to drain the node ``node_id`` (hex): (accepted, rejection message)."""
        try:
            binary = bytes.fromhex(node_id)
        except ValueError as exc:
            raise RayError(f"DrainNode: not a hex node id: {node_id!r}") from exc
        request = autoscaler_pb2.DrainNodeRequest(
            node_id=binary,
            reason=reason,
            reason_message=reason_message,
            deadline_timestamp_ms=deadline_timestamp_ms,
        )
        reply = await self._call("DrainNode", self._autoscaler.DrainNode, request, timeout_s)
        return bool(reply.is_accepted), str(reply.rejection_reason_message)

    async def close(self, grace_s: float | None = None) -> None:
        """Close the channel, letting running calls finish for ``grace_s`` (None: cancel)."""
        await self._channel.close(grace_s)


class GcsConnection(LoopBound[GcsClient]):
    """The GCS client shared by the reader and the drainer, made on first use.

    Made in the running event loop (:class:`~keda_ray_scaler.gcs.loop_bound.LoopBound`), so the
    agent starts while the GCS is still down. After a failed call :meth:`reset` drops it: the
    next call makes a new channel and reads the token again.
    """

    def __init__(
        self, gcs_address: str, factory: Callable[[str], GcsClient] = GcsClient.from_env
    ) -> None:
        super().__init__()
        self.address = gcs_address
        self._factory = factory

    def get(self) -> GcsClient:
        """The client of the running loop, made now if needed; :class:`RayError` if that fails."""
        return self.held() or self.hold(self._factory(self.address))
