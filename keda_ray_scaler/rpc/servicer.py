"""The five RPCs of KEDA's ``externalscaler.ExternalScaler``, answered from :class:`TargetCache`.

Every call is parsed, scoped, counted and, on an error, refused by
:class:`~keda_ray_scaler.rpc.scoping.RequestScoping` (see :mod:`keda_ray_scaler.rpc.scoping`).

- ``GetMetricSpec``: from metadata only (never the source): one metric ``ray-<cluster>.<group>``
  with target 1, so with ``metricType: AverageValue`` the HPA lands exactly on the value.
- ``GetMetrics``: the group's target replicas; the data age (and the label selectors behind
  the target, if any) in trailing metadata.
- ``IsActive``: false only when the target is 0 and no pod that is not a victim remains.
- ``StreamIsActive``: the current state on open; then ``true`` at the first refresh where an
  inactive group becomes active (rising edge, immediately), ``false`` only after the group has
  stayed inactive for ``stream_debounce_s`` (falling edge, debounced). Unavailable data sends
  nothing: unknown is not inactive (:mod:`keda_ray_scaler.rpc.is_active_stream`).
- ``StreamMetricSpec``: the spec on open; the spec depends on metadata only, so it never
  changes afterwards and the stream stays open, silent, until the client or the server ends it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator
from typing import Final

import grpc

from keda_ray_scaler.clock import Now
from keda_ray_scaler.errors import ScalerError
from keda_ray_scaler.identity import NamespaceGrants
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.is_active_stream import IsActiveStreams
from keda_ray_scaler.rpc.scoping import RequestScoping
from keda_ray_scaler.rpc.targets import TargetReader
from keda_ray_scaler.telemetry import ScalerMetrics

#: HPA target per pod: the metric is the replica count itself.
METRIC_TARGET: Final = 1

#: Trailing metadata of ``GetMetrics``: the age in seconds (server clock) of the agent snapshot
#: the target is based on. KEDA ignores it; ``keda-ray-scaler status`` prints it. The proto is
#: KEDA's and stays unchanged.
DATA_AGE_KEY: Final = "krs-data-age-seconds"
#: Trailing metadata of ``GetMetrics`` when demand with label selectors is planned onto the
#: group's pods: those selectors (:func:`~keda_ray_scaler.rpc.safety.selectors_by_group`), for
#: ``keda-ray-scaler status``; absent otherwise.
SELECTORS_KEY: Final = "krs-label-selectors"


def metric_spec(metric_name: str) -> pb.GetMetricSpecResponse:
    """The spec for a trigger's metric: a pure function of its metadata."""
    return pb.GetMetricSpecResponse(
        metricSpecs=[
            pb.MetricSpec(
                metricName=metric_name,
                targetSize=METRIC_TARGET,
                targetSizeFloat=float(METRIC_TARGET),
            )
        ]
    )


def metric_value(metric_name: str, target: int) -> pb.GetMetricsResponse:
    """The GetMetrics answer: ``target`` in both the int and the float field."""
    value = pb.MetricValue(metricName=metric_name, metricValue=target, metricValueFloat=target)
    return pb.GetMetricsResponse(metricValues=[value])


_ACTIVE: Final = pb.IsActiveResponse(result=True)
_INACTIVE: Final = pb.IsActiveResponse(result=False)
#: Prebuilt answers kept (LRU): specs by metric name, values by metric name and target.
_ANSWERS_CACHED: Final = 8192


class ExternalScalerServicer(pb_grpc.ExternalScalerServicer):  # type: ignore[misc]  # generated base is untyped
    """KEDA's external scaler over shared targets (:class:`TargetCache` or its process mirror)."""

    def __init__(
        self,
        cache: TargetReader,
        *,
        metrics: ScalerMetrics,
        clock: Now,
        stream_debounce_s: float | None = None,
        grants: NamespaceGrants | None = None,
    ) -> None:
        self._cache = cache
        self._clock = clock
        self._stopping = asyncio.Event()
        self._scope = RequestScoping(cache, metrics=metrics, grants=grants)
        self._streams = IsActiveStreams(
            cache,
            clock=clock,
            debounce_s=(
                stream_debounce_s
                if stream_debounce_s is not None
                else 2 * cache.settings.refresh_interval_s
            ),
            stopping=self._stopping,
        )
        # answers are immutable once built (gRPC only serializes them): built once per value
        self._spec = functools.lru_cache(maxsize=_ANSWERS_CACHED)(metric_spec)
        self._value = functools.lru_cache(maxsize=_ANSWERS_CACHED)(metric_value)

    def stop_streams(self) -> None:
        """End every open stream (graceful stop)."""
        self._stopping.set()

    # --- unary ----------------------------------------------------------------------------
    # Written out per method (no shared closure) and answered with prebuilt messages: these
    # three are KEDA's hot path: three calls per ScaledObject per polling interval, and more.

    async def GetMetricSpec(
        self, request: pb.ScaledObjectRef, context: grpc.aio.ServicerContext
    ) -> pb.GetMetricSpecResponse:
        """The metric spec, from metadata only."""
        started = time.perf_counter()
        try:
            config = self._scope.config(request.scalerMetadata)
        except ScalerError as exc:
            await self._scope.abort("GetMetricSpec", context, exc, started)
            raise AssertionError("unreachable: abort raises") from exc  # pragma: no cover
        self._scope.observe("GetMetricSpec", "OK", started)
        return self._spec(config.metric_name)

    async def GetMetrics(
        self, request: pb.GetMetricsRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetMetricsResponse:
        """The group's target replicas, in both the int and the float field."""
        started = time.perf_counter()
        scope = self._scope
        config, _, t = await scope.target("GetMetrics", request.scaledObjectRef, context, started)
        age = (DATA_AGE_KEY, f"{self._clock() - t.snapshot_time_s:.3f}")
        why = ((SELECTORS_KEY, t.selectors),) if t.selectors else ()
        context.set_trailing_metadata((age, *why))
        scope.observe("GetMetrics", "OK", started)
        return self._value(config.metric_name, t.target)

    async def IsActive(
        self, request: pb.ScaledObjectRef, context: grpc.aio.ServicerContext
    ) -> pb.IsActiveResponse:
        """False only when the target is 0 and no non-victim pod remains."""
        started = time.perf_counter()
        _, _, t = await self._scope.target("IsActive", request, context, started)
        self._scope.observe("IsActive", "OK", started)
        return _ACTIVE if t.active else _INACTIVE

    # --- streams --------------------------------------------------------------------------

    async def StreamIsActive(
        self, request: pb.ScaledObjectRef, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.IsActiveResponse]:
        """Current state on open, then edges: rising at once, falling after the debounce."""
        method = "StreamIsActive"
        started = time.perf_counter()
        config, cluster, t = await self._scope.target(method, request, context, started)
        seen = self._cache.version(cluster)
        self._scope.observe(method, "OK", started)
        async for answer in self._streams.answers(config, cluster, t, seen):
            yield answer

    async def StreamMetricSpec(
        self, request: pb.ScaledObjectRef, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.GetMetricSpecResponse]:
        """The spec on open; it depends on metadata only, so nothing is sent afterwards."""
        method = "StreamMetricSpec"
        started = time.perf_counter()
        try:
            config = self._scope.config(request.scalerMetadata)
        except ScalerError as exc:
            await self._scope.abort(method, context, exc, started)
            return
        self._scope.observe(method, "OK", started)
        yield self._spec(config.metric_name)
        await self._stopping.wait()
