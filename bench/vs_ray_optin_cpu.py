"""CPU seconds of each side's autoscaling components in workloads (f) and (g), whose clusters
KubeRay makes (and, for (f), deletes with the job before the run's end).

:mod:`bench.vs_ray_cpu` reads a cluster twice, when it is ready and at the end; a RayJob's
cluster is gone by then. Here a thread samples every ``SAMPLE_S`` while the run goes on: the
head pod's ``agent`` (ours) or ``autoscaler`` (Ray's) container from its cgroup, found once per
head pod, and the same host components as :mod:`bench.vs_ray_cpu` (ours: the scaler's pod, KEDA,
Prometheus; both: the controller-manager and KubeRay's operator). The figure is the last sample
the head pod answered less the first at or after the workload's start: within ``SAMPLE_S`` of
the cluster's deletion, the same for both sides.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from pathlib import Path
from types import TracebackType

from bench.vs_ray_bed import Bed
from bench.vs_ray_clusters import AUTOSCALER, OURS
from bench.vs_ray_cpu import cgroup_of, cgroup_seconds, host_seconds, safe, scaler_pod

import chart_install  # isort: skip  (tests/, on sys.path through bench.vs_ray_bed)

SAMPLE_S = 2.0
NAMESPACE = "ray"
HEAD = "ray.io/node-type=head"


class CpuSampler:
    """Samples ``side``'s components every ``SAMPLE_S`` from ``__enter__`` to ``__exit__``."""

    def __init__(self, bed: Bed, side: str) -> None:
        self._bed, self._side = bed, side
        self._container = "agent" if side == OURS else AUTOSCALER
        self._cgroups: dict[str, tuple[Path, str]] = {}  # pod -> its cgroup (dir, kind)
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.samples.append((time.time(), self._sample()))

    def _sample(self) -> dict[str, float]:
        out = host_seconds(self._bed, self._side)
        out[self._key()] = safe(self._head_seconds)
        if self._side == OURS:
            out["scaler"] = safe(self._scaler_seconds)
        return out

    def _key(self) -> str:
        return "agent" if self._side == OURS else "autoscaler"

    def _head_seconds(self) -> float:
        pods = self._bed.core.list_namespaced_pod(NAMESPACE, label_selector=HEAD).items
        live = [p.metadata.name for p in pods if p.metadata.deletion_timestamp is None]
        if len(live) != 1:
            return math.nan
        return self._seconds(NAMESPACE, live[0], self._container, pod_level=False)

    def _scaler_seconds(self) -> float:
        pod = scaler_pod(self._bed)
        return self._seconds(chart_install.NAMESPACE, pod, "scaler", pod_level=True)

    def _seconds(self, namespace: str, pod: str, container: str, *, pod_level: bool) -> float:
        """A container's (or its pod's) CPU seconds; its cgroup found once."""
        key = f"{namespace}/{pod}/{container}"
        if key not in self._cgroups:
            directory, kind = cgroup_of(self._bed.node.container_pid(namespace, pod, container))
            self._cgroups[key] = (directory.parent if pod_level else directory, kind)
        directory, kind = self._cgroups[key]
        return cgroup_seconds(directory, kind)

    def figure(self, since: float) -> dict[str, float]:
        """CPU seconds per component from the first sample at or after ``since`` to the last
        in which the head pod's container answered (NaN: none)."""
        return window(self.samples, since, self._key())


def window(
    samples: list[tuple[float, dict[str, float]]], since: float, key: str
) -> dict[str, float]:
    """Per component: its value at the last sample where ``key`` is known less its value at
    the first sample at or after ``since`` (NaN when either is missing)."""
    start = bisect.bisect_left([t for t, _ in samples], since)
    good = [s for _, s in samples[start:] if not math.isnan(s.get(key, math.nan))]
    if len(good) < 2:
        return {}
    first, last = good[0], good[-1]
    return {k: v - first.get(k, math.nan) for k, v in last.items()}
