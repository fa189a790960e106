"""The controller's API calls: transient failures retried and counted, answers (404, 409, 422)
raised at once and typed, a server-side apply conflict read into the fields another holds."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import tenacity
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from keda_ray_scaler.controller.kube_calls import CallFailed, KubeCalls, call_failed
from keda_ray_scaler.controller.metrics import ControllerMetrics


def api_error(status: int, body: dict[str, object] | None = None) -> k8s.ApiException:
    """An ApiException as the client raises it."""
    exc = k8s.ApiException(status=status, reason="r")
    exc.body = json.dumps(body or {"message": f"status {status}"})
    return exc


def failing(*errors: BaseException, result: str = "ok") -> tuple[Callable[[], str], list[int]]:
    """A call raising ``errors`` in turn, then returning ``result``; and its attempt count."""
    attempts: list[int] = []

    def call() -> str:
        attempts.append(1)
        if len(attempts) <= len(errors):
            raise errors[len(attempts) - 1]
        return result

    return call, attempts


def calls() -> tuple[KubeCalls, CollectorRegistry]:
    """Four attempts, no wait."""
    registry = CollectorRegistry()
    return KubeCalls(ControllerMetrics(registry), attempts=4, wait=tenacity.wait_none()), registry


def errors(registry: CollectorRegistry, code: str) -> float:
    """Failed attempts counted with ``code``."""
    labels = {"operation": "get", "code": code}
    return registry.get_sample_value("ray_scaler_controller_kube_api_errors_total", labels) or 0.0


def test_transient_failures_are_retried_and_counted() -> None:
    """A 503 and a reset connection, then success: three attempts, two counted."""
    runner, registry = calls()
    call, attempts = failing(api_error(503), ConnectionResetError())
    assert runner.run("get", call) == "ok"
    assert len(attempts) == 3
    assert (errors(registry, "503"), errors(registry, "0")) == (1, 1)


@pytest.mark.parametrize("status", [404, 409, 422, 403])
def test_answers_are_raised_at_once_typed(status: int) -> None:
    """Not transient: one attempt, CallFailed with the status; a 404 is not counted."""
    runner, registry = calls()
    call, attempts = failing(api_error(status))
    with pytest.raises(CallFailed) as raised:
        runner.run("get", call)
    assert (len(attempts), raised.value.status) == (1, status)
    assert errors(registry, str(status)) == (0 if status == 404 else 1)


def test_retries_give_up_after_the_attempts() -> None:
    """Four 500s: CallFailed 500 after four attempts."""
    runner, _ = calls()
    call, attempts = failing(*[api_error(500)] * 4)
    with pytest.raises(CallFailed, match="500"):
        runner.run("get", call)
    assert len(attempts) == 4


def test_an_apply_conflict_names_the_fields_another_manager_holds() -> None:
    """The API server's causes read into ``fields``; a stale resourceVersion has none."""
    body = {
        "message": 'Apply failed with 1 conflict: conflict with "kubectl-edit"',
        "reason": "Conflict",
        "details": {
            "causes": [
                {"reason": "FieldManagerConflict", "field": ".spec.maxReplicaCount"},
                {"reason": "Other", "field": ".x"},
            ]
        },
    }
    held = call_failed("apply ScaledObject", api_error(409, body))
    assert (held.fields, held.field_conflict) == ((".spec.maxReplicaCount",), True)
    stale = call_failed("apply ScaledObject", api_error(409))
    assert (stale.fields, stale.field_conflict) == ((), False)
    garbled = k8s.ApiException(status=500, reason="Internal")
    garbled.body = "<html>"
    assert call_failed("get", garbled).message == "Internal"
