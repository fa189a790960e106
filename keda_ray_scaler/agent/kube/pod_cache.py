"""The victim protocol's pod cache: the worker pods of one Ray cluster, by list and watch.

- The cache holds the worker pods of one Ray cluster (a label selector), filled by list and
  kept by watch, with a ``synced`` flag: False until the first list succeeds and again while a
  relist runs (after 410 Gone or any watch failure). Callers never act on an unsynced cache.
- A pod the selector matches is a worker only when the cluster's workload controls it
  (:mod:`~keda_ray_scaler.agent.kube.pod_owner`: labels are anybody's to set); the others are
  kept aside, counted and logged once, and screened again when the owner's uid becomes known.
- The loop is :class:`~keda_ray_scaler.agent.kube.list_watch.ListWatch` (the custom objects' too:
  relist at once on 410, back off on any other failure); this module adds *what* is listed
  (:class:`WorkerPods`) and what the cache does with each step (:class:`PodCache` is the loop's
  :class:`~keda_ray_scaler.agent.kube.list_watch.Follower`).
- Fresh reads, annotation patches and deletes are the calls of
  :class:`~keda_ray_scaler.agent.kube.pod_api.PodApi` (retried, counted and logged), and so is the
  list; its settings and client: :mod:`~keda_ray_scaler.agent.kube.kube_settings`.
- The ``kubernetes`` client is synchronous: every call runs in ``asyncio.to_thread``.

RBAC: a namespaced Role with ``pods`` verbs ``get``, ``list``, ``watch``, ``patch`` and, in
Deployment mode, ``delete``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
import tenacity
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry, Counter, Gauge

from keda_ray_scaler.agent.kube.kube_retry import KubeApiErrors, status_of
from keda_ray_scaler.agent.kube.kube_settings import KubeSettings
from keda_ray_scaler.agent.kube.list_watch import ListArgs, ListWatch
from keda_ray_scaler.agent.kube.pod_api import Decide, PodApi, response_json
from keda_ray_scaler.agent.kube.pod_info import pod_info
from keda_ray_scaler.agent.kube.pod_owner import PodController, controller_of
from keda_ray_scaler.agent.kube.pod_store import PodStore
from keda_ray_scaler.agent.kube.worker_screen import WorkerScreen
from keda_ray_scaler.agent.metric_names import KUBE_CACHE_SYNCED, KUBE_RELISTS
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.clock import Sleep
from keda_ray_scaler.errors import KubernetesError

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class WorkerPods:
    """The pods of ``settings.namespace`` matching ``settings.label_selector``: a
    :class:`~keda_ray_scaler.agent.kube.list_watch.Listing`."""

    api: k8s.CoreV1Api
    settings: KubeSettings

    def watch_args(self) -> ListArgs:
        """The namespace and the label selector."""
        return (self.settings.namespace,), {"label_selector": self.settings.label_selector}

    def list_blocking(self) -> dict[str, Any]:
        """One list: the JSON list body, read without the client's models."""
        response = self.api.list_namespaced_pod(
            self.settings.namespace,
            label_selector=self.settings.label_selector,
            _preload_content=False,
            _request_timeout=self.settings.request_timeout_s,
        )
        return response_json(response)

    def list_raw(self, *args: Any, **kwargs: Any) -> Any:
        """``list_namespaced_pod`` under a docstring naming no return type, so the Watch yields
        plain JSON (``raw_object``) instead of validating every event into ``V1Pod``: a field
        the model does not accept must not break the cache."""
        return self.api.list_namespaced_pod(*args, **kwargs)


class PodCache(PodStore):
    """Worker pods of one Ray cluster, by list and watch, plus reads and patches.

    Mutations of the cache happen on the event loop only (the watch thread hands events over
    with ``call_soon_threadsafe``), so readers need no lock.
    """

    def __init__(
        self,
        api: k8s.CoreV1Api,
        settings: KubeSettings,
        registry: CollectorRegistry,
        *,
        wait: tenacity.wait.wait_base | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        super().__init__()
        self._settings = settings
        self._calls = PodApi(api, settings, registry, self.get_cached, wait=wait)
        self._listing = WorkerPods(api, settings)
        self._loop = ListWatch(self._listing, self, settings, sleep=sleep)
        self._synced = False
        self._log = log.bind(cluster=settings.cluster, namespace=settings.namespace)
        self._screen = WorkerScreen(settings.owner, registry, cluster=settings.cluster)
        #: every pod the selector matches, workers or not, with its controller
        self._matched: dict[str, tuple[PodInfo, PodController | None]] = {}
        self._relists = Counter(
            KUBE_RELISTS,
            "Pod cache relists after watch expiry or failure.",
            ["cluster"],
            registry=registry,
        )
        self._synced_gauge = Gauge(
            KUBE_CACHE_SYNCED, "1 when the pod cache is synced.", ["cluster"], registry=registry
        )
        self._synced_gauge.labels(settings.cluster).set(0)

    @property
    def api_errors(self) -> KubeApiErrors:
        """The registry's failed-call counter, for the other Kubernetes calls to share."""
        return self._calls.errors

    # --- reading the cache -----------------------------------------------------------------
    @property
    def synced(self) -> bool:
        """True once a list succeeded and no relist is running."""
        return self._synced

    def _set_synced(self, synced: bool) -> None:
        self._synced = synced
        self._synced_gauge.labels(self._settings.cluster).set(1 if synced else 0)

    # --- list and watch --------------------------------------------------------------------
    async def run(self) -> None:
        """List, then watch, forever; relist at once on 410 Gone, after a back-off on any other
        failure (:class:`~keda_ray_scaler.agent.kube.list_watch.ListWatch`). Cancel to stop; the
        cache is unsynced from then on."""
        try:
            await self._loop.run()
        finally:
            self._set_synced(False)  # nothing keeps the cache fresh any more

    def stop(self) -> None:
        """Interrupt a blocking watch (safe from any thread)."""
        self._loop.stop()

    async def relist(self) -> str:
        """List the pods (with retries), replace the cache, mark it synced; the list's version."""
        return await self._loop.relist()

    # --- the Follower of the loop ----------------------------------------------------------
    async def fetch_list(self) -> dict[str, Any]:
        """Unsync, then list the pods through :class:`PodApi` (retried, counted, logged)."""
        self._set_synced(False)
        return await self._calls.call("list", self._listing.list_blocking)

    def listed(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Replace the cache with a whole list (its workers) and mark it synced."""
        matched = {}
        for raw in items:
            info = pod_info(raw, self._settings.group_label)
            matched[info.name] = (info, controller_of(raw))
        self._matched = matched
        self._screen.keep_only(info.uid for info, _ in matched.values())
        self._pods = self._workers()
        self._set_synced(True)
        self._notify()
        self._log.info(
            "pod cache synced", pods=len(self._pods), refused=len(matched) - len(self._pods)
        )

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One watch event into the cache (a pod that is no worker kept aside)."""
        info = pod_info(obj, self._settings.group_label)
        self._pods.pop(info.name, None)
        if kind == "DELETED":
            self._matched.pop(info.name, None)
            self._screen.keep_only(i.uid for i, _ in self._matched.values())
        else:
            controller = controller_of(obj)
            self._matched[info.name] = (info, controller)
            if self._screen.admits(info, controller):
                self._pods[info.name] = info
        self._notify()

    def expect_owner_uid(self, uid: str) -> None:
        """The uid of the owner the pods must name (KubeRay mode: the RayCluster's, from its
        watch); a change screens every pod again."""
        if self._screen.expect_uid(uid):
            self._pods = self._workers()
            self._notify()
            self._log.info("worker owner known", owner=str(self._screen.owner), uid=uid)

    def _workers(self) -> dict[str, PodInfo]:
        """The matched pods the owner rule admits."""
        admits = self._screen.admits
        return {name: info for name, (info, c) in self._matched.items() if admits(info, c)}

    def list_failed(self, exc: KubernetesError) -> None:
        """The list gave up (PodApi counted and logged each attempt): the cache stays unsynced."""
        self._log.error("pod list failed", error=str(exc))

    def watch_ended(self, exc: BaseException) -> None:
        """A watch failed or expired: unsynced until the relist, counted and logged."""
        self._set_synced(False)
        self._relists.labels(self._settings.cluster).inc()
        self._calls.count_error("watch", exc)
        self._log.warning("pod watch ended, relisting", status=status_of(exc), error=str(exc))

    def _notify(self) -> None:
        self._changed.set()

    # --- reads and patches (PodApi) --------------------------------------------------------
    async def get(self, name: str) -> PodInfo | None:
        """A fresh read of one pod from the API server (not the cache); None when gone."""
        return await self._calls.get(name)

    async def update(self, name: str, decide: Decide, *, fresh: bool = False) -> PodInfo | None:
        """Change one pod's annotations as ``decide`` says, never on stale data: the first
        decision on the cached pod unless ``fresh`` (:meth:`PodApi.update`)."""
        return await self._calls.update(name, decide, fresh=fresh)

    async def delete(self, name: str, uid: str) -> bool:
        """Delete the pod ``name`` if it is still the pod ``uid`` (:meth:`PodApi.delete`)."""
        return await self._calls.delete(name, uid)
