"""Drain one Ray node for idle termination: the :class:`~keda_ray_scaler.agent.interfaces.Drainer`.

The call is the one Ray's autoscaler v2 makes (``ray_stopper.py``: ``GcsClient.drain_node``),
``AutoscalerStateService/DrainNode`` (:meth:`keda_ray_scaler.gcs.client.GcsClient.drain_node`)::

    drain_node(node_id_hex, DRAIN_NODE_REASON_IDLE_TERMINATION, message, deadline_ms)

The GCS forwards it to the node's raylet, which accepts an idle-termination drain only if the
node is idle at that moment (atomically with its own scheduling), else answers
``(False, "The node to be idle terminated is no longer idle.")``. The node id is the hex string
(Ray decodes it with ``NodeID.FromHex``: bytes or a malformed string become the nil id, which
the GCS answers with "accepted" without draining anything, so we refuse them before calling).

What happens after an accepted drain (Ray 2.60, measured in
``tests/real/ray/test_agent_drain.py``): the
raylet shuts itself down at once (the node is DEAD in the next status), whatever the deadline,
and exits with code 0; ``ray start --block`` (the container's main process in KubeRay) treats
exit code 0 as expected and keeps running, so the container neither exits nor restarts; only
KubeRay's probes (raylet health) later mark the pod unready. The deadline is only a hint.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, Protocol

import structlog

from keda_ray_scaler.agent.interfaces import DrainResult
from keda_ray_scaler.gcs._generated import autoscaler_pb2

log = structlog.get_logger(__name__)

#: ray.rpc.autoscaler.DrainNodeReason.DRAIN_NODE_REASON_IDLE_TERMINATION (1)
DRAIN_NODE_REASON_IDLE_TERMINATION: Final = autoscaler_pb2.DRAIN_NODE_REASON_IDLE_TERMINATION
#: DRAIN_NODE_REASON_PREEMPTION (2): accepted busy or not; the node takes no new work
DRAIN_NODE_REASON_PREEMPTION: Final = autoscaler_pb2.DRAIN_NODE_REASON_PREEMPTION

#: A Ray NodeID is 28 bytes; the GCS wants it as hex.
_NODE_ID = re.compile(r"[0-9a-f]{56}")


class DrainApi(Protocol):
    """The drain call (:class:`~keda_ray_scaler.gcs.client.GcsClient`; a fake in unit tests)."""

    async def drain_node(
        self,
        node_id: str,
        reason: autoscaler_pb2.DrainNodeReason,
        reason_message: str,
        deadline_timestamp_ms: int,
        timeout_s: float,
    ) -> tuple[bool, str]: ...


class RayDrainer:
    """Drains through the GCS; never raises for a rejection or a failed call."""

    def __init__(self, gcs: Callable[[], DrainApi], *, timeout_s: float = 10.0) -> None:
        """``gcs`` returns the client (``GcsConnection.get``); it may raise."""
        self._gcs = gcs
        self._timeout_s = timeout_s

    async def _drain(
        self,
        node_id: str,
        message: str,
        deadline_ms: int,
        reason: autoscaler_pb2.DrainNodeReason = DRAIN_NODE_REASON_IDLE_TERMINATION,
    ) -> DrainResult:
        if not _NODE_ID.fullmatch(node_id):
            # Ray would decode it to the nil id and answer "accepted" without draining anything.
            return DrainResult(False, f"not a Ray node id (56 hex digits): {node_id!r}")
        try:
            accepted, rejection = await self._gcs().drain_node(
                node_id,
                reason,
                message,
                deadline_ms,
                timeout_s=self._timeout_s,
            )
        except Exception as exc:  # RayError (a failed or late call), a client that cannot be made
            return DrainResult(False, f"drain_node failed: {type(exc).__name__}: {exc}")
        return DrainResult(accepted, "" if accepted else rejection)

    async def drain(self, node_id: str, message: str, deadline_ms: int) -> DrainResult:
        """Ask Ray to drain ``node_id`` (hex) for idle termination."""
        result = await self._drain(node_id, message, deadline_ms)
        log.info(
            "ray drain",
            node_id=node_id,
            accepted=result.accepted,
            rejection=result.rejection,
            deadline_ms=deadline_ms,
        )
        return result

    async def fence(self, node_id: str, message: str) -> DrainResult:
        """Drain ``node_id`` for preemption, no deadline: its pod is being deleted, Ray must
        place no new work there (:mod:`~keda_ray_scaler.agent.victims.fence`)."""
        result = await self._drain(node_id, message, 0, DRAIN_NODE_REASON_PREEMPTION)
        log.info("ray fence", node_id=node_id, accepted=result.accepted, rejection=result.rejection)
        return result
