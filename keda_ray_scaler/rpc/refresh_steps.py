"""The steps of one cluster's refresh that hold no cache state: fetch, plan, record.

Why apart from :class:`~keda_ray_scaler.rpc.targets.TargetCache`: the cache decides *when* and
*which* clusters to refresh and keeps their entries; how one fetch is bounded, how one plan is
timed and what one outcome leaves in the metrics and the log are the same whatever the cache
does, and each reads better as a named function than as lines inside the cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

import structlog

from keda_ray_scaler.decisions import Plan
from keda_ray_scaler.errors import DemandUnavailable, NotFound, ScalerError, UntrustedData
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import PlanningInput
from keda_ray_scaler.rpc.entry import GroupTarget
from keda_ray_scaler.telemetry import ScalerMetrics

T = TypeVar("T")

_log = structlog.get_logger("keda_ray_scaler.rpc.targets")  # the cache's events, as before


async def fetch_within(call: Awaitable[T], timeout_s: float, cluster: str) -> T:
    """Await a source call with the deadline; every failure becomes a ScalerError (a source
    bug must read as "unknown", never as zero)."""
    try:
        return await asyncio.wait_for(call, timeout_s)
    except ScalerError:
        raise
    except TimeoutError:
        raise DemandUnavailable(f"source did not answer within {timeout_s}s") from None
    except Exception as exc:
        _log.exception("source failed unexpectedly", cluster=cluster)
        raise DemandUnavailable(f"source failed: {type(exc).__name__}") from exc


def plan_timed(
    planner: Callable[[PlanningInput], Plan],
    inp: PlanningInput,
    cluster: ClusterRef,
    metrics: ScalerMetrics | None,
) -> Plan:
    """``planner(inp)``, its time in ``plan_seconds``; a planner bug raises DemandUnavailable
    (logged with its traceback): "unknown", never zero."""
    try:
        if metrics is None:
            return planner(inp)
        with metrics.plan_seconds.labels(str(cluster)).time():
            return planner(inp)
    except Exception as exc:
        _log.exception("planner failed", namespace=cluster.namespace, cluster=cluster.name)
        raise DemandUnavailable(f"planner failed: {type(exc).__name__}") from exc


def record_failure(metrics: ScalerMetrics | None, cluster: ClusterRef, exc: ScalerError) -> None:
    """Count and log one failed refresh (outcome ``not_found`` or ``unavailable``)."""
    if metrics is not None:
        outcome = "not_found" if isinstance(exc, NotFound) else "unavailable"
        metrics.refreshes.labels(str(cluster), outcome).inc()
        metrics.source_errors.labels(str(cluster), type(exc).__name__).inc()
    why = {"reason": exc.reason.value} if isinstance(exc, UntrustedData) else {}
    _log.warning(
        "refresh failed", namespace=cluster.namespace, cluster=cluster.name, error=str(exc), **why
    )


def record_ok(
    metrics: ScalerMetrics,
    cluster: ClusterRef,
    targets: Mapping[str, GroupTarget],
    before: Mapping[str, GroupTarget],
    age_s: float,
) -> None:
    """Count one successful refresh, its data age and targets; drop the series of a group the
    cluster no longer has."""
    label = str(cluster)
    metrics.refreshes.labels(label, "ok").inc()
    metrics.data_age.labels(label).set(age_s)
    for t in targets.values():
        metrics.target.labels(label, t.group).set(t.target)
    for gone in before.keys() - targets.keys():
        metrics.target.remove(label, gone)
