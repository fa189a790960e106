"""The sources' metrics (``keda_ray_scaler_source_*``) and the error kinds they count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Histogram

#: Error kinds, the ``error`` label of :attr:`SourceMetrics.errors` and the start of messages.
ERROR_KINDS: Final = (
    "timeout",
    "connection",
    "http",
    "redirect",
    "auth",
    "tls",
    "bad_data",
    "empty",
    "two_origins",
    "over_cap",
)


@dataclass(frozen=True, slots=True)
class SourceMetrics:
    """Requests a source makes (``keda_ray_scaler_source_*``), labelled by source kind."""

    requests: Counter  # {source, outcome}: one per HTTP attempt, ok | one of ERROR_KINDS
    retries: Counter  # {source}
    failures: Counter  # {source, error}: fetches that raised DemandUnavailable, by ERROR_KINDS
    duration: Histogram  # {source}: one fetch, retries included
    over_cap: Counter  # {source, cap}: fetches refused because the data exceeded a cap
    leftovers: Counter  # {source}: series an earlier scrape left behind, dropped before the seal


def source_metrics(registry: CollectorRegistry) -> SourceMetrics:
    """Create and register the source metrics in ``registry``."""
    p = "keda_ray_scaler_source_"
    return SourceMetrics(
        requests=Counter(
            p + "requests",
            "HTTP requests to Prometheus or the agent, by source and outcome",
            ["source", "outcome"],
            registry=registry,
        ),
        retries=Counter(p + "retries", "requests retried", ["source"], registry=registry),
        failures=Counter(
            p + "failures",
            "fetches that failed (data unavailable), by source and error kind",
            ["source", "error"],
            registry=registry,
        ),
        duration=Histogram(
            p + "fetch_duration_seconds",
            "one fetch, retries included",
            ["source"],
            registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
        ),
        over_cap=Counter(
            p + "over_cap",
            "fetches refused because a cluster's series exceeded a cap, by source and cap "
            "(series, worker_groups, shapes, placement_groups, bundles_per_placement_group, "
            "resource_names, name_chars)",
            ["source", "cap"],
            registry=registry,
        ),
        leftovers=Counter(
            p + "leftover_series",
            "series an earlier scrape left behind and Prometheus never marked stale (after its "
            "restart), dropped before the agent's seal was checked, by source",
            ["source"],
            registry=registry,
        ),
    )
