"""What happened to the Ray worker pods, as the API server tells it (a watch in the background).

The real node's kubelet runs the pods; the test only watches. :class:`PodWatch` records, per pod,
when it was first seen Ready and when its deletion began (the first event that carries a
``deletionTimestamp``: the moment the kubelet is told to stop it) or, if the pod vanished
between two events, when it was seen gone.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self

from kubernetes import client, watch


@dataclass(frozen=True)
class PodEvent:
    """A pod became Ready, began its deletion, or was seen gone."""

    at: float  # time.time()
    pod: str
    group: str
    what: str  # "created" (first seen) | "ready" | "deleted" (deletion began) | "gone"


@dataclass
class PodWatch:
    """Watches the pods of ``label_selector`` in ``namespace``; see the module docstring."""

    core: client.CoreV1Api
    namespace: str
    label_selector: str
    events: list[PodEvent] = field(default_factory=list)
    _pods: dict[str, Any] = field(default_factory=dict)  # name -> the newest V1Pod
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.request_stop()
        if self._thread is not None:
            self._thread.join(10)

    def request_stop(self) -> None:
        """Ask the watch to end (within its 5 s timeout); no wait."""
        self._stop.set()

    # -- reading -------------------------------------------------------------------------------

    def deleted_since(self, since: float, group: str | None = None) -> list[tuple[str, float]]:
        """Pods (of ``group``, or any) whose deletion began at or after ``since``, with the
        time (one entry a pod)."""
        return [
            (e.pod, e.at)
            for e in list(self.events)
            if e.what == "deleted" and e.at >= since and group in (None, e.group)
        ]

    def created_since(self, since: float, group: str) -> list[tuple[str, float]]:
        """Pods of ``group`` first seen at or after ``since``, with the time."""
        return [
            (e.pod, e.at)
            for e in list(self.events)
            if e.what == "created" and e.at >= since and e.group == group
        ]

    def most_alive(self, group: str, since: float) -> int:
        """The most pods of ``group`` that existed at once (deleting ones included) since
        ``since``, from the events (pods alive at ``since`` count from then)."""
        alive: set[str] = set()
        most = 0
        for e in sorted(list(self.events), key=lambda e: e.at):
            if e.group != group:
                continue
            if e.what == "created":
                alive.add(e.pod)
            elif e.what == "gone":
                alive.discard(e.pod)
            if e.at >= since:
                most = max(most, len(alive))
        return most

    def live_pods(self, group: str) -> set[str]:
        """Pods of ``group`` that still exist (terminating ones included)."""
        with self._lock:
            return {n for n, p in self._pods.items() if _group(p) == group}

    def running_pods(self, group: str) -> set[str]:
        """Pods of ``group`` that are Ready and not being deleted."""
        with self._lock:
            return {
                n
                for n, p in self._pods.items()
                if _group(p) == group and p.metadata.deletion_timestamp is None and _ready(p)
            }

    # -- the watch -----------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # API server hiccup: re-list and watch again
                listed = self.core.list_namespaced_pod(
                    self.namespace, label_selector=self.label_selector
                )
                self._relist(listed.items)
                for event in watch.Watch().stream(
                    self.core.list_namespaced_pod,
                    self.namespace,
                    label_selector=self.label_selector,
                    resource_version=listed.metadata.resource_version,
                    timeout_seconds=5,
                ):
                    self._seen(event["object"], gone=event["type"] == "DELETED")
                    if self._stop.is_set():
                        return
            self._stop.wait(0.2)

    def _relist(self, pods: list[Any]) -> None:
        names = {p.metadata.name for p in pods}
        with self._lock:
            vanished = [self._pods[n] for n in self._pods if n not in names]
        for pod in vanished:
            self._seen(pod, gone=True)
        for pod in pods:
            self._seen(pod, gone=False)

    def _seen(self, pod: Any, *, gone: bool) -> None:
        name, now = pod.metadata.name, time.time()
        with self._lock:
            before = self._pods.get(name)
            if gone:
                self._pods.pop(name, None)
            else:
                self._pods[name] = pod
        was_ready = before is not None and _ready(before)
        was_deleting = before is not None and before.metadata.deletion_timestamp is not None
        if before is None and not gone:
            self._record(now, pod, "created")
        if not was_ready and _ready(pod) and not gone:
            self._record(now, pod, "ready")
        if not was_deleting and (gone or pod.metadata.deletion_timestamp is not None):
            self._record(now, pod, "deleted")
        if gone:
            self._record(now, pod, "gone")

    def _record(self, at: float, pod: Any, what: str) -> None:
        self.events.append(PodEvent(at, pod.metadata.name, _group(pod), what))


def _group(pod: Any) -> str:
    labels = pod.metadata.labels or {}
    return str(labels.get("ray.io/group", ""))


def _ready(pod: Any) -> bool:
    conditions = (pod.status and pod.status.conditions) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)
