"""The victim protocol's pod calls: fresh reads, annotation patches and deletes, each retried.

- Annotation changes are JSON merge patches of ``metadata.annotations`` carrying
  ``metadata.resourceVersion`` as a precondition, so a pod changed since it was read answers
  409 Conflict; the change is then re-decided on a fresh read (see :meth:`PodApi.update`).
- Every API call runs through :class:`~keda_ray_scaler.agent.kube.kube_retry.KubeCalls`: retried
  on 409, 429, 5xx and connection errors, every failed attempt counted, the last failure raised
  as :class:`~keda_ray_scaler.errors.KubernetesError` and logged once per pod and status until
  that call succeeds again.
- A drained victim the scale-down will never take (``choose.to_release``) is deleted by name
  with its uid as a precondition (:meth:`PodApi.delete`), Deployment mode only.
- The ``kubernetes`` client is synchronous: every call runs in ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import structlog
import tenacity
import urllib3
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.kube.kube_retry import KubeApiErrors, KubeCalls, backoff
from keda_ray_scaler.agent.kube.kube_settings import KubeSettings
from keda_ray_scaler.agent.kube.pod_info import pod_info
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.errors import KubernetesError

log = structlog.get_logger(__name__)

T = TypeVar("T")

_MERGE_PATCH = "application/merge-patch+json"

#: A pod's annotation changes as :meth:`PodApi.update` asks them (value None deletes).
Decide = Callable[[PodInfo], Mapping[str, str | None]]


def response_json(response: object) -> dict[str, Any]:
    """The body of a ``_preload_content=False`` call: the client then returns the raw urllib3
    response although its annotations name the model type."""
    assert isinstance(response, urllib3.HTTPResponse), type(response)
    return dict(json.loads(response.data))


class PodApi:
    """One namespace's pod calls, retried, counted and logged; ``cached(name)`` is the pod as
    the cache holds it (the first decision of :meth:`update`). Failed calls are counted in
    ``registry`` (:attr:`errors`, shared with the KubeRay calls)."""

    def __init__(
        self,
        api: k8s.CoreV1Api,
        settings: KubeSettings,
        registry: CollectorRegistry,
        cached: Callable[[str], PodInfo | None],
        *,
        wait: tenacity.wait.wait_base | None = None,
    ) -> None:
        self._api = api
        self._settings = settings
        self._cached = cached
        self._log = log.bind(cluster=settings.cluster, namespace=settings.namespace)
        self._calls = KubeCalls(
            KubeApiErrors(registry),
            cluster=settings.cluster,
            namespace=settings.namespace,
            attempts=settings.retry_attempts,
            wait=wait or backoff(settings.retry_initial_s, settings.retry_max_s),
        )

    @property
    def errors(self) -> KubeApiErrors:
        """The failed-call counter of the registry (one per registry: others share it)."""
        return self._calls.errors

    # --- reads and patches -----------------------------------------------------------------
    async def get(self, name: str) -> PodInfo | None:
        """A fresh read of one pod from the API server (not the cache); None when gone."""
        try:
            raw = await self.call("get", lambda: self._get_blocking(name), target=name)
        except KubernetesError as exc:
            if isinstance(exc.__cause__, k8s.ApiException) and exc.__cause__.status == 404:
                return None
            raise
        return pod_info(raw, self._settings.group_label)

    def _get_blocking(self, name: str) -> dict[str, Any]:
        response = self._api.read_namespaced_pod(
            name,
            self._settings.namespace,
            _preload_content=False,
            _request_timeout=self._settings.request_timeout_s,
        )
        return response_json(response)

    def _patch_blocking(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        response = self._api.patch_namespaced_pod(
            name,
            self._settings.namespace,
            dict(body),
            _content_type=_MERGE_PATCH,
            _preload_content=False,
            _request_timeout=self._settings.request_timeout_s,
        )
        return response_json(response)

    async def update(self, name: str, decide: Decide, *, fresh: bool = False) -> PodInfo | None:
        """Change one pod's annotations as ``decide`` says, never on stale data.

        ``decide(pod)`` returns the annotation changes (value None deletes) for the pod as read;
        an empty mapping means nothing to write. The first decision uses the cached pod (a
        fresh GET when ``fresh``, for decisions where "nothing to write" must not come from a
        stale cache), each retry a fresh GET. The merge patch carries the pod's
        resourceVersion, so a pod changed in between answers 409 and the change is decided
        again. Returns the pod as written (or
        as read when nothing changed), None when the pod is gone.
        """
        first = not fresh

        async def attempt() -> PodInfo | None:
            nonlocal first
            pod = self._cached(name) if first else None
            first = False
            if pod is None:
                try:
                    raw = await asyncio.to_thread(self._get_blocking, name)
                except k8s.ApiException as exc:
                    if exc.status == 404:
                        return None
                    raise
                pod = pod_info(raw, self._settings.group_label)
            changes = {k: v for k, v in decide(pod).items() if pod.annotations.get(k) != v}
            if not changes:
                return pod
            body = {"metadata": {"resourceVersion": pod.resource_version, "annotations": changes}}
            self._log.info("patching pod annotations", pod=name, annotations=changes)
            raw = await asyncio.to_thread(self._patch_blocking, name, body)
            return pod_info(raw, self._settings.group_label)

        return await self._calls.run("update", attempt, target=name)

    async def delete(self, name: str, uid: str) -> bool:
        """Delete the pod ``name`` if it is still the pod ``uid`` (a precondition): True when
        deleted, False when it is gone (404) or the name is another pod's now (409)."""

        async def attempt() -> bool:
            try:
                await asyncio.to_thread(self._delete_blocking, name, uid)
            except k8s.ApiException as exc:
                if exc.status in (404, 409):
                    return False
                raise
            return True

        self._log.info("deleting pod", pod=name, uid=uid)
        return await self._calls.run("delete", attempt, target=name)

    def _delete_blocking(self, name: str, uid: str) -> None:
        self._api.delete_namespaced_pod(
            name,
            self._settings.namespace,
            body=k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=uid)),
            _preload_content=False,
            _request_timeout=self._settings.request_timeout_s,
        )

    # --- retries -----------------------------------------------------------------------------
    async def call(self, operation: str, blocking: Callable[[], T], *, target: str = "") -> T:
        """``blocking()`` in a thread, retried, counted and logged (once per ``target``, the
        object, until it succeeds again)."""

        async def attempt() -> T:
            return await asyncio.to_thread(blocking)

        return await self._calls.run(operation, attempt, target=target)

    def count_error(self, operation: str, exc: BaseException) -> None:
        """One failed call of ``operation`` outside :meth:`call` (the pod watch), by status."""
        self._calls.count(operation, exc)
