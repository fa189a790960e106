"""Request scoping and refusal: a call's trigger, the cluster it may read, and its status code.

Every RPC parses the trigger metadata first (INVALID_ARGUMENT naming the key). Errors are mapped
to status codes once, by :data:`STATUS_BY_ERROR`; every call is counted by method and code.

Scoping: the calls that read a cluster (``GetMetrics``, ``IsActive``, ``StreamIsActive``) read
``ScaledObjectRef.namespace`` (required: INVALID_ARGUMENT without it) and ask for the cluster
``(that namespace, rayCluster)``. A trigger naming another namespace (``rayClusterNamespace``)
is refused with PERMISSION_DENIED unless a grant allows it (:class:`NamespaceGrants`). A refusal
for trust (cross namespace, two origins, a snapshot from the future) is counted in
``keda_ray_scaler_refusals_total{reason}`` and logged once per call with its reason.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

import grpc
import structlog

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

_log = structlog.get_logger(__name__)


def status_of(exc: ScalerError) -> grpc.StatusCode:
    """The gRPC status for a project error, from :data:`STATUS_BY_ERROR`."""
    for kind, code in STATUS_BY_ERROR:
        if isinstance(exc, kind):
            return code
    return grpc.StatusCode.INTERNAL  # pragma: no cover - ScalerError is the last row


class RequestScoping:
    """The servicer's side of each call but the answer: parse, scope, read, count, refuse."""

    def __init__(
        self,
        cache: TargetReader,
        *,
        metrics: ScalerMetrics,
        grants: NamespaceGrants | None = None,
    ) -> None:
        self._cache = cache
        self._grants = grants or NamespaceGrants()
        self._metrics = metrics
        self._children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._parse = TriggerParser(cache.settings.max_age_s)

    async def target(
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
            config = self.config(ref.scalerMetadata)
            cluster = self._grants.resolve(self._reader(ref), config.namespace, config.cluster)
            target = await self._cache.get(cluster, config.group, config.max_age_s)
            return config, cluster, target
        except ScalerError as exc:
            await self.abort(method, context, exc, started, config, ref.namespace, cluster)
            raise AssertionError("unreachable: abort raises") from exc  # pragma: no cover

    def _reader(self, ref: pb.ScaledObjectRef) -> str:
        try:
            return _reader(ref.namespace)
        except ConfigError as exc:
            self._metrics.config_errors.labels(exc.problem_kind.value).inc()
            raise

    def config(self, metadata: Mapping[str, str]) -> TriggerConfig:
        """The trigger's configuration; a ConfigError is counted by its kind and raised."""
        try:
            return self._parse(metadata)
        except ConfigError as exc:
            self._metrics.config_errors.labels(exc.problem_kind.value).inc()
            raise

    async def abort(
        self,
        method: str,
        context: grpc.aio.ServicerContext,
        exc: ScalerError,
        started: float,
        config: TriggerConfig | None = None,
        reader: str | None = None,
        cluster: ClusterRef | None = None,
    ) -> None:
        """End the call with ``exc``'s status: counted, logged once, its text without
        credentials."""
        code = status_of(exc)
        self.observe(method, code.name, started)
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

    def observe(self, method: str, code: str, started: float) -> None:
        """Count the call by method and code, and its latency since ``started``."""
        children = self._children.get((method, code))
        if children is None:  # resolve label children once: labels() costs a lock and a dict
            children = (
                self._metrics.rpcs.labels(method, code),
                self._metrics.rpc_latency.labels(method),
            )
            self._children[(method, code)] = children
        children[0].inc()
        children[1].observe(time.perf_counter() - started)


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
