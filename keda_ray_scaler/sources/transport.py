"""HTTP(S) calls to Prometheus or to the agent: retried within a deadline, failures counted.

Shared by :mod:`~keda_ray_scaler.sources.prometheus` and :mod:`~keda_ray_scaler.sources.scrape`.
Their settings are in :mod:`~keda_ray_scaler.sources.source_settings`, their session (TLS and
credentials) in :mod:`~keda_ray_scaler.sources.session`, their metrics in
:mod:`~keda_ray_scaler.sources.metrics`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

import requests
import structlog
import tenacity

from keda_ray_scaler.errors import (
    CapExceeded,
    DeadlineExceeded,
    FetchError,
    HttpStatusError,
    SchemaError,
    UntrustedData,
)
from keda_ray_scaler.schema import ClusterSnapshot, Sample, decoding
from keda_ray_scaler.sources.metrics import SourceMetrics
from keda_ray_scaler.sources.series_caps import DataCaps, check_caps
from keda_ray_scaler.sources.source_settings import RetrySettings
from keda_ray_scaler.telemetry import strip_userinfo

T = TypeVar("T")


def fail(metrics: SourceMetrics, source: str, kind: str, message: str) -> FetchError:
    """Count a failed fetch and build its error (``raise fail(...) from cause``); URLs in
    ``message`` lose their userinfo (the text reaches logs and KEDA)."""
    message = strip_userinfo(message)
    metrics.failures.labels(source, kind).inc()
    structlog.get_logger(__name__).warning(
        "source_failed", source=source, error_kind=kind, error=message
    )
    return FetchError(kind, message)


def over_cap(metrics: SourceMetrics, source: str, exc: CapExceeded, what: str) -> FetchError:
    """Count and log data refused because it exceeds a cap (``over_cap``, and by cap)."""
    metrics.over_cap.labels(source, exc.cap.value).inc()
    structlog.get_logger(__name__).warning(
        "source_failed", source=source, error_kind="over_cap", cap=exc.cap, error=str(exc)
    )
    metrics.failures.labels(source, "over_cap").inc()
    return FetchError("over_cap", f"{what}: {exc}")


def distrust(metrics: SourceMetrics, source: str, exc: UntrustedData) -> UntrustedData:
    """Count and log data refused as untrusted (its reason is the error kind); ``exc`` back."""
    kind = exc.reason.value
    metrics.failures.labels(source, kind).inc()
    structlog.get_logger(__name__).warning(
        "source_failed", source=source, error_kind=kind, error=str(exc)
    )
    return exc


def decode_checked(
    parse: Callable[[], list[Sample]],
    caps: DataCaps,
    metrics: SourceMetrics,
    source: str,
    what: str,
    keys: decoding.SealKeys | None = None,
) -> dict[str, ClusterSnapshot]:
    """``parse()``, the caps checked, then decoded (each seal under its cluster's key of
    ``keys``, if given); every refusal counted and logged as the source's (``over_cap``, an
    untrusted reason, ``bad_data``), so every source refuses alike."""
    try:
        samples = parse()
        check_caps(samples, caps)  # before decoding or planning any of it
        return decoding.decode(samples, keys)
    except CapExceeded as exc:
        raise over_cap(metrics, source, exc, what) from None
    except UntrustedData as exc:
        raise distrust(metrics, source, exc) from None
    except SchemaError as exc:
        raise fail(metrics, source, "bad_data", f"{what}: {exc}") from exc


def classify(exc: BaseException) -> tuple[str, bool]:
    """``(error kind, retryable)`` of one failed attempt."""
    if isinstance(exc, DeadlineExceeded):
        return "timeout", False
    if isinstance(exc, TimeoutError | requests.Timeout):
        return "timeout", True
    if isinstance(exc, requests.exceptions.SSLError):
        return "tls", False
    if isinstance(exc, requests.ConnectionError):
        return "connection", True
    if isinstance(exc, HttpStatusError):
        if exc.status in (401, 403):
            return "auth", False
        if 300 <= exc.status < 400:  # a source that follows none (scrape): refused, not retried
            return "redirect", False
        return "http", exc.status == 429 or exc.status >= 500
    if isinstance(exc, ValueError):  # SchemaError, JSONDecodeError: an answer we cannot read
        return "bad_data", False
    if isinstance(exc, requests.RequestException):
        return "connection", False
    if isinstance(exc, OSError):  # a credential or certificate file that cannot be read
        return "auth", False
    return "http", False


def _retryable(exc: BaseException) -> bool:
    return classify(exc)[1]


async def call_with_retries(
    call: Callable[[float], T],
    *,
    source: str,
    what: str,
    retry: RetrySettings,
    metrics: SourceMetrics,
    wait: tenacity.wait.wait_base | None = None,
    deadline: float | None = None,
) -> T:
    """Run the blocking ``call(timeout_s)`` in a thread, retried, within ``retry.deadline_s``.

    ``deadline`` (event-loop time) shares one deadline between several calls of one fetch;
    by default it is ``retry.deadline_s`` from now. ``timeout_s`` is what is left of it for
    that attempt. Retries connection errors, timeouts, 429 and 5xx; fails at once on other
    4xx, auth and TLS errors and a spent deadline. Every attempt is counted by outcome; the
    final failure is a :class:`FetchError` (a ``DemandUnavailable``) raised from the last
    cause. ``wait`` overrides the backoff (tests pass ``tenacity.wait_none()``).
    """
    loop = asyncio.get_running_loop()
    if deadline is None:
        deadline = loop.time() + retry.deadline_s
    attempts = _Attempts(call, source, what, retry, metrics, deadline)
    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(retry.attempts)
        | tenacity.stop_before_delay(max(0.0, deadline - loop.time())),
        wait=wait if wait is not None else retry.wait(),
        retry=tenacity.retry_if_exception(_retryable),
        before_sleep=attempts.before_sleep,
        reraise=True,
    )
    started = loop.time()
    try:
        return await retrying(attempts.attempt)
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as exc:
        raise fail(metrics, source, classify(exc)[0], f"{what}: {exc}") from exc
    finally:
        metrics.duration.labels(source).observe(loop.time() - started)


class _Attempts(Generic[T]):
    """The attempts of one :func:`call_with_retries`: each in a thread within what is left of
    the deadline, counted by outcome; each retry counted and logged."""

    def __init__(
        self,
        call: Callable[[float], T],
        source: str,
        what: str,
        retry: RetrySettings,
        metrics: SourceMetrics,
        deadline: float,
    ) -> None:
        self._call = call
        self._source = source
        self._retry = retry
        self._metrics = metrics
        self._deadline = deadline
        self._log = structlog.get_logger(__name__).bind(source=source, what=what)

    def before_sleep(self, state: tenacity.RetryCallState) -> None:
        """tenacity's hook before each wait: count and log the failed attempt."""
        exc = state.outcome.exception() if state.outcome else None
        self._metrics.retries.labels(self._source).inc()
        self._log.warning("source_retry", attempt=state.attempt_number, error=str(exc))

    async def attempt(self) -> T:
        """One call, bounded by what is left of the deadline."""
        left = self._deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise DeadlineExceeded(f"deadline of {self._retry.deadline_s}s exceeded")
        try:
            async with asyncio.timeout(left):
                result = await asyncio.to_thread(self._call, left)
        except BaseException as exc:
            if isinstance(exc, Exception):
                self._metrics.requests.labels(self._source, classify(exc)[0]).inc()
            raise
        self._metrics.requests.labels(self._source, "ok").inc()
        return result
