"""One list-then-watch loop for every kind the agent keeps: list, watch, back off, relist.

The agent keeps two things current by list and watch: the worker pods (the pod cache,
:mod:`~keda_ray_scaler.agent.kube.pod_cache`) and custom objects (the RayCluster and its
RayWorkerGroups,
:mod:`~keda_ray_scaler.agent.kube.object_watch`). Both follow the same loop, :class:`ListWatch`:

- list, then watch from the list's resourceVersion, re-opening the watch from the last version
  seen when the server ends it;
- relist at once on 410 Gone (the version expired: relisting loses nothing); after any other
  watch failure wait ``retry_initial_s``, doubling while the watches keep failing, up to
  ``retry_max_s`` (a watch the server refuses, say a missing RBAC verb, must not become a loop of
  list and watch requests); after a list that gave up its retries, wait ``retry_max_s``;
- the blocking ``kubernetes`` client runs in a thread and hands each event to the event loop
  (``call_soon_threadsafe``), so the :class:`Follower` sees everything on the loop and needs no
  lock.

What differs stays with each user: *what* is listed and watched (a :class:`Listing`), and what
a list is and what happens on each step (a :class:`Follower`: its own list call with its own
retries, metrics and logs).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from kubernetes import watch as k8s_watch

from keda_ray_scaler.agent.kube.kube_retry import KUBE_ERRORS, status_of
from keda_ray_scaler.backoff import DoublingBackoff
from keda_ray_scaler.clock import Sleep
from keda_ray_scaler.errors import KubernetesError

#: the positional arguments and keyword arguments of a list call, as the Watch passes them on
ListArgs = tuple[tuple[Any, ...], dict[str, Any]]


class Listing(Protocol):
    """What one loop lists and watches: a kind, in a namespace, by a selector."""

    def list_blocking(self) -> dict[str, Any]:
        """One list call: the JSON list body (blocking)."""

    def list_raw(self, *args: Any, **kwargs: Any) -> Any:
        """The client's list function, as the Watch calls it (``watch=True``). Its docstring
        must name no return type (``:rtype:``): the Watch then yields the JSON as served
        (``raw_object``) and never validates events into a model, so a field the model does not
        accept cannot break the loop. (``deserialize=False`` would lose 410 ERROR events.)"""

    def watch_args(self) -> ListArgs:
        """The arguments of :meth:`list_raw` that select the objects (namespace, selector)."""


class Timing(Protocol):
    """The loop's waits and timeouts
    (:class:`~keda_ray_scaler.agent.kube.kube_settings.KubeSettings`
    and :class:`~keda_ray_scaler.agent.kube.object_watch.WatchSettings` both have them)."""

    @property
    def retry_initial_s(self) -> float:
        """The wait after a first failed watch (doubling while they keep failing)."""

    @property
    def retry_max_s(self) -> float:
        """The longest wait, and the wait after a list that gave up."""

    @property
    def watch_timeout_s(self) -> int:
        """The server-side watch timeout; the watch is re-opened from the last version."""

    @property
    def request_timeout_s(self) -> float:
        """The client's connect timeout for the watch."""


class Follower(Protocol):
    """The user of a loop: its list call, and what it does with each step, on the event loop."""

    async def fetch_list(self) -> dict[str, Any]:
        """One list, with the follower's retries: the JSON list body; KubernetesError when the
        retries gave up."""

    def listed(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A whole list (at start and at each relist)."""

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One ``ADDED``, ``MODIFIED`` or ``DELETED`` event."""

    def list_failed(self, exc: KubernetesError) -> None:
        """The list gave up after its retries; the loop waits ``retry_max_s``, then lists."""

    def watch_ended(self, exc: BaseException) -> None:
        """A watch failed or expired (status 410); the loop relists (after a wait if not 410)."""


class ListWatch:
    """Lists then watches ``listing`` into ``follower`` for as long as :meth:`run` runs."""

    def __init__(
        self, listing: Listing, follower: Follower, timing: Timing, *, sleep: Sleep = asyncio.sleep
    ) -> None:
        self._listing = listing
        self._follower = follower
        self._timing = timing
        self._sleep = sleep  # between failed steps (injected: tests count the back-off)
        self._watch: k8s_watch.Watch | None = None
        self._stopping = threading.Event()

    async def run(self) -> None:
        """List, then watch, forever; relist at once on 410 Gone, after a back-off on any other
        failure (module doc). Cancel to stop; the watch is stopped on the way out."""
        loop = asyncio.get_running_loop()
        self._stopping.clear()
        failed = 0  # watches failed in a row (not 410)
        try:
            while True:
                try:
                    version = await self.relist()
                    while not self._stopping.is_set():
                        version = await asyncio.to_thread(self._watch_blocking, loop, version)
                        failed = 0
                except asyncio.CancelledError:
                    raise
                except KubernetesError as exc:  # the list gave up after its retries
                    self._follower.list_failed(exc)
                    await self._sleep(self._timing.retry_max_s)
                except (*KUBE_ERRORS, ValueError) as exc:
                    self._follower.watch_ended(exc)
                    if status_of(exc) != "410":  # expired: relisting at once loses nothing
                        failed += 1
                        await self._sleep(self._backoff(failed))
        finally:
            self.stop()

    def _backoff(self, failed: int) -> float:
        """The wait after ``failed`` watches failed in a row."""
        timing = self._timing
        return DoublingBackoff(timing.retry_initial_s, timing.retry_max_s).delay_s(failed)

    def stop(self) -> None:
        """Interrupt a blocking watch (safe from any thread)."""
        self._stopping.set()
        watcher = self._watch
        if watcher is not None:
            # Watch.stop() also shuts the open socket down, ending the blocked read at once.
            watcher.stop()  # type: ignore[no-untyped-call]  # kubernetes.watch is untyped

    async def relist(self) -> str:
        """One list (the follower's call) handed to the follower; the list's resourceVersion."""
        body = await self._follower.fetch_list()
        self._follower.listed(list(body.get("items") or ()))
        return str((body.get("metadata") or {}).get("resourceVersion") or "")

    def _watch_blocking(self, loop: asyncio.AbstractEventLoop, version: str) -> str:
        """Stream watch events into the loop until the watch ends; the last version seen."""
        timing = self._timing
        args, selector = self._listing.watch_args()
        watcher = k8s_watch.Watch()  # type: ignore[no-untyped-call]  # untyped module
        self._watch = watcher
        try:
            if self._stopping.is_set():
                return version
            stream: Iterator[dict[str, Any]] = watcher.stream(  # type: ignore[no-untyped-call]
                self._listing.list_raw, *args, **selector,
                resource_version=version or None,
                allow_watch_bookmarks=True,
                timeout_seconds=timing.watch_timeout_s,
                _request_timeout=(timing.request_timeout_s, timing.watch_timeout_s + 30),
            )  # fmt: skip
            for event in stream:
                obj = event.get("raw_object") or event.get("object") or {}
                new_version = (obj.get("metadata") or {}).get("resourceVersion")
                if new_version:
                    version = str(new_version)
                if self._stopping.is_set():
                    break
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    loop.call_soon_threadsafe(self._follower.changed, event["type"], obj)
        finally:
            self._watch = None
        return version
