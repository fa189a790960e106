"""When each worker pod's Ray node last became idle, as Ray itself says (issue 39).

"Last task -> deletion" counts from the end of the last task the bench's driver saw on a pod;
Ray counts a node's idle time from when the raylet finds it idle, which can come well after
(an actor's or placement group's node at the driver's exit, a node whose lease Ray keeps while
tasks of its shape wait), and both autoscalers wait ``idleTimeoutSeconds`` from Ray's idle start.
The reaction the issue is about, the autoscaler's own, is Ray's idle start -> the pod's deletion:
both sides' GCS are read here the same way (``GetClusterStatus`` every ``PERIOD_S``: each node's
``idle_duration_ms`` and KubeRay's ``instance_id``, the pod name), in a thread beside the run.

:class:`IdleStarts` is the pure part (a reply and its time in, the latest idle span's start per
pod kept); :class:`IdleWatch` the thread around it.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Mapping

from keda_ray_scaler.gcs._generated import autoscaler_pb2
from keda_ray_scaler.gcs.client import GcsClient

#: how often each side's GCS is read; the idle start itself comes from ``idle_duration_ms``
PERIOD_S = 1.0
#: a read's bound (the GCS of a busy bed answers in milliseconds)
READ_TIMEOUT_S = 5.0


class IdleStarts:
    """Per pod, the start of its node's latest idle span as Ray reports it (``time.time()``)."""

    def __init__(self) -> None:
        self.since: dict[str, float] = {}
        self.reads = 0

    def update(self, reply: autoscaler_pb2.GetClusterStatusReply, at: float) -> None:
        """Take one ``GetClusterStatus`` reply read at ``at``: a node Ray calls IDLE started its
        span ``idle_duration_ms`` before; a busy, draining or dead node keeps what it had (its
        last span is the one a deletion follows)."""
        self.reads += 1
        for node in reply.cluster_resource_state.node_states:
            if node.status != autoscaler_pb2.IDLE or not node.instance_id:
                continue
            self.since[node.instance_id] = at - node.idle_duration_ms / 1000.0


def idle_to_deletion(since: Mapping[str, float], deleted: Mapping[str, float]) -> dict[str, float]:
    """Per deleted pod whose node was seen idle: its deletion - Ray's idle start."""
    return {pod: at - since[pod] for pod, at in deleted.items() if pod in since}


def spread(waits: list[float]) -> str:
    """``median / max s (count)`` of non-empty ``waits``."""
    return f"{statistics.median(waits):.1f} / {max(waits):.1f} s ({len(waits)})"


def idle_note(
    since: Mapping[str, float], deleted: Mapping[str, float], group_of: Mapping[str, str]
) -> str:
    """The figures' note: Ray idle -> deletion, median / max, all pods and group by group ('' when
    no deleted pod was seen idle)."""
    waits = idle_to_deletion(since, deleted)
    if not waits:
        return ""
    by: dict[str, list[float]] = {}
    for pod, wait in waits.items():
        by.setdefault(group_of.get(pod, "?"), []).append(wait)
    parts = [f"all {spread(list(waits.values()))}"]
    if len(by) > 1:
        parts += [f"{g} {spread(w)}" for g, w in sorted(by.items())]
    return "Ray idle -> deletion, median / max (pods): " + ", ".join(parts)


class IdleWatch:
    """Reads a cluster's GCS every :data:`PERIOD_S` in a thread until stopped; ``starts`` holds
    what it saw. A read that fails is counted in ``errors`` (the last kept) and the watch goes on:
    a benchmark's probe never fails the run."""

    def __init__(self, address: str, token: str | None) -> None:
        self._address = address
        self._token = token
        self.starts = IdleStarts()
        self.errors = 0
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="idle-watch", daemon=True)

    def __enter__(self) -> IdleWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=READ_TIMEOUT_S + 5)

    def _run(self) -> None:
        asyncio.run(self._watch())

    async def _watch(self) -> None:
        client = GcsClient(self._address, token=self._token)
        try:
            while not self._stop.is_set():
                try:
                    reply = await client.get_cluster_status(READ_TIMEOUT_S)
                    self.starts.update(reply, time.time())
                except Exception as exc:  # a probe never fails the run
                    self.errors += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"[:200]
                await asyncio.to_thread(self._stop.wait, PERIOD_S)
        finally:
            await client.close()
