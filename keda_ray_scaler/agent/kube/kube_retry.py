"""The one wrapper of the agent's Kubernetes API calls: retried, counted, logged, raised typed.

Why one home: the pod calls (:mod:`keda_ray_scaler.agent.kube.pod_api`) and KubeRay mode's
calls (:mod:`keda_ray_scaler.agent.kuberay.kuberay_api`) go through the same client, so what is
worth another attempt, how attempts are spaced, what is counted and logged and what is raised
is one behaviour, :meth:`KubeCalls.run`:

- retry while transient (:func:`is_retryable`: 409, 429, 5xx, transport), with bounded
  exponential backoff and jitter (tenacity; tests pass ``wait_none()``);
- count every failed attempt in ``ray_scaler_kube_api_errors_total{cluster,operation,code}``
  (:class:`KubeApiErrors`: one per registry, shared by every caller) and log each retry;
- log the last failure once and raise it as :class:`~keda_ray_scaler.errors.KubernetesError`
  (``raise ... from``, so a caller can read the status of the cause).

What differs is an argument: a patch with a precondition (``preconditions=True``) is not retried
on 409/422, since the object changed and the caller reads and decides again, and raises
:class:`~keda_ray_scaler.errors.PreconditionFailed`, which the caller logs. The list-and-watch
loops use :data:`KUBE_ERRORS`, :func:`status_of` and :func:`with_retries` directly.
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

    async def run(
        self, operation: str, attempt: Callable[[], Awaitable[T]], *, preconditions: bool = False
    ) -> T:
        """``attempt()``'s result, retried while transient; every failed attempt counted, each
        retry logged; the last failure logged once and raised as KubernetesError, or (with
        ``preconditions``) a 409/422 raised at once as PreconditionFailed."""
        try:
            return await with_retries(
                attempt,
                attempts=self._attempts,
                wait=self._wait,
                retryable=retryable_keeping_preconditions if preconditions else is_retryable,
                on_error=functools.partial(self.count, operation),
                before_sleep=functools.partial(self._log_retry, operation),
            )
        except KUBE_ERRORS as exc:
            if preconditions and is_precondition(exc):  # an answer, not a failure
                raise PreconditionFailed(str(kube_error(operation, exc))) from exc
            self._log.error(
                "kubernetes call failed", operation=operation, status=status_of(exc), error=str(exc)
            )
            raise kube_error(operation, exc) from exc

    def count(self, operation: str, exc: BaseException) -> None:
        """One failed attempt of ``operation`` (also for failures outside :meth:`run`)."""
        self.errors.count(self._cluster, operation, exc)

    def _log_retry(self, operation: str, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self._log.warning(
            "kubernetes call failed, retrying",
            operation=operation,
            attempt=state.attempt_number,
            status=status_of(exc) if exc else "",
            error=str(exc),
        )
