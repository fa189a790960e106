"""The one wrapper of the agent's Kubernetes API calls: retried, counted, logged, raised typed.

Why one home: the pod calls (:mod:`keda_ray_scaler.agent.kube.pod_api`) and KubeRay mode's
calls (:mod:`keda_ray_scaler.agent.kuberay.kuberay_api`) go through the same client, so what is
worth another attempt, how attempts are spaced, what is counted and logged and what is raised
is one behaviour, :meth:`KubeCalls.run`:

- retry while transient (:func:`is_retryable`: 409, 429, 5xx, transport), with bounded
  exponential backoff and jitter (tenacity; tests pass ``wait_none()``);
- count every failed attempt in ``ray_scaler_kube_api_errors_total{cluster,operation,code}``
  (:class:`KubeApiErrors`: one per registry, shared by every caller) and log each retry;
- raise the last failure as :class:`~keda_ray_scaler.errors.KubernetesError` (``raise ...
  from``, so a caller can read the status of the cause), logged at error level once per
  operation, object and status until that call succeeds again (:class:`LoggedFailures`): a call
  refused by design every round (a status write the Role does not name) logs once, not every
  round.

What differs is an argument: a patch with a precondition (``preconditions=True``) is not retried
on 409/422, since the object changed and the caller reads and decides again, and raises
:class:`~keda_ray_scaler.errors.PreconditionFailed`, neither counted here nor logged: an answer,
which the caller counts and logs. The list-and-watch loops use :data:`KUBE_ERRORS`,
:func:`status_of` and :func:`with_retries` directly.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import structlog
import tenacity
import urllib3
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler.agent.metric_names import KUBE_API_ERRORS
from keda_ray_scaler.errors import KubernetesError, PreconditionFailed

log = structlog.get_logger(__name__)

T = TypeVar("T")

#: What the client raises for a failed call: an API answer, or the transport under it.
KUBE_ERRORS: Final = (k8s.ApiException, urllib3.exceptions.HTTPError, OSError)
_RETRYABLE_STATUS: Final = frozenset({409, 429})
#: A patch's precondition failed: 409 (resourceVersion) or 422 (a JSON patch ``test`` op).
_PRECONDITION_STATUS: Final = frozenset({409, 422})


def is_retryable(exc: BaseException) -> bool:
    """409, 429, 5xx and transport errors are worth another attempt; 4xx else are not."""
    if isinstance(exc, k8s.ApiException):
        status = exc.status or 0
        return status == 0 or status in _RETRYABLE_STATUS or status >= 500
    return isinstance(exc, urllib3.exceptions.HTTPError | OSError)


def is_precondition(exc: BaseException) -> bool:
    """The object changed since it was read (a patch's 409 or 422)."""
    return isinstance(exc, k8s.ApiException) and exc.status in _PRECONDITION_STATUS


def retryable_keeping_preconditions(exc: BaseException) -> bool:
    """:func:`is_retryable`, but a precondition failure is not transient: decide again."""
    return not is_precondition(exc) and is_retryable(exc)


def _never(exc: BaseException) -> bool:
    """No failure is an answer (a call without preconditions)."""
    return False


def status_of(exc: BaseException) -> str:
    """The HTTP status as a metric label ("0" for transport errors)."""
    if isinstance(exc, k8s.ApiException):
        return str(exc.status or 0)
    return "0"


def detail(exc: BaseException) -> str:
    """What went wrong in one line: the API server's message, else the error's text."""
    if isinstance(exc, k8s.ApiException):
        try:
            return str(json.loads(exc.body or "{}").get("message") or exc.reason)
        except (ValueError, AttributeError):
            return str(exc.reason)
    return str(exc)


def kube_error(operation: str, exc: BaseException) -> KubernetesError:
    """The typed error for a failed ``operation`` (raise it ``from exc``)."""
    return KubernetesError(f"{operation} failed: {status_of(exc)} {detail(exc)}")


def backoff(initial_s: float, max_s: float) -> tenacity.wait.wait_base:
    """Exponential backoff with jitter between attempts (tests pass ``wait_none()``)."""
    return tenacity.wait_exponential_jitter(multiplier=initial_s, max=max_s)


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    attempts: int,
    wait: tenacity.wait.wait_base,
    retryable: Callable[[BaseException], bool] = is_retryable,
    on_error: Callable[[BaseException], None] | None = None,
    before_sleep: Callable[[tenacity.RetryCallState], None] | None = None,
) -> T:
    """``attempt()``'s result, trying up to ``attempts`` times while ``retryable``; the last
    client error is raised as it is. ``on_error`` sees every failed attempt's client error."""
    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=wait,
        retry=tenacity.retry_if_exception(retryable),
        before_sleep=before_sleep,
        reraise=True,
    )
    async for state in retrying:
        with state:
            try:
                return await attempt()
            except KUBE_ERRORS as exc:
                if on_error is not None:
                    on_error(exc)
                raise
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover


class KubeApiErrors:
    """Failed Kubernetes API calls, each attempt, by cluster, operation and status code.

    One per registry (a second would register the metric twice): the composition root hands the
    pod cache's (:attr:`~keda_ray_scaler.agent.kube.pod_cache.PodCache.api_errors`) to the
    KubeRay calls."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._counter = Counter(
            KUBE_API_ERRORS,
            "Failed Kubernetes API calls, each attempt.",
            ["cluster", "operation", "code"],
            registry=registry,
        )

    def count(self, cluster: str, operation: str, exc: BaseException) -> None:
        """One failed attempt of ``operation``, by its status."""
        self._counter.labels(cluster, operation, status_of(exc)).inc()


class LoggedFailures:
    """The final failures already logged, by call (operation and object): each status once
    until that call succeeds again. At most ``limit`` calls are held, the one failed longest ago
    forgotten first (its next failure is logged again)."""

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._statuses: dict[tuple[str, str], set[str]] = {}

    def first(self, call: tuple[str, str], status: str) -> bool:
        """Whether ``call`` failing with ``status`` is new since its last success (log it)."""
        seen = self._statuses.pop(call, set())
        new = status not in seen
        seen.add(status)
        self._statuses[call] = seen  # the latest failure last
        while len(self._statuses) > self._limit:
            del self._statuses[next(iter(self._statuses))]
        return new

    def succeeded(self, call: tuple[str, str]) -> None:
        """``call`` succeeded: its next failure is logged."""
        self._statuses.pop(call, None)


class KubeCalls:
    """One cluster's calls in one namespace, each run by :meth:`run` (the module's one
    behaviour); ``attempts`` and ``wait`` space the retries of one call."""

    def __init__(
        self,
        errors: KubeApiErrors,
        *,
        cluster: str,
        namespace: str,
        attempts: int,
        wait: tenacity.wait.wait_base,
    ) -> None:
        self.errors = errors
        self._log = log.bind(cluster=cluster, namespace=namespace)
        self._cluster = cluster
        self._attempts = attempts
        self._wait = wait
        self._logged = LoggedFailures()

    async def run(
        self,
        operation: str,
        attempt: Callable[[], Awaitable[T]],
        *,
        preconditions: bool = False,
        target: str = "",
    ) -> T:
        """``attempt()``'s result, retried while transient; every failed attempt counted, each
        retry logged; the last failure raised as KubernetesError, logged once per ``target``
        (the object) and status until the call succeeds again; or (with ``preconditions``) a
        409/422 raised at once as PreconditionFailed, neither counted nor logged."""
        answer = is_precondition if preconditions else _never
        try:
            result = await with_retries(
                attempt,
                attempts=self._attempts,
                wait=self._wait,
                retryable=retryable_keeping_preconditions if preconditions else is_retryable,
                on_error=lambda exc: None if answer(exc) else self.count(operation, exc),
                before_sleep=functools.partial(self._log_retry, operation),
            )
        except KUBE_ERRORS as exc:
            if answer(exc):  # an answer, not a failure: the caller counts and logs it
                raise PreconditionFailed(str(kube_error(operation, exc))) from exc
            self._log_failure(operation, target, exc)
            raise kube_error(operation, exc) from exc
        self._logged.succeeded((operation, target))
        return result

    def count(self, operation: str, exc: BaseException) -> None:
        """One failed attempt of ``operation`` (also for failures outside :meth:`run`)."""
        self.errors.count(self._cluster, operation, exc)

    def _log_failure(self, operation: str, target: str, exc: BaseException) -> None:
        status = status_of(exc)
        fields = {"operation": operation, "target": target, "status": status, "error": str(exc)}
        if self._logged.first((operation, target), status):
            self._log.error("kubernetes call failed", **fields)
        else:  # logged since the call last succeeded
            self._log.debug("kubernetes call failed again", **fields)

    def _log_retry(self, operation: str, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self._log.warning(
            "kubernetes call failed, retrying",
            operation=operation,
            attempt=state.attempt_number,
            status=status_of(exc) if exc else "",
            error=str(exc),
        )
