"""A kubelet for Ray worker pods: the one stand-in of the real-control-plane test.

kwok (the fake kubelet the control plane runs) makes pods Running and Ready but runs nothing.
:class:`RayKubelet` stands for the kubelet's container runtime, for Ray worker pods only: it
watches the worker pods of one namespace through the real API server and

- for each pod kwok reports ``Running`` (bound to a node, not being deleted), starts the pod's
  container: ``ray start --block`` joined to the local head, with ``RAY_CLOUD_INSTANCE_ID`` = the
  pod's name and ``RAY_NODE_TYPE_NAME`` = its group (as the manifests set them from the downward
  API), the group's logical resources, an IP and a temp dir of its own;
- when the pod gets a deletion timestamp (or is gone), stops that process as a kubelet would:
  SIGTERM, the pod's grace period (capped), SIGKILL.

Every start (raylet launched), deletion (seen) and stop (process gone) is recorded with its
wall-clock time, for the test's figures.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch
from ray_cluster import RayCluster, RayProcess

_MAX_GRACE_S = 10.0


@dataclass(frozen=True)
class GroupShape:
    """What ``ray start`` gets for a pod of one worker group."""

    num_cpus: int
    num_gpus: int = 0
    resources_json: str | None = None  # --resources (custom resources)


@dataclass(frozen=True)
class PodEvent:
    """A container started or stopped."""

    at: float  # time.time()
    pod: str
    group: str
    what: str  # "started" | "deleted" (deletion seen) | "stopped" (process gone)


@dataclass
class RayKubelet:
    """Watches worker pods and runs a raylet per Running pod; see the module docstring."""

    cluster: RayCluster
    api: client.CoreV1Api
    namespace: str
    label_selector: str
    groups: Mapping[str, GroupShape]
    group_label: str = "ray.io/group"
    events: list[PodEvent] = field(default_factory=list)
    running: dict[str, RayProcess] = field(default_factory=dict)
    _free_ips: list[str] = field(
        default_factory=lambda: [f"127.0.0.{n}" for n in range(250, 2, -1)]
    )
    _ip_of: dict[str, str] = field(default_factory=dict)
    _gone: dict[str, float] = field(default_factory=dict)  # pod -> when its deletion was seen
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(8))
    error: BaseException | None = None

    def start(self) -> RayKubelet:
        """Start watching in a thread."""
        self._thread = threading.Thread(target=self._watch_forever, name="ray-kubelet", daemon=True)
        self._thread.start()
        return self

    def request_stop(self) -> None:
        """Ask the watch to stop (it ends within its 5 s timeout); no wait."""
        self._stop.set()

    def stop(self) -> None:
        """Stop watching, then stop every container it started."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(15)
        self._pool.shutdown(wait=True)
        pods = list(self.running)
        if pods:  # in parallel: one grace period for all, not one per pod
            with ThreadPoolExecutor(max_workers=len(pods)) as pool:
                list(pool.map(functools.partial(self._kill, grace_s=2.0), pods))

    def __enter__(self) -> RayKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the watch -----------------------------------------------------------------------------

    def _watch_forever(self) -> None:
        while not self._stop.is_set():
            try:
                self._watch_once()
            except Exception as exc:  # the API server restarting: relist, as a kubelet does
                self.error = exc
                time.sleep(0.5)

    def _watch_once(self) -> None:
        listed = self.api.list_namespaced_pod(self.namespace, label_selector=self.label_selector)
        seen = set()
        for pod in listed.items:
            seen.add(pod.metadata.name)
            self._on_pod(pod, deleted=False)
        for name in set(self.running) - seen:
            self._on_gone(name)
        stream = watch.Watch().stream(
            self.api.list_namespaced_pod,
            self.namespace,
            label_selector=self.label_selector,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=5,
        )
        for event in stream:
            self._on_pod(event["object"], deleted=event["type"] == "DELETED")
            if self._stop.is_set():
                return

    def _on_pod(self, pod: Any, *, deleted: bool) -> None:
        name = pod.metadata.name
        if deleted or pod.metadata.deletion_timestamp is not None:
            grace = pod.metadata.deletion_grace_period_seconds
            self._on_gone(name, grace_s=_MAX_GRACE_S if grace is None else min(grace, _MAX_GRACE_S))
            return
        if pod.status is None or pod.status.phase != "Running" or not pod.spec.node_name:
            return
        group = (pod.metadata.labels or {}).get(self.group_label, "")
        with self._lock:
            if name in self.running or name in self._gone or group not in self.groups:
                return
            ip = self._free_ips.pop()
            self._ip_of[name] = ip
            self.running[name] = None  # type: ignore[assignment]  # reserved while starting
        self._pool.submit(self._launch, name, group, ip)

    def _launch(self, pod: str, group: str, ip: str) -> None:
        shape = self.groups[group]
        temp = self.cluster.root / "p" / ip.rsplit(".", 1)[1] / str(int(time.monotonic() * 1000))
        proc = self.cluster.add_worker(
            pod,
            group,
            num_cpus=shape.num_cpus,
            num_gpus=shape.num_gpus,
            resources=shape.resources_json,
            ip=ip,
            temp_dir=temp,
        )
        with self._lock:
            gone = pod in self._gone
            self.running[pod] = proc
            self.events.append(PodEvent(time.time(), pod, group, "started"))
        if gone:  # deleted while starting
            self._kill(pod, grace_s=_MAX_GRACE_S)

    def _on_gone(self, pod: str, grace_s: float = _MAX_GRACE_S) -> None:
        with self._lock:
            if pod in self._gone or pod not in self.running:
                self._gone.setdefault(pod, time.time())
                return
            self._gone[pod] = time.time()
            proc = self.running[pod]
            group = proc.group if proc is not None else "?"
            self.events.append(PodEvent(self._gone[pod], pod, group, "deleted"))
            starting = proc is None
        if not starting:  # a pod deleted while starting is stopped by _launch
            self._pool.submit(self._kill, pod, grace_s)

    def _kill(self, pod: str, grace_s: float) -> None:
        with self._lock:
            proc = self.running.pop(pod, None)
        if proc is None:
            return
        _stop(proc, grace_s)
        with self._lock:
            self.events.append(PodEvent(time.time(), pod, proc.group, "stopped"))
            ip = self._ip_of.pop(pod, None)
            if ip is not None:
                self._free_ips.insert(0, ip)  # reused last, once its ports are surely free

    # -- reading -------------------------------------------------------------------------------

    def live_pods(self, group: str | None = None) -> set[str]:
        """Pods whose deletion has not been seen, whether or not their raylet still runs
        (a drained raylet exits by itself; a kubelet would restart it until the pod goes)."""
        with self._lock:
            return {
                pod
                for pod, proc in self.running.items()
                if pod not in self._gone
                and (group is None or (proc is not None and proc.group == group))
            }

    def running_pods(self, group: str | None = None) -> set[str]:
        """Pods whose raylet process runs now."""
        with self._lock:
            return {
                pod
                for pod, proc in self.running.items()
                if proc is not None and proc.alive() and (group is None or proc.group == group)
            }

    def first(
        self, what: str, after: float, predicate: Callable[[PodEvent], bool] = bool
    ) -> PodEvent | None:
        """The first event ``what`` at or after ``after`` that ``predicate`` accepts."""
        with self._lock:
            return next(
                (e for e in self.events if e.what == what and e.at >= after and predicate(e)), None
            )


def _stop(proc: RayProcess, grace_s: float) -> None:
    from keda_ray_scaler.demo.raylets import stop_group

    with contextlib.suppress(ProcessLookupError):
        stop_group(proc.popen, grace_s)
