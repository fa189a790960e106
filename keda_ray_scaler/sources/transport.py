"""HTTP(S) to Prometheus or to the agent: TLS, credentials, retries, deadlines and metrics.

Shared by :mod:`~keda_ray_scaler.sources.prometheus` and :mod:`~keda_ray_scaler.sources.scrape`.
Credentials come from files named in settings (the CLI's flags), never from trigger metadata:
a bearer token file is re-read whenever it changes (a projected service-account token is rotated
in place), so is a basic-auth password file. Client certificate and key are read by the TLS
layer for every new connection, so rotated files are picked up without a restart.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Generic, TypeVar

import requests
import requests.auth
import structlog
import tenacity
from prometheus_client import CollectorRegistry, Counter, Histogram

from keda_ray_scaler.errors import (
    DeadlineExceeded,
    FetchError,
    HttpStatusError,
    SchemaError,
    UntrustedData,
)
from keda_ray_scaler.schema import ClusterSnapshot, Sample, decoding
from keda_ray_scaler.sources.caps import CapExceeded, DataCaps, check_caps
from keda_ray_scaler.telemetry import strip_userinfo

#: KEDA gives an external scaler 3 s per call; a fetch (all attempts) must end well before.
DEFAULT_DEADLINE_S: Final = 2.5
#: Error kinds, the ``error`` label of :attr:`SourceMetrics.errors` and the start of messages.
ERROR_KINDS: Final = (
    "timeout",
    "connection",
    "http",
    "auth",
    "tls",
    "bad_data",
    "empty",
    "two_origins",
    "over_cap",
)


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """How to reach an HTTP(S) endpoint. Paths are read at request time, never stored inline.

    ``ca_file``: PEM bundle that verifies the server (default: the system store).
    ``cert_file``/``key_file``: client certificate for mTLS.
    ``bearer_token_file``: sent as ``Authorization: Bearer``; re-read when the file changes.
    ``basic_auth_user`` with ``basic_auth_password_file``: HTTP basic auth.
    ``insecure_skip_verify``: do not verify the server certificate (tests and labs only).
    """

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    bearer_token_file: Path | None = None
    basic_auth_user: str | None = None
    basic_auth_password_file: Path | None = None
    insecure_skip_verify: bool = False

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if (self.basic_auth_user is None) != (self.basic_auth_password_file is None):
            raise ValueError("basic_auth_user and basic_auth_password_file go together")
        if self.bearer_token_file is not None and self.basic_auth_user is not None:
            raise ValueError("choose bearer_token_file or basic auth, not both")


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """Retries of one fetch, all inside ``deadline_s``.

    ``attempts``: tries per fetch (1 = no retry). Backoff doubles from ``initial_backoff_s`` up
    to ``max_backoff_s``, with jitter of up to ``initial_backoff_s``: a refresh interval is a few
    seconds, so waits stay short and bounded. ``deadline_s`` bounds the whole fetch, retries
    included; each attempt's HTTP timeout is what is left of it.
    """

    attempts: int = 3
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 0.5
    deadline_s: float = DEFAULT_DEADLINE_S

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if not 0 < self.deadline_s <= 60:
            raise ValueError(f"deadline_s must be in (0, 60], got {self.deadline_s}")
        if self.initial_backoff_s < 0 or self.max_backoff_s < self.initial_backoff_s:
            raise ValueError("need 0 <= initial_backoff_s <= max_backoff_s")

    def wait(self) -> tenacity.wait.wait_base:
        """The tenacity wait strategy these settings describe."""
        return tenacity.wait_exponential_jitter(
            multiplier=self.initial_backoff_s,
            max=self.max_backoff_s,
            jitter=self.initial_backoff_s,
        )


class _FileSecret:
    """The stripped content of a file, re-read when its inode, size or mtime changes."""

    def __init__(self, path: Path, what: str) -> None:
        self._path = path
        self._what = what
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._value = ""

    def read(self) -> str:
        st = os.stat(self._path)  # follows the ..data symlink of a projected volume
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if stamp != self._stamp:
                value = self._path.read_text().strip()
                if not value:
                    raise OSError(f"{self._what} file {self._path} is empty")
                self._value, self._stamp = value, stamp
            return self._value


class BearerTokenFileAuth(requests.auth.AuthBase):
    """``Authorization: Bearer <token>`` with the token read from a file, re-read on change."""

    def __init__(self, path: Path) -> None:
        self._token = _FileSecret(path, "bearer token")

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self._token.read()}"
        return r


class BasicAuthFile(requests.auth.AuthBase):
    """HTTP basic auth with the password read from a file, re-read on change."""

    def __init__(self, user: str, password_file: Path) -> None:
        self._user = user
        self._password = _FileSecret(password_file, "basic-auth password")

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        return requests.auth.HTTPBasicAuth(self._user, self._password.read())(r)


def build_session(settings: HttpSettings) -> requests.Session:
    """A ``requests`` session configured from ``settings`` and nothing else.

    ``trust_env`` is off: proxies, ``.netrc`` and CA bundles from the environment are not
    hidden inputs of the scaler.
    """
    session = requests.Session()
    session.trust_env = False
    if settings.insecure_skip_verify:
        session.verify = False
    elif settings.ca_file is not None:
        session.verify = str(settings.ca_file)
    if settings.cert_file is not None and settings.key_file is not None:
        session.cert = (str(settings.cert_file), str(settings.key_file))
    if settings.bearer_token_file is not None:
        session.auth = BearerTokenFileAuth(settings.bearer_token_file)
    elif settings.basic_auth_user is not None and settings.basic_auth_password_file is not None:
        session.auth = BasicAuthFile(settings.basic_auth_user, settings.basic_auth_password_file)
    return session


@dataclass(frozen=True, slots=True)
class SourceMetrics:
    """Requests a source makes (``keda_ray_scaler_source_*``), labelled by source kind."""

    requests: Counter  # {source, outcome}: one per HTTP attempt, ok | one of ERROR_KINDS
    retries: Counter  # {source}
    failures: Counter  # {source, error}: fetches that raised DemandUnavailable, by ERROR_KINDS
    duration: Histogram  # {source}: one fetch, retries included
    over_cap: Counter  # {source, cap}: fetches refused because the data exceeded a cap


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
    )


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
) -> dict[str, ClusterSnapshot]:
    """``parse()``, the caps checked, then decoded; every refusal counted and logged as the
    source's (``over_cap``, an untrusted reason, ``bad_data``), so every source refuses alike."""
    try:
        samples = parse()
        check_caps(samples, caps)  # before decoding or planning any of it
        return decoding.decode(samples)
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
