"""What both HTTP sources hold and how they call: one session, metrics, retried calls.

The base of :class:`~keda_ray_scaler.sources.prometheus.PrometheusSource` and
:class:`~keda_ray_scaler.sources.scrape.ScrapeSource`: the pooled ``requests`` session made from
their settings (:mod:`~keda_ray_scaler.sources.session`), their metrics (a registry of their own
when none is given), and the calls of :mod:`~keda_ray_scaler.sources.transport` with the
source's name, retry settings, caps and metrics filled in, so both call and refuse alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Generic, Protocol, TypeVar

import tenacity
from prometheus_client import CollectorRegistry

from keda_ray_scaler.errors import FetchError
from keda_ray_scaler.schema import ClusterSnapshot, Sample
from keda_ray_scaler.schema.decoding import SealKeys
from keda_ray_scaler.sources.metrics import SourceMetrics, source_metrics
from keda_ray_scaler.sources.series_caps import DataCaps
from keda_ray_scaler.sources.session import build_session
from keda_ray_scaler.sources.source_settings import HttpSettings, RetrySettings
from keda_ray_scaler.sources.transport import call_with_retries, decode_checked, fail

T = TypeVar("T")


class HttpSourceSettings(Protocol):
    """The settings every HTTP source has: how to connect, retry, and what data to refuse."""

    @property
    def http(self) -> HttpSettings: ...

    @property
    def retry(self) -> RetrySettings: ...

    @property
    def caps(self) -> DataCaps: ...


S = TypeVar("S", bound=HttpSourceSettings)


class HttpSource(Generic[S]):
    """A source reading over one pooled HTTP session; subclasses name themselves in ``SOURCE``.

    ``wait`` overrides the retry backoff (tests pass ``tenacity.wait_none()``).
    """

    #: The source's name in its metrics and logs (``source`` label).
    SOURCE: ClassVar[str]

    def __init__(
        self,
        settings: S,
        *,
        metrics: SourceMetrics | None = None,
        wait: tenacity.wait.wait_base | None = None,
    ) -> None:
        self._settings = settings
        self._metrics = metrics or source_metrics(CollectorRegistry())
        self._wait = wait
        self._session = build_session(settings.http)
        self._open()

    def _open(self) -> None:
        """Build what the subclass reads through the session; called last by ``__init__``."""

    def close(self) -> None:
        """Release pooled connections."""
        self._session.close()

    async def _retried(
        self, call: Callable[[float], T], what: str, deadline: float | None = None
    ) -> T:
        """:func:`~keda_ray_scaler.sources.transport.call_with_retries` as this source."""
        return await call_with_retries(
            call,
            source=self.SOURCE,
            what=what,
            retry=self._settings.retry,
            metrics=self._metrics,
            wait=self._wait,
            deadline=deadline,
        )

    def _decoded(
        self, parse: Callable[[], list[Sample]], what: str, keys: SealKeys | None = None
    ) -> dict[str, ClusterSnapshot]:
        """:func:`~keda_ray_scaler.sources.transport.decode_checked` with this source's caps."""
        return decode_checked(parse, self._settings.caps, self._metrics, self.SOURCE, what, keys)

    def _fail(self, kind: str, message: str) -> FetchError:
        """:func:`~keda_ray_scaler.sources.transport.fail` as this source."""
        return fail(self._metrics, self.SOURCE, kind, message)
