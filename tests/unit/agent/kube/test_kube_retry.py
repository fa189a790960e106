"""KubeCalls: the one wrapper of the agent's Kubernetes calls (pods and KubeRay alike)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import tenacity
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler.agent.kube.kube_retry import KubeApiErrors, KubeCalls, LoggedFailures
from keda_ray_scaler.agent.kube.kube_settings import KubeSettings
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.kuberay.kuberay_api import KubeRayApi, KubeRaySettings
from keda_ray_scaler.agent.metric_names import KUBE_API_ERRORS
from keda_ray_scaler.errors import KubernetesError, PreconditionFailed


def api_error(status: int, message: str = "") -> k8s.ApiException:
    """An API server's answer with ``status`` (and its JSON ``message``, when given)."""
    exc = k8s.ApiException(status=status, reason="Reason")
    exc.body = json.dumps({"message": message}) if message else None
    return exc


class Failing:
    """An attempt that raises ``errors`` in turn, then returns "ok"; counts its calls."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def calls(registry: CollectorRegistry, attempts: int = 3) -> KubeCalls:
    """The wrapper for cluster "demo", without waits between attempts."""
    return KubeCalls(
        KubeApiErrors(registry),
        cluster="demo",
        namespace="ray",
        attempts=attempts,
        wait=tenacity.wait_none(),
    )


def errors(registry: CollectorRegistry, operation: str, code: str) -> float | None:
    """The failed attempts counted for ``operation`` with ``code``."""
    labels = {"cluster": "demo", "operation": operation, "code": code}
    return registry.get_sample_value(KUBE_API_ERRORS, labels)


async def test_a_transient_failure_is_retried_counted_and_the_call_succeeds() -> None:
    """503 then 429 then an answer: three attempts, two counted, two retries logged."""
    registry = CollectorRegistry()
    attempt = Failing(api_error(503), api_error(429))
    with capture_logs() as logs:
        assert await calls(registry).run("get", attempt) == "ok"
    assert attempt.calls == 3
    assert (errors(registry, "get", "503"), errors(registry, "get", "429")) == (1.0, 1.0)
    retries = [e["attempt"] for e in logs if e["event"] == "kubernetes call failed, retrying"]
    assert retries == [1, 2]
    assert [e for e in logs if e["log_level"] == "error"] == []


async def test_the_last_failure_is_logged_once_and_raised_typed_with_its_cause() -> None:
    """Three 503s: each counted, one error line, a KubernetesError from the ApiException."""
    registry = CollectorRegistry()
    attempt = Failing(*(api_error(503, "etcd is slow") for _ in range(3)))
    with capture_logs() as logs, pytest.raises(KubernetesError) as raised:
        await calls(registry).run("list", attempt)
    assert str(raised.value) == "list failed: 503 etcd is slow"
    assert isinstance(raised.value.__cause__, k8s.ApiException)
    assert errors(registry, "list", "503") == 3.0
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["kubernetes call failed"]


async def test_a_client_error_is_not_retried() -> None:
    """A 404 is the answer: one attempt, counted, raised."""
    registry = CollectorRegistry()
    attempt = Failing(api_error(404))
    with pytest.raises(KubernetesError, match="get failed: 404 Reason"):
        await calls(registry).run("get", attempt)
    assert (attempt.calls, errors(registry, "get", "404")) == (1, 1.0)


async def test_a_transport_error_counts_as_code_0() -> None:
    """A refused connection is transient: retried, counted with code 0, raised typed."""
    registry = CollectorRegistry()
    attempt = Failing(*(ConnectionRefusedError("refused") for _ in range(2)))
    with pytest.raises(KubernetesError, match="get failed: 0 refused"):
        await calls(registry, attempts=2).run("get", attempt)
    assert errors(registry, "get", "0") == 2.0


@pytest.mark.parametrize("status", [409, 422])
async def test_a_refused_precondition_is_raised_at_once_for_the_caller_to_decide_again(
    status: int,
) -> None:
    """With ``preconditions``, a 409/422 is an answer: not retried, not counted as an API error
    (the applier counts conflicts), not logged; a transient failure before it is counted."""
    registry = CollectorRegistry()
    attempt = Failing(api_error(503), api_error(status, "the object has been modified"))
    with capture_logs() as logs, pytest.raises(PreconditionFailed):
        await calls(registry).run("patch", attempt, preconditions=True)
    assert attempt.calls == 2
    assert (errors(registry, "patch", "503"), errors(registry, "patch", str(status))) == (1, None)
    assert [e["event"] for e in logs] == ["kubernetes call failed, retrying"]


async def test_without_preconditions_a_409_is_retried() -> None:
    """Reads and status writes retry a 409 like any conflict."""
    registry = CollectorRegistry()
    attempt = Failing(api_error(409))
    assert await calls(registry).run("status", attempt) == "ok"
    assert attempt.calls == 2


class CustomObjects:
    """A custom-objects client whose every call answers ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.calls = 0

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise self.error

    get_namespaced_custom_object = _fail
    patch_namespaced_custom_object = _fail
    patch_namespaced_custom_object_status = _fail


def kuberay_api(error: BaseException, registry: CollectorRegistry) -> tuple[KubeRayApi, Any]:
    """KubeRay mode's calls on a failing client, sharing the pod cache's counter (as the CLI)."""
    cache = PodCache(None, KubeSettings(namespace="ray", label_selector="x"), registry)  # type: ignore[arg-type]
    client = CustomObjects(error)
    api = KubeRayApi(
        client,  # type: ignore[arg-type]
        KubeRaySettings(namespace="ray", raycluster="demo"),
        cache.api_errors,
        wait=tenacity.wait_none(),
    )
    return api, client


async def test_kuberay_calls_are_retried_counted_and_logged_as_the_pod_calls() -> None:
    """A RayCluster read failing with 503: 3 attempts counted beside the pods', one error line."""
    registry = CollectorRegistry()
    api, client = kuberay_api(api_error(503), registry)
    with capture_logs() as logs, pytest.raises(KubernetesError, match="get_raycluster failed"):
        await api.raycluster()
    assert (client.calls, errors(registry, "get_raycluster", "503")) == (3, 3.0)
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["kubernetes call failed"]


async def test_a_kuberay_patch_refused_by_its_precondition_is_not_an_api_error() -> None:
    """A RayCluster patch answered 422 (a failed ``test`` op): PreconditionFailed at once, not
    in ray_scaler_kube_api_errors_total (ray_scaler_kuberay_conflicts_total counts it)."""
    registry = CollectorRegistry()
    api, client = kuberay_api(api_error(422), registry)
    with (
        capture_logs() as logs,
        pytest.raises(PreconditionFailed, match="patch_raycluster failed: 422"),
    ):
        await api.patch_raycluster([])
    assert (client.calls, errors(registry, "patch_raycluster", "422")) == (1, None)
    assert logs == []


def error_lines(logs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The error lines logged: (target, status) of each."""
    return [(e["target"], e["status"]) for e in logs if e["log_level"] == "error"]


async def test_a_call_refused_every_round_logs_once_until_it_succeeds_again() -> None:
    """A status write refused 403 (a RayWorkerGroup the Role does not name) five rounds: five
    attempts counted, one error line; after a success, the next refusal is logged again."""
    registry = CollectorRegistry()
    wrapper = calls(registry)
    with capture_logs() as logs:
        for _ in range(5):
            with pytest.raises(KubernetesError):
                await wrapper.run("status", Failing(api_error(403)), target="held")
        assert await wrapper.run("status", Failing(), target="held") == "ok"
        with pytest.raises(KubernetesError):
            await wrapper.run("status", Failing(api_error(403)), target="held")
    assert errors(registry, "status", "403") == 6.0
    assert error_lines(logs) == [("held", "403"), ("held", "403")]
    assert [e["event"] for e in logs if e["log_level"] == "debug"] == [
        "kubernetes call failed again"
    ] * 4


async def test_the_log_once_is_per_object_and_status() -> None:
    """Another object's success does not re-arm one still failing; a new status (500 after
    403) is logged once too."""
    registry = CollectorRegistry()
    wrapper = calls(registry, attempts=1)
    with capture_logs() as logs:
        for error in (api_error(403), api_error(403), api_error(500), api_error(500)):
            with pytest.raises(KubernetesError):
                await wrapper.run("status", Failing(error), target="held")
            assert await wrapper.run("status", Failing(), target="other") == "ok"
        with pytest.raises(KubernetesError):
            await wrapper.run("status", Failing(api_error(403)), target="other")
    assert error_lines(logs) == [("held", "403"), ("held", "500"), ("other", "403")]


def test_the_memory_of_logged_failures_is_bounded() -> None:
    """Past ``limit`` calls, the one failed longest ago is forgotten (logged again)."""
    logged = LoggedFailures(limit=2)
    assert [logged.first(("status", n), "403") for n in ("a", "b", "a", "c")] == [
        True,
        True,
        False,
        True,
    ]
    assert (logged.first(("status", "a"), "403"), logged.first(("status", "b"), "403")) == (
        False,
        True,
    )


async def test_a_kuberay_status_write_refused_by_rbac_logs_once() -> None:
    """KubeRay mode's status write of one RayWorkerGroup refused 403 round after round: each
    refusal counted, one error line naming the RayWorkerGroup."""
    registry = CollectorRegistry()
    api, client = kuberay_api(api_error(403, "cannot patch resource"), registry)
    with capture_logs() as logs:
        for _ in range(3):
            with pytest.raises(KubernetesError, match="patch_rayworkergroup_status failed: 403"):
                await api.patch_status("cpu-held", {"replicas": 1})
    assert (client.calls, errors(registry, "patch_rayworkergroup_status", "403")) == (3, 3.0)
    assert error_lines(logs) == [("cpu-held", "403")]
