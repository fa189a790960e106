"""Cluster snapshots scraped straight from each agent's ``/metrics``: no Prometheus needed.

The embedded default for a setup without Prometheus: the scaler is configured with one URL per
Ray cluster (the agent beside that cluster's head) and reads the Prometheus text exposition with
``prometheus_client.parser``.

Identity: the scaler's configuration, not the agent, says which namespace a URL belongs to
(``--agent-url NAMESPACE/CLUSTER=URL``): a cluster is ``(namespace, name)``, and a ScaledObject
of another namespace asking for the same name asks for another cluster (not found). One URL is
one origin, so two origins cannot arise; what the agent exports in any other label is ignored.

Redirects are refused, never followed (error kind ``redirect``): the configured URL is the
cluster's one origin.

Same safety rules as the Prometheus source: a failed, timed-out, oversized, empty or
untrustworthy answer raises
:class:`~keda_ray_scaler.errors.DemandUnavailable` ``from`` the cause, counted.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from prometheus_client.parser import text_string_to_metric_families

from keda_ray_scaler import schema
from keda_ray_scaler.errors import HttpStatusError, NotFound, SchemaError
from keda_ray_scaler.identity import ClusterRef, is_dns_label
from keda_ray_scaler.schema import ClusterSnapshot, Sample
from keda_ray_scaler.sources import promql
from keda_ray_scaler.sources.http_source import HttpSource
from keda_ray_scaler.sources.series_caps import DataCaps
from keda_ray_scaler.sources.source_settings import HttpSettings, RetrySettings
from keda_ray_scaler.telemetry import strip_userinfo

SOURCE: Final = "scrape"
#: Ask for the classic text format, which ``prometheus_client.parser`` reads.
ACCEPT: Final = "text/plain;version=0.0.4;q=1,*/*;q=0.1"
#: An agent bounds its series (``--max-shapes``); an answer far above this is not one.
DEFAULT_MAX_BYTES: Final = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScrapeSettings:
    """One agent ``/metrics`` URL per Ray cluster (namespace and name), and how to reach them."""

    targets: Mapping[ClusterRef, str]
    http: HttpSettings = field(default_factory=HttpSettings)
    retry: RetrySettings = field(default_factory=RetrySettings)
    max_bytes: int = DEFAULT_MAX_BYTES
    caps: DataCaps = field(default_factory=DataCaps)

    def __post_init__(self) -> None:
        for cluster, url in self.targets.items():
            promql.check_cluster_name(cluster.name)
            if not is_dns_label(cluster.namespace):
                raise ValueError(f"namespace of {cluster} is not an RFC 1123 label")
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"scrape target of {cluster!r} must be http(s)://, got {url!r}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be positive, got {self.max_bytes}")


def parse_exposition(text: str) -> list[Sample]:
    """The agent's series (``ray_scaler_*``) in a text exposition, values checked.

    Raises :class:`SchemaError` on text that does not parse and on NaN, infinite, negative or
    absurd values.
    """
    out: list[Sample] = []
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name.startswith(schema.PREFIX):
                    value = promql.check_value(s.name, s.labels, float(s.value))
                    out.append(Sample(s.name, dict(s.labels), value))
    except SchemaError:
        raise
    except ValueError as exc:  # the parser's error for malformed text
        raise SchemaError(f"exposition does not parse: {exc}") from exc
    return out


class ScrapeSource(HttpSource[ScrapeSettings]):
    """A :class:`~keda_ray_scaler.sources.base.Source` reading the agents directly.

    ``snapshot_time_s`` is the agent's snapshot time and ``success`` its last poll of Ray: the
    caller judges staleness and refuses a failed poll. ``wait`` overrides the retry backoff.
    """

    SOURCE = SOURCE

    async def fetch(self, cluster: ClusterRef) -> ClusterSnapshot:
        """Scrape the agent of ``cluster``; ``NotFound`` when no target is configured for it
        (in its namespace)."""
        url = self._settings.targets.get(cluster)
        if url is None:
            raise NotFound(f"no scrape target is configured for Ray cluster {cluster}")
        what = f"cluster {cluster} at {strip_userinfo(url)}"
        text = await self._retried(lambda timeout_s: self._get(url, timeout_s), what)
        # thousands of series: parse and decode off the event loop, like the HTTP call
        snapshots = await asyncio.to_thread(self._decode, text, what)
        snapshot = snapshots.get(cluster.name)
        if snapshot is None:
            raise self._fail(
                "empty",
                f"{what}: the agent exports no series for this cluster "
                f"(found {sorted(snapshots) or 'none'})",
            )
        return snapshot

    def _decode(self, text: str, what: str) -> dict[str, ClusterSnapshot]:
        parse = functools.partial(parse_exposition, text)
        return self._decoded(parse, what)

    def _get(self, url: str, timeout_s: float) -> str:
        # never followed: the URL configured for a cluster is the one origin of its data, and a
        # redirect would send the request (and its credentials) wherever the answer points
        with self._session.get(
            url, headers={"Accept": ACCEPT}, timeout=timeout_s, stream=True, allow_redirects=False
        ) as response:
            if 300 <= response.status_code < 400:
                location = strip_userinfo(response.headers.get("Location", "nowhere"))
                raise HttpStatusError(
                    response.status_code,
                    f"redirect to {location[:120]} refused: give the agent's own URL "
                    "in --agent-url",
                )
            if response.status_code != 200:
                raise HttpStatusError(response.status_code, response.reason or "")
            limit = self._settings.max_bytes
            body = bytearray()
            for chunk in response.iter_content(chunk_size=65536):
                body += chunk
                if len(body) > limit:
                    raise SchemaError(f"answer is larger than {limit} bytes")
            return body.decode("utf-8", errors="replace")  # the exposition is UTF-8
