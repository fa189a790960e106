"""How often the scaler refreshes each Ray cluster, how old its data may be, and how many
clusters others can make it refresh: every default with its reason and its measurement.

Why a module of its own: these are the operator's knobs (each a ``serve`` flag); the cache that
obeys them (:mod:`keda_ray_scaler.rpc.targets`) and the refresher process both read them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from keda_ray_scaler.errors import Limit, LimitReached
from keda_ray_scaler.identity import ClusterRef


@dataclass(frozen=True, slots=True)
class TargetSettings:
    """How often to refresh and how old data may be.

    Defaults: KEDA polls every 30 s by default and the agent exports every few seconds, so a
    5 s refresh keeps answers within one agent period; 60 s of maximum age tolerates a few
    missed agent polls or Prometheus scrapes, no more. KEDA gives an external scaler about
    3 s per call, so a request waits at most 2.5 s for a new cluster's first fetch (the fetch
    goes on in the background and the next request gets its result).
    """

    refresh_interval_s: float = 5.0  # one fetch + one plan per cluster per interval
    max_age_s: float = 60.0  # older agent snapshots are UNAVAILABLE
    fetch_timeout_s: float = 10.0  # safety net over one source fetch (sources have their own)
    first_wait_s: float = 2.5  # a request for a new cluster waits this long for its first fetch
    forget_after_s: float = 900.0  # stop refreshing a cluster nobody asked about this long
    #: clusters refreshed at most: bounds the queries ScaledObjects naming bogus clusters cause
    max_clusters: int = 2000
    #: clusters of one namespace refreshed at most: one tenant (its ScaledObjects name clusters
    #: of their own namespace) holds at most a tenth of ``max_clusters``, so it can neither
    #: fill the scaler for the others nor make more than this many names cost queries
    max_clusters_per_namespace: int = 200
    #: a cluster the source does not know (NOT_FOUND) is asked about again after one interval,
    #: then after twice as long at each miss, at most this long apart: a Ray cluster created
    #: with its ScaledObject (the agent's first series reach the source seconds later) is found
    #: within seconds, not up to a minute later (measured on the bed at production settings: the
    #: HPA's 1 -> 10 waited 60-65 s for it), and a name that never comes costs a few checks,
    #: then one a minute
    not_found_recheck_s: float = 60.0
    #: rechecks of unknown clusters, all of them together, per second (on average; one
    #: interval's worth at once): 1,000 bogus names cost at most this many checks a second
    #: (Prometheus: two queries each) instead of 1,000 per interval
    unknown_rechecks_per_s: float = 10.0
    #: share of the interval over which one round's per-cluster refreshes are spread, so a
    #: round's work never arrives as one burst (measured: 100 clusters planned back to back
    #: every second raised GetMetrics p99 at 2,000/s from 8 to 37 ms in process; with the
    #: refresher process, p99 over 20 s at a 1 s refresh was 5-16 ms spread over half the
    #: interval and 3-7 ms over 90 % of it, six runs each)
    pace_fraction: float = 0.9
    #: how far in the future an agent's snapshot time may be: node clocks in a cluster are
    #: NTP-synced to well under a second, so 5 s covers skew and rounding with room; a
    #: snapshot further ahead is from a broken clock or forged, and would look fresh for
    #: ``max_age_s`` plus its lead (the review saw one 10^6 s ahead pass as fresh)
    max_clock_skew_s: float = 5.0

    def recheck_after_s(self, misses: int) -> float:
        """How long after its ``misses``-th NOT_FOUND in a row a cluster is asked about again."""
        first = min(self.refresh_interval_s, self.not_found_recheck_s)
        return float(min(first * 2 ** max(misses - 1, 0), self.not_found_recheck_s))

    def __post_init__(self) -> None:
        names = ("refresh_interval_s", "max_age_s", "fetch_timeout_s", "first_wait_s")
        rates = ("not_found_recheck_s", "unknown_rechecks_per_s")
        for name in (*names, "forget_after_s", *rates):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not self.max_clock_skew_s >= 0:
            raise ValueError(f"max_clock_skew_s must be >= 0, got {self.max_clock_skew_s!r}")
        for name in ("max_clusters", "max_clusters_per_namespace"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if not 0 <= self.pace_fraction < 1:
            raise ValueError(f"pace_fraction must be in [0, 1), got {self.pace_fraction!r}")

    def age_limit(self, max_age_s: float | None) -> float:
        """The maximum snapshot age for a request: ``max_age_s`` may only tighten it."""
        return self.max_age_s if max_age_s is None else min(max_age_s, self.max_age_s)

    def check_room(self, cluster: ClusterRef, refreshed: Collection[ClusterRef]) -> None:
        """LimitReached (UNAVAILABLE) when the ``refreshed`` clusters fill ``max_clusters``, or
        those of ``cluster``'s namespace fill ``max_clusters_per_namespace``."""
        if len(refreshed) >= self.max_clusters:
            raise LimitReached(
                Limit.MAX_CLUSTERS,
                f"Ray cluster {cluster} not refreshed: already refreshing "
                f"{self.max_clusters} clusters (the maximum, --max-clusters)",
            )
        quota = self.max_clusters_per_namespace
        if sum(1 for c in refreshed if c.namespace == cluster.namespace) >= quota:
            raise LimitReached(
                Limit.NAMESPACE_QUOTA,
                f"Ray cluster {cluster} not refreshed: already refreshing {quota} clusters of "
                f"namespace {cluster.namespace} (the quota, --max-clusters-per-namespace)",
            )
