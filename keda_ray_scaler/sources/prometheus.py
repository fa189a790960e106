"""Cluster snapshots from Prometheus, through prometheus-api-client's ``PrometheusConnect``.

One instant query per cluster per refresh (:meth:`PrometheusSource.fetch`), from the fixed
templates of :mod:`~keda_ray_scaler.sources.promql`; a second one only when the first is empty,
to tell a lost target from an unknown cluster, or when it does not add up to its seal, to drop
the series an earlier scrape left behind (:mod:`~keda_ray_scaler.sources.leftovers`). All
select the agents' scrape job only, and the answer must carry the agent's seal
(:class:`~keda_ray_scaler.sources.promql.OriginSettings`). The synchronous client runs in
``asyncio.to_thread``; each fetch, retries included, ends within its deadline (below KEDA's
3 s). Failures, empty answers and untrustworthy values raise
:class:`~keda_ray_scaler.errors.DemandUnavailable` ``from`` the cause, counted in
:class:`~keda_ray_scaler.sources.metrics.SourceMetrics`: unknown is never zero.
"""

from __future__ import annotations

import asyncio
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Final

import structlog
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from keda_ray_scaler.errors import HttpStatusError, NotFound, SchemaError
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.schema import ClusterSnapshot, Sample, digest
from keda_ray_scaler.sources import leftovers, promql
from keda_ray_scaler.sources.http_source import HttpSource
from keda_ray_scaler.sources.series_caps import DataCaps, check_series_count
from keda_ray_scaler.sources.source_settings import HttpSettings, RetrySettings

SOURCE: Final = "prometheus"
_STATUS: Final = re.compile(r"HTTP Status Code (\d{3})")


@dataclass(frozen=True, slots=True)
class PrometheusSettings:
    """Where Prometheus is and how to ask it.

    ``url``: base URL (``https://prometheus.monitoring:9090``; a path prefix is kept).
    ``lost_window_s``: a cluster with no series now but seen within this window is a lost
    target (``DemandUnavailable``); one never seen in it is unknown (``NotFound``). Keep it
    longer than any agent outage you want reported as unavailable rather than not found.
    ``origin``: which job's series are the agents', and whether a cluster without the agent's
    seal is refused (the default) or accepted.
    """

    url: str
    http: HttpSettings = field(default_factory=HttpSettings)
    retry: RetrySettings = field(default_factory=RetrySettings)
    lost_window_s: int = 3600
    caps: DataCaps = field(default_factory=DataCaps)
    origin: promql.OriginSettings = field(default_factory=promql.OriginSettings)

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"prometheus url must be http(s)://..., got {self.url!r}")
        if self.lost_window_s < 1:
            raise ValueError(f"lost_window_s must be at least 1, got {self.lost_window_s}")


class PrometheusSource(HttpSource[PrometheusSettings]):
    """A :class:`~keda_ray_scaler.sources.base.Source` backed by Prometheus.

    Deliberately not a ``BatchSource``: with one query for every cluster, a cluster missing
    from the answer reads as unknown (``NotFound``) although its agent may just be lost, and
    one cluster's bad series would fail every cluster. Per-cluster queries keep both apart;
    their number per interval grows with Ray clusters, never with ScaledObjects.

    ``snapshot_time_s`` of every snapshot is the agent's own snapshot time and ``success`` its
    last poll of Ray: the caller judges staleness and refuses a failed poll. ``wait`` overrides
    the retry backoff (tests pass ``tenacity.wait_none()``).
    """

    SOURCE = SOURCE

    def _open(self) -> None:
        """The Prometheus client, on this source's session (which :meth:`close` closes)."""
        self._client = PrometheusConnect(
            url=self._settings.url.rstrip("/"),
            session=self._session,
            # retries are ours (tenacity, bounded by the deadline), not urllib3's
            retry=Retry(total=0, raise_on_status=False),
        )

    async def fetch(self, cluster: ClusterRef) -> ClusterSnapshot:
        """The latest snapshot of ``cluster``, from series of its namespace only.

        Raises ``ConfigError`` for a name that is not an RFC 1123 label, ``NotFound`` when
        Prometheus has not seen the cluster within ``lost_window_s``, ``UntrustedData`` when
        two origins export it or its series do not match (or lack) the agent's seal,
        ``DemandUnavailable`` when it fails, times out, has lost the target (seen before, no
        series now), or answers with data that does not decode (NaN, negative, absurd, missing
        series).
        """
        job = self._settings.origin.job
        query = promql.cluster_query(cluster, job=job)
        # one deadline for the whole fetch, the lost-or-unknown query included
        deadline = asyncio.get_running_loop().time() + self._settings.retry.deadline_s
        result = await self._query(query, f"cluster {cluster}", deadline)
        # a pass over every series, like the decoding: off the event loop too
        if await asyncio.to_thread(leftovers.suspect, result):
            result = await self._latest_scrapes(cluster, query, deadline)
        # thousands of series: decode off the event loop, like the HTTP call
        snapshots = await asyncio.to_thread(self._decode, cluster, result)
        snapshot = snapshots.get(cluster.name)
        if snapshot is not None:
            return snapshot
        seen = await self._query(
            promql.seen_query(cluster, self._settings.lost_window_s, job=job),
            f"cluster {cluster} seen",
            deadline,
        )
        if not seen:
            raise NotFound(
                f"Prometheus has no series for Ray cluster {cluster} "
                f"in the last {self._settings.lost_window_s}s"
            )
        raise self._fail(
            "empty",
            f"Prometheus returned no series for Ray cluster {cluster}, which it saw in the "
            f"last {self._settings.lost_window_s}s: the agent target may be lost",
        )

    async def _latest_scrapes(self, cluster: ClusterRef, query: str, deadline: float) -> list[Any]:
        """The cluster's series as the latest scrapes wrote them, without the leftovers of
        earlier ones (:mod:`~keda_ray_scaler.sources.leftovers`), each dropped series counted."""
        what = f"cluster {cluster} recent"
        recent = await self._query(leftovers.recent_query(query), what, deadline)
        kept, dropped = leftovers.latest_scrapes(recent)
        if dropped:
            self._metrics.leftovers.labels(source=SOURCE).inc(dropped)
            structlog.get_logger(__name__).warning(
                "source_leftovers_dropped", cluster=str(cluster), series=dropped
            )
        return kept

    async def _query(self, query: str, what: str, deadline: float) -> list[Any]:
        def call(timeout_s: float) -> list[Any]:
            try:
                # the server-side timeout stops evaluation; the client-side one the socket
                result = self._client.custom_query(
                    query,
                    params={"timeout": f"{max(1, int(timeout_s * 1000))}ms"},
                    timeout=timeout_s,
                )
            except PrometheusApiClientException as exc:
                match = _STATUS.search(str(exc))
                raise HttpStatusError(int(match.group(1)) if match else 0, str(exc)) from exc
            if not isinstance(result, list):
                raise SchemaError(f"query result is {type(result).__name__}, not a vector")
            return result

        return await self._retried(call, what, deadline)

    def _decode(self, cluster: ClusterRef, result: list[Any]) -> dict[str, ClusterSnapshot]:
        """Every cluster in the answer, each checked against the caps before decoding."""
        parse = functools.partial(self._samples, cluster, result)
        master = self._settings.origin.seal_master_key
        if master is None:
            return self._decoded(parse, f"cluster {cluster}")

        def keys(name: str) -> bytes:
            return digest.cluster_key(master, cluster.namespace, name)

        return self._decoded(parse, f"cluster {cluster}", keys)

    def _samples(self, cluster: ClusterRef, result: list[Any]) -> list[Sample]:
        check_series_count(cluster.name, len(result), self._settings.caps)  # before parsing
        require = not self._settings.origin.accept_undigested
        return promql.samples_from_result(result, require_digest=require)
