"""Retrying one Kubernetes API call: which failures are transient, and the attempt loop.

Why one home: the pod cache (:mod:`keda_ray_scaler.agent.kube.pod_cache`) and the RayCluster applier
(:mod:`keda_ray_scaler.agent.kuberay.kuberay_api`) make the same kind of calls through the same
client,
so what is worth another attempt and how attempts are spaced is one fact. Each caller keeps
what differs: the pod cache counts and logs every failed attempt, the applier does not retry a
precondition failure (409/422 on a patch: read and decide again), and each maps the last
failure to its own :class:`~keda_ray_scaler.errors.KubernetesError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import tenacity
import urllib3
from kubernetes import client as k8s

T = TypeVar("T")

#: What the client raises for a failed call: an API answer, or the transport under it.
KUBE_ERRORS: Final = (k8s.ApiException, urllib3.exceptions.HTTPError, OSError)
_RETRYABLE_STATUS: Final = frozenset({409, 429})


def is_retryable(exc: BaseException) -> bool:
    """409, 429, 5xx and transport errors are worth another attempt; 4xx else are not."""
    if isinstance(exc, k8s.ApiException):
        status = exc.status or 0
        return status == 0 or status in _RETRYABLE_STATUS or status >= 500
    return isinstance(exc, urllib3.exceptions.HTTPError | OSError)


def status_of(exc: BaseException) -> str:
    """The HTTP status as a metric label ("0" for transport errors)."""
    if isinstance(exc, k8s.ApiException):
        return str(exc.status or 0)
    return "0"


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
