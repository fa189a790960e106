"""The one wrapper of the controller's Kubernetes API calls: retried while transient, raised typed.

:meth:`KubeCalls.run` runs one blocking call (the controller's rounds run in a worker thread):

- retried while the failure is transient (:func:`is_transient`: 429, 5xx, transport), with
  exponential backoff and jitter (tenacity; tests pass ``wait_none()``); each retry logged;
- every failed attempt counted in ``ray_scaler_controller_kube_api_errors_total{operation,code}``;
- the last failure raised as :class:`CallFailed` (``raise ... from``): its status, the server's
  message and, for a server-side apply conflict, the fields another manager holds. A 404, a
  409 or a 422 is an *answer* (the object is gone, changed, held by another manager, refused):
  never retried, the caller decides.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final, TypeVar

import structlog
import tenacity
import urllib3
from kubernetes import client as k8s

from keda_ray_scaler.controller.metrics import ControllerMetrics
from keda_ray_scaler.errors import KubernetesError

log = structlog.get_logger(__name__)

T = TypeVar("T")

#: What the client raises for a failed call: an API answer, or the transport under it.
KUBE_ERRORS: Final = (k8s.ApiException, urllib3.exceptions.HTTPError, OSError)
NOT_FOUND: Final = 404
CONFLICT: Final = 409
GONE: Final = 410


class CallFailed(KubernetesError):
    """A call's last failure: its HTTP ``status`` (0: transport), the server's ``message``, and
    the fields another field manager holds (a server-side apply conflict; else empty)."""

    def __init__(self, operation: str, status: int, message: str, fields: tuple[str, ...]) -> None:
        self.operation = operation
        self.status = status
        self.message = message
        self.fields = fields
        super().__init__(f"{operation} failed: {status} {message}")

    @property
    def field_conflict(self) -> bool:
        """A server-side apply refused: another manager holds fields we would change."""
        return self.status == CONFLICT and bool(self.fields)


def status_of(exc: BaseException) -> int:
    """The HTTP status of a client error (0 for transport errors)."""
    return int(exc.status or 0) if isinstance(exc, k8s.ApiException) else 0


def is_transient(exc: BaseException) -> bool:
    """429, 5xx and transport errors are worth another attempt; any other answer is not."""
    if isinstance(exc, k8s.ApiException):
        status = status_of(exc)
        return status == 0 or status == 429 or status >= 500
    return isinstance(exc, urllib3.exceptions.HTTPError | OSError)


def call_failed(operation: str, exc: BaseException) -> CallFailed:
    """The typed error of a failed ``operation`` (raise it ``from exc``)."""
    if not isinstance(exc, k8s.ApiException):
        return CallFailed(operation, 0, str(exc) or type(exc).__name__, ())
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {}
    if not isinstance(body, dict):
        body = {}
    causes = (body.get("details") or {}).get("causes") or ()
    fields = tuple(
        str(c.get("field") or "")
        for c in causes
        if isinstance(c, dict) and c.get("reason") == "FieldManagerConflict"
    )
    message = str(body.get("message") or exc.reason or "")
    return CallFailed(operation, status_of(exc), message, fields)


def backoff(initial_s: float, max_s: float) -> tenacity.wait.wait_base:
    """Exponential backoff with jitter between attempts (tests pass ``wait_none()``)."""
    return tenacity.wait_exponential_jitter(initial=initial_s, max=max_s, jitter=initial_s)


class KubeCalls:
    """Runs the controller's API calls (module doc); one per process, shared by its threads."""

    def __init__(
        self, metrics: ControllerMetrics, *, attempts: int, wait: tenacity.wait.wait_base
    ) -> None:
        self._errors = metrics.api_errors
        self._attempts = attempts
        self._wait = wait

    def run(self, operation: str, call: Callable[[], T]) -> T:
        """``call()``'s result, retried while transient; the last failure as :class:`CallFailed`."""
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self._attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception(is_transient),
            before_sleep=lambda state: self._log_retry(operation, state),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    try:
                        return call()
                    except KUBE_ERRORS as exc:
                        if status_of(exc) != NOT_FOUND:  # an answer, not an error
                            self._errors.labels(operation, str(status_of(exc))).inc()
                        raise
        except KUBE_ERRORS as exc:
            raise call_failed(operation, exc) from exc
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    @staticmethod
    def _log_retry(operation: str, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "kubernetes call failed, retrying",
            operation=operation,
            attempt=state.attempt_number,
            status=status_of(exc) if exc else 0,
            error=str(exc),
        )
