"""The five RPCs of KEDA's ``externalscaler.ExternalScaler``, answered from :class:`TargetCache`.

Every RPC parses the trigger metadata first (INVALID_ARGUMENT naming the key). Errors are mapped
to status codes once, by :data:`STATUS_BY_ERROR`; every call is counted by method and code.

Scoping: the calls that read a cluster (``GetMetrics``, ``IsActive``, ``StreamIsActive``) read
``ScaledObjectRef.namespace`` (required: INVALID_ARGUMENT without it) and ask for the cluster
``(that namespace, rayCluster)``. A trigger naming another namespace (``rayClusterNamespace``)
is refused with PERMISSION_DENIED unless a grant allows it (:class:`NamespaceGrants`). A refusal
for trust (cross namespace, two origins, a snapshot from the future) is counted in
``keda_ray_scaler_refusals_total{reason}`` and logged once per call with its reason.

- ``GetMetricSpec``: from metadata only (never the source): one metric ``ray-<cluster>.<group>``
  with target 1, so with ``metricType: AverageValue`` the HPA lands exactly on the value.
- ``GetMetrics``: the group's target replicas; the data age in trailing metadata.
- ``IsActive``: false only when the target is 0 and no pod that is not a victim remains.
- ``StreamIsActive``: the current state on open; then ``true`` at the first refresh where an
  inactive group becomes active (rising edge, immediately), ``false`` only after the group has
  stayed inactive for ``stream_debounce_s`` (falling edge, debounced). Unavailable data sends
  nothing: unknown is not inactive.
- ``StreamMetricSpec``: the spec on open; the spec depends on metadata only, so it never
  changes afterwards and the stream stays open, silent, until the client or the server ends it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any, Final, TypeVar

import grpc
import structlog

from keda_ray_scaler.clock import Now
from keda_ray_scaler.errors import (
    AccessDenied,
    ConfigError,
    ConfigProblem,
    DemandUnavailable,
    LimitReached,
    NotFound,
    ScalerError,
    UntrustedData,
)
from keda_ray_scaler.identity import ClusterRef, NamespaceGrants, is_dns_label
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.entry import GroupTarget
from keda_ray_scaler.rpc.targets import TargetReader
from keda_ray_scaler.rpc.trigger import TriggerConfig, TriggerParser, printable
from keda_ray_scaler.telemetry import ScalerMetrics, strip_userinfo

#: The one table from error type to gRPC status (most specific first).
STATUS_BY_ERROR: Final[tuple[tuple[type[ScalerError], grpc.StatusCode], ...]] = (
    (ConfigError, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (AccessDenied, grpc.StatusCode.PERMISSION_DENIED),
    (DemandUnavailable, grpc.StatusCode.UNAVAILABLE),
    (ScalerError, grpc.StatusCode.INTERNAL),
)

#: HPA target per pod: the metric is the replica count itself.
METRIC_TARGET: Final = 1

#: Trailing metadata of ``GetMetrics``: the age in seconds (server clock) of the agent snapshot
#: the target is based on. KEDA ignores it; ``keda-ray-scaler status`` prints it. The proto is
#: KEDA's and stays unchanged.
DATA_AGE_KEY: Final = "krs-data-age-seconds"

_log = structlog.get_logger(__name__)
_T = TypeVar("_T")


def status_of(exc: ScalerError) -> grpc.StatusCode:
    """The gRPC status for a project error, from :data:`STATUS_BY_ERROR`."""
    for kind, code in STATUS_BY_ERROR:
        if isinstance(exc, kind):
            return code
    return grpc.StatusCode.INTERNAL  # pragma: no cover - ScalerError is the last row


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
        self._grants = grants or NamespaceGrants()
        self._metrics = metrics
        self._clock = clock
        self._debounce_s = (
            stream_debounce_s
            if stream_debounce_s is not None
            else 2 * cache.settings.refresh_interval_s
        )
        self._stopping = asyncio.Event()
        self._children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._parse = TriggerParser(cache.settings.max_age_s)
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
            config = self._config(request.scalerMetadata)
        except ScalerError as exc:
            await self._abort("GetMetricSpec", context, exc, started)
            raise AssertionError("unreachable: abort raises") from exc  # pragma: no cover
        self._observe("GetMetricSpec", "OK", started)
        return self._spec(config.metric_name)

    async def GetMetrics(
        self, request: pb.GetMetricsRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetMetricsResponse:
        """The group's target replicas, in both the int and the float field."""
        started = time.perf_counter()
        config, _, t = await self._target("GetMetrics", request.scaledObjectRef, context, started)
        context.set_trailing_metadata(((DATA_AGE_KEY, f"{self._clock() - t.snapshot_time_s:.3f}"),))
        self._observe("GetMetrics", "OK", started)
        return self._value(config.metric_name, t.target)

    async def IsActive(
        self, request: pb.ScaledObjectRef, context: grpc.aio.ServicerContext
    ) -> pb.IsActiveResponse:
        """False only when the target is 0 and no non-victim pod remains."""
        started = time.perf_counter()
        _, _, t = await self._target("IsActive", request, context, started)
        self._observe("IsActive", "OK", started)
        return _ACTIVE if t.active else _INACTIVE

    # --- streams --------------------------------------------------------------------------

    async def StreamIsActive(
        self, request: pb.ScaledObjectRef, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.IsActiveResponse]:
        """Current state on open, then edges: rising at once, falling after the debounce."""
        method = "StreamIsActive"
        started = time.perf_counter()
        config, cluster, t = await self._target(method, request, context, started)
        seen = self._cache.version(cluster)
        self._observe(method, "OK", started)
        sent = t.active
        yield pb.IsActiveResponse(result=sent)
        inactive_since: float | None = None if sent else self._clock()
        log = _log.bind(
            namespace=cluster.namespace, cluster=cluster.name, worker_group=config.group
        )
        while not self._stopping.is_set():
            changed = await self._wait(self._cache.wait_changed(cluster, seen))
            if changed is None:
                return
            seen = changed
            try:
                t = await self._cache.get(cluster, config.group, config.max_age_s)
            except ScalerError as exc:
                log.debug("stream state unknown", error=str(exc))
                continue
            now = self._clock()
            if t.active:
                inactive_since = None
                if not sent:
                    sent = True
                    log.info("worker group became active", target=t.target)
                    yield pb.IsActiveResponse(result=True)
                continue
            if inactive_since is None:
                inactive_since = now
            if sent and now - inactive_since >= self._debounce_s:
                sent = False
                log.info("worker group became inactive")
                yield pb.IsActiveResponse(result=False)

    async def StreamMetricSpec(
        self, request: pb.ScaledObjectRef, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.GetMetricSpecResponse]:
        """The spec on open; it depends on metadata only, so nothing is sent afterwards."""
        method = "StreamMetricSpec"
        started = time.perf_counter()
        try:
            config = self._config(request.scalerMetadata)
        except ScalerError as exc:
            await self._abort(method, context, exc, started)
            return
        self._observe(method, "OK", started)
        yield self._spec(config.metric_name)
        await self._stopping.wait()

    # --- helpers --------------------------------------------------------------------------

    async def _target(
        self,
        method: str,
        ref: pb.ScaledObjectRef,
        context: grpc.aio.ServicerContext,
        started: float,
    ) -> tuple[TriggerConfig, ClusterRef, GroupTarget]:
        """The trigger's configuration, the cluster it may read and its group's target; aborts
        the call on a ScalerError."""
        config: TriggerConfig | None = None
        cluster: ClusterRef | None = None
        try:
            config = self._config(ref.scalerMetadata)
            cluster = self._grants.resolve(self._reader(ref), config.namespace, config.cluster)
            target = await self._cache.get(cluster, config.group, config.max_age_s)
            return config, cluster, target
        except ScalerError as exc:
            await self._abort(method, context, exc, started, config, ref.namespace, cluster)
            raise AssertionError("unreachable: abort raises") from exc  # pragma: no cover

    def _reader(self, ref: pb.ScaledObjectRef) -> str:
        try:
            return _reader(ref.namespace)
        except ConfigError as exc:
            self._metrics.config_errors.labels(exc.problem_kind.value).inc()
            raise

    def _config(self, metadata: Mapping[str, str]) -> TriggerConfig:
        try:
            return self._parse(metadata)
        except ConfigError as exc:
            self._metrics.config_errors.labels(exc.problem_kind.value).inc()
            raise

    async def _abort(
        self,
        method: str,
        context: grpc.aio.ServicerContext,
        exc: ScalerError,
        started: float,
        config: TriggerConfig | None = None,
        reader: str | None = None,
        cluster: ClusterRef | None = None,
    ) -> None:
        code = status_of(exc)
        self._observe(method, code.name, started)
        log = _log
        if config is not None:
            log = log.bind(cluster=config.cluster, worker_group=config.group)
        if cluster is not None:
            log = log.bind(namespace=cluster.namespace)
        if isinstance(exc, AccessDenied | UntrustedData):
            self._metrics.refusals.labels(exc.reason.value).inc()
            log = log.bind(reason=exc.reason, scaled_object_namespace=printable(reader or ""))
        elif isinstance(exc, LimitReached):
            self._metrics.limits.labels(exc.limit.value).inc()
            log = log.bind(limit=exc.limit)
        text = strip_userinfo(str(exc))  # KEDA surfaces it in events tenants can read
        log.info("rpc refused", method=method, code=code.name, error=text)
        await context.abort(code, text)

    def _observe(self, method: str, code: str, started: float) -> None:
        children = self._children.get((method, code))
        if children is None:  # resolve label children once: labels() costs a lock and a dict
            children = (
                self._metrics.rpcs.labels(method, code),
                self._metrics.rpc_latency.labels(method),
            )
            self._children[(method, code)] = children
        children[0].inc()
        children[1].observe(time.perf_counter() - started)

    async def _wait(self, waiting: Awaitable[_T]) -> _T | None:
        """Wait for ``waiting`` or for stop; its result, or None when stopping came first."""
        task = asyncio.ensure_future(waiting)
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not task.done():
                task.cancel()
        return task.result() if task.done() and not task.cancelled() else None


def _reader(namespace: str) -> str:
    """The asking ScaledObject's namespace; ConfigError (INVALID_ARGUMENT) when absent or bad.

    KEDA always sends it; a caller that does not cannot be scoped, so it gets nothing.
    """
    if not namespace:
        raise ConfigError(
            "scaledObjectRef",
            "namespace",
            "required (the ScaledObject's namespace)",
            ConfigProblem.MISSING,
        )
    if not is_dns_label(namespace):
        raise ConfigError(
            "scaledObjectRef",
            "namespace",
            f"{printable(namespace)!r} is not an RFC 1123 label",
            ConfigProblem.BAD_NAME,
        )
    return namespace
