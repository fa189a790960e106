"""Logging configuration, log processors and this project's own metrics.

Only the CLI calls :func:`configure_logging`; libraries get a logger with
``structlog.get_logger(__name__)`` and bind ``cluster=`` / ``worker_group=``. Processors are
plain callables ``(logger, method_name, event_dict) -> event_dict`` so tests call them with plain
dicts. Metric factories take a :class:`prometheus_client.CollectorRegistry`: nothing is registered
in the global default registry, so tests use a fresh ``CollectorRegistry()``.
"""

from __future__ import annotations

import enum
import logging
import re
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Final

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from keda_ray_scaler.errors import ConfigProblem, Limit, Refusal

EventDict = MutableMapping[str, Any]

#: Latency buckets for RPCs answered from memory (seconds): 100 us .. 2.5 s (KEDA's budget 3 s).
RPC_LATENCY_BUCKETS_S: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)
#: Planner and source latency buckets (seconds).
WORK_LATENCY_BUCKETS_S: Final = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

#: Keys whose values never appear in logs.
SECRET_KEYS: Final = frozenset({"password", "token", "bearer_token", "authorization", "secret"})
_REDACTED: Final = "[redacted]"


def redact_secrets(_logger: object, _method: str, event_dict: EventDict) -> EventDict:
    """Processor: replace the value of any key named like a secret by ``[redacted]``."""
    for key in event_dict:
        if key.lower() in SECRET_KEYS:
            event_dict[key] = _REDACTED
    return event_dict


#: ``scheme://userinfo@``: what a URL with credentials starts with (userinfo up to the last ``@``
#: before the host's end, so a password holding an unencoded ``@`` goes too).
_USERINFO: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s?#]*@")


def strip_userinfo(text: str) -> str:
    """``text`` with the userinfo (``user:password@``) of every URL in it removed."""
    return _USERINFO.sub(r"\1", text) if "@" in text else text


def redact_url_userinfo(_logger: object, _method: str, event_dict: EventDict) -> EventDict:
    """Processor: no URL credentials in any string value (error texts quote URLs)."""
    for key, value in event_dict.items():
        if isinstance(value, str) and "@" in value:
            event_dict[key] = strip_userinfo(value)
    return event_dict


def stringify_enums(_logger: object, _method: str, event_dict: EventDict) -> EventDict:
    """Processor: enum values (``Outcome.SKIP_BUSY``) as their plain value (``"skip_busy"``)."""
    for key, value in event_dict.items():
        if isinstance(value, enum.Enum):
            event_dict[key] = value.value
    return event_dict


def configure_logging(json: bool, level: str) -> None:
    """Configure structlog (and stdlib logging) once, from the CLI.

    ``json=True`` writes one JSON object per line to stderr (for Kubernetes), otherwise a
    human console format. ``level`` is a stdlib level name (``debug``, ``info``, ...); an
    unknown name raises ``ValueError`` naming it.
    """
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact_secrets,
            redact_url_userinfo,
            stringify_enums,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=numeric, stream=sys.stderr, format="%(name)s %(message)s")


# --- metric factories -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScalerMetrics:
    """The external scaler's own metrics (``keda_ray_scaler_*``), all in one registry."""

    rpcs: Counter  # {method, code}
    rpc_latency: Histogram  # {method}
    plan_seconds: Histogram  # {cluster}
    refreshes: Counter  # {cluster, outcome}: ok|unavailable|not_found|error
    source_errors: Counter  # {cluster, error}
    data_age: Gauge  # {cluster}: now - agent snapshot time of the data in use
    target: Gauge  # {cluster, group}
    rechecks_deferred: Counter  # rechecks of unknown clusters put off: the budget was spent
    config_errors: Counter  # {reason}: rejected trigger metadata, reason from ConfigProblem
    refusals: Counter  # {reason}: calls refused for trust, reason from errors.Refusal
    limits: Counter  # {limit}: calls refused by a bound, limit from errors.Limit

    def forget_cluster(self, cluster: str) -> None:
        """Remove every series of ``cluster`` (its ``cluster`` label value): it was forgotten."""
        per_cluster = (self.plan_seconds, self.refreshes, self.source_errors, self.data_age)
        for metric in (*per_cluster, self.target):
            metric.remove_by_labels({"cluster": cluster})


# Over 60 lines by declaration only: one metric a field of ScalerMetrics, nothing to split.
def scaler_metrics(
    registry: CollectorRegistry, refresh_registry: CollectorRegistry | None = None
) -> ScalerMetrics:
    """Create and register the scaler's metrics in ``registry``.

    ``refresh_registry``: where the refresh side's metrics (plan time, refreshes, source
    errors, data age, targets) go instead; the refresher process keeps them in its own.
    """
    p = "keda_ray_scaler_"
    refresh = registry if refresh_registry is None else refresh_registry
    return ScalerMetrics(
        rpcs=Counter(
            p + "rpcs",
            "gRPC calls handled, by method and status code",
            ["method", "code"],
            registry=registry,
        ),
        rpc_latency=Histogram(
            p + "rpc_duration_seconds",
            "gRPC handling time by method (streams: until first send)",
            ["method"],
            registry=registry,
            buckets=RPC_LATENCY_BUCKETS_S,
        ),
        plan_seconds=Histogram(
            p + "plan_duration_seconds",
            "planner time per cluster refresh",
            ["cluster"],
            registry=refresh,
            buckets=WORK_LATENCY_BUCKETS_S,
        ),
        refreshes=Counter(
            p + "refreshes",
            "background refreshes of a cluster by outcome",
            ["cluster", "outcome"],
            registry=refresh,
        ),
        source_errors=Counter(
            p + "source_errors",
            "failed source fetches by cluster and error type",
            ["cluster", "error"],
            registry=refresh,
        ),
        data_age=Gauge(
            p + "data_age_seconds",
            "age of the agent snapshot the current plan is based on",
            ["cluster"],
            registry=refresh,
        ),
        target=Gauge(
            p + "target_replicas",
            "target replicas reported to KEDA per worker group",
            ["cluster", "group"],
            registry=refresh,
        ),
        rechecks_deferred=Counter(
            p + "unknown_rechecks_deferred",
            "rechecks of Ray clusters the source did not know, put off to a later round "
            "because the shared recheck budget was spent",
            registry=refresh,
        ),
        config_errors=_every_value(
            Counter(
                p + "config_errors",
                "trigger metadata rejected, by reason (unknown_key, missing, bad_name, "
                "bad_number, invalid)",
                ["reason"],
                registry=registry,
            ),
            ConfigProblem,
        ),
        refusals=_refusals(registry),
        limits=_every_value(
            Counter(
                p + "limit_refusals",
                "calls refused because a bound is reached, by limit (max_clusters, "
                "namespace_quota, health_watch, streams_per_peer, streams_per_connection)",
                ["limit"],
                registry=registry,
            ),
            Limit,
        ),
    )


def _every_value(counter: Counter, values: type[enum.Enum]) -> Counter:
    """``counter`` with a child for every value of ``values`` (present from the start, at 0)."""
    for value in values:
        counter.labels(value.value)
    return counter


def _refusals(registry: CollectorRegistry) -> Counter:
    """``keda_ray_scaler_refusals_total{reason}``, every reason present from the start (at 0)."""
    counter = Counter(
        "keda_ray_scaler_refusals",
        "calls refused because the cluster's data cannot be trusted or read by the caller, "
        "by reason (cross_namespace, two_origins, future_snapshot, client_identity, "
        "digest_mismatch, no_digest)",
        ["reason"],
        registry=registry,
    )
    for reason in Refusal:
        counter.labels(reason.value)
    return counter
