"""``grpc.health.v1.Health`` whose ``Check`` always answers: ``Watch`` streams are bounded.

A ``Watch`` is a stream held open for as long as the client likes, and it counts against the
server's concurrent-RPC limit like any call. Unbounded, 64 of them on the plaintext probe port
(its limit) made the kubelet's ``Check`` fail with RESOURCE_EXHAUSTED: readiness lost, then
liveness restarts. So :class:`BoundedHealth` wraps grpc's own servicer (the statuses stay in
one place) and admits at most ``max_watches`` concurrent ``Watch`` streams; one more is refused
with RESOURCE_EXHAUSTED, counted as ``limit="health_watch"``. With ``max_watches=0`` (the probe
port: the kubelet only calls ``Check``) ``Watch`` is refused at once with UNIMPLEMENTED.

Keep ``max_watches`` well below the server's concurrent-RPC limit, so ``Check`` always has room.
"""

from __future__ import annotations

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import Counter

from keda_ray_scaler.errors import Limit


class BoundedHealth(health_pb2_grpc.HealthServicer):  # type: ignore[misc]  # generated base is untyped
    """``Check`` from ``inner``; at most ``max_watches`` ``Watch`` streams at once (0: none)."""

    def __init__(
        self, inner: health.aio.HealthServicer, *, max_watches: int, refused: Counter
    ) -> None:
        if max_watches < 0:
            raise ValueError(f"max_watches must be >= 0, got {max_watches}")
        self._inner = inner
        self._max_watches = max_watches
        self._refused = refused.labels(Limit.HEALTH_WATCH.value)
        self.watching = 0

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        """The status of ``request.service`` (NOT_FOUND for one never set)."""
        return await self._inner.Check(request, context)

    async def Watch(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> None:
        """The status, then every change; refused beyond ``max_watches`` open streams."""
        if self._max_watches == 0:
            self._refused.inc()
            await context.abort(
                grpc.StatusCode.UNIMPLEMENTED,
                "Watch is not served on the probe port; use Check",
            )
        if self.watching >= self._max_watches:
            self._refused.inc()
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"at most {self._max_watches} health Watch streams at once; use Check",
            )
        self.watching += 1
        try:
            await self._inner.Watch(request, context)
        finally:
            self.watching -= 1
