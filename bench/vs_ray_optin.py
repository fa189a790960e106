"""What the RayJob (f) and RayService (g) workloads share (issue 36, item 7): each side's object,
the chart release it runs under, the pod watch and the figures.

KubeRay makes the cluster of a RayJob or a RayService, so a side is a few fields of the object:

- **ours**: the object as ``tests/harness/real_optin.py`` makes it (the example's cluster spec
  without the agent, on the real node), opted in by its label only, under the chart's controller
  and webhook (``controller_release``; at production settings with the chart's own ScaledObject
  settings, resync and agent timings);
- **ray**: the same object without the label, its cluster spec with ``enableInTreeAutoscaling:
  true`` and ``autoscalerOptions`` as :mod:`bench.vs_ray_clusters` sets them for Ray's side
  (v2, upscaling mode Default, the API server's address); no controller and no webhook.

On both the worker groups' ``idleTimeoutSeconds`` (read by both autoscalers) are the example's
(cpu 60 s, gpu 300 s) at production settings and the profile's otherwise.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.vs_ray_bed import Bed
from bench.vs_ray_clusters import RAY, autoscaler_options
from bench.vs_ray_figures import Figures
from bench.vs_ray_profile import PRODUCTION, Profile
from bench.vs_ray_workloads import Spec

from bed import NAMESPACE  # isort: skip  (tests/harness, on sys.path through bench.vs_ray_bed)
from kuberay_examples import example  # isort: skip
from pod_watch import PodEvent, PodWatch  # isort: skip
from real_optin import controller_release, ours  # isort: skip

from keda_ray_scaler.controller.optin import OPT_IN_LABEL

#: where each kind holds the spec of the cluster KubeRay makes for it
CLUSTER_FIELD = {"RayJob": "rayClusterSpec", "RayService": "rayClusterConfig"}


def for_side(doc: dict[str, Any], side: str, profile: Profile, apiserver_port: int) -> Any:
    """The RayJob or RayService ``doc`` (labelled, as ``real_optin`` makes it) as ``side`` has
    it (module docstring); ``doc`` is left as it was."""
    out = copy.deepcopy(doc)
    spec = out["spec"][CLUSTER_FIELD[out["kind"]]]
    shipped = {
        g["groupName"]: g["idleTimeoutSeconds"] for g in example()["spec"]["workerGroupSpecs"]
    }
    for group in spec["workerGroupSpecs"]:
        idle = profile.idle_s if profile.idle_s is not None else shipped[group["groupName"]]
        group["idleTimeoutSeconds"] = idle
    if side == RAY:
        out["metadata"]["labels"].pop(OPT_IN_LABEL)
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = autoscaler_options(profile, apiserver_port)
    return out


def release(bed: Bed, side: str) -> contextlib.AbstractContextManager[None]:
    """Ours: the chart's controller and webhook for the run; Ray's: nothing."""
    if side == RAY:
        return contextlib.nullcontext()
    return controller_release(bed.test_bed, shipped=bed.profile == PRODUCTION)


def workers(bed: Bed) -> PodWatch:
    """A watch of every worker pod of the namespace (the clusters' names are KubeRay's)."""
    return PodWatch(bed.core, NAMESPACE, "ray.io/node-type=worker")


def all_gone(bed: Bed) -> bool:
    """No RayCluster and no pod left in the namespace, nothing the controller made."""
    left = bed.cp.get_json("rayclusters,pods", f"--namespace={NAMESPACE}")["items"]
    return not left and not ours(bed.cp)


@dataclass(frozen=True)
class Outcome:
    """One side's run of (f) or (g), for its figures: the worker pods' events and what the
    workload counted. Times are unix times."""

    spec: Spec
    since: float  # the figures count from here: the RayJob's creation (f), the load step (g)
    work_end: float  # the tasks' release (f), the load's end (g)
    end: float  # the end of the observation
    floor: int  # pods at rest: 0 (f), 1 (g)
    events: list[PodEvent]
    tasks: int  # tasks (f), requests sent (g)
    done: int
    failed: int
    finished: bool
    busy: list[str]  # pods deleted while busy
    notes: tuple[str, ...] = ()


def alive_at(events: list[PodEvent], at: float) -> set[str]:
    """Pods created at or before ``at`` and not gone by then."""
    alive: set[str] = set()
    for e in sorted(events, key=lambda e: e.at):
        if e.at > at:
            break
        if e.what == "created":
            alive.add(e.pod)
        elif e.what == "gone":
            alive.discard(e.pod)
    return alive


def peak_since(events: list[PodEvent], since: float) -> int:
    """The most pods alive at once from ``since`` on (deleting ones included)."""
    most = len(alive_at(events, since))
    for e in events:
        if e.at > since and e.what == "created":
            most = max(most, len(alive_at(events, e.at)))
    return most


def seconds_between(events: list[PodEvent], since: float, end: float) -> float:
    """Each pod's life (created to gone, or ``end``) within ``since``..``end``, summed."""
    created = {e.pod: e.at for e in events if e.what == "created"}
    gone = {e.pod: e.at for e in events if e.what == "gone"}
    return sum(
        max(0.0, min(gone.get(pod, end), end) - max(at, since)) for pod, at in created.items()
    )


def _count_ready(ready: dict[str, set[str]], e: PodEvent) -> None:
    if e.group in ready and e.what == "ready":
        ready[e.group].add(e.pod)
    elif e.group in ready and e.what in ("deleted", "gone"):
        ready[e.group].discard(e.pod)


def needed_since(events: list[PodEvent], needed: dict[str, int], since: float) -> float | None:
    """The first time from ``since`` on that every group had its needed pods Ready (and not
    being deleted) at once; ``None``: never."""
    ready: dict[str, set[str]] = {g: set() for g in needed}

    def met() -> bool:
        return all(len(ready[g]) >= n for g, n in needed.items())

    at = since  # the time of the last event counted, or since
    for e in sorted(events, key=lambda e: e.at):
        if e.at >= since and met():
            return at
        _count_ready(ready, e)
        at = max(e.at, since)
    return at if met() else None


def _first(events: list[PodEvent], what: str, since: float) -> float | None:
    times = [e.at for e in events if e.what == what and e.at >= since]
    return min(times) - since if times else None


def figures_of(side: str, o: Outcome, cpu: dict[str, float] | None = None) -> Figures:
    """The table's figures of one run (``bench/vs_ray_figures.py``'s, from ``o.since``; the
    deletions' times from ``o.work_end``, "zero pods" meaning back at ``o.floor``; ``cpu``
    from :mod:`bench.vs_ray_optin_cpu`)."""
    events = [e for e in o.events if e.at <= o.end]
    needed_at = needed_since(events, o.spec.needed, o.since)
    deleted = [e.at for e in events if e.what == "deleted" and e.at >= o.work_end]
    waits = sorted(at - o.work_end for at in deleted)
    at_rest = len(alive_at(events, o.end)) <= o.floor
    return Figures(
        side=side,
        workload=o.spec.key,
        tasks=o.tasks,
        done=o.done,
        finished=o.finished,
        first_pod_s=_first(events, "created", o.since),
        first_ready_s=_first(events, "ready", o.since),
        all_needed_s=None if needed_at is None else needed_at - o.since,
        peak=peak_since(events, o.since),
        needed=sum(o.spec.needed.values()),
        created=len({e.pod for e in events if e.what == "created" and e.at >= o.since}),
        pod_seconds=seconds_between(events, o.since, o.end),
        to_deletion_median_s=statistics.median(waits) if waits else None,
        to_deletion_max_s=waits[-1] if waits else None,
        to_zero_s=waits[-1] if waits and at_rest else None,
        busy_deleted=len(o.busy),
        failed=o.failed,
        retries=0,
        cpu=cpu or {},
        notes=o.notes + tuple(f"busy pod deleted: {p}" for p in o.busy),
    )


def save_raw(profile: str, side: str, o: Outcome, extra: dict[str, Any]) -> None:
    """The run's raw record as JSON in ``KRS_VS_RAY_RAW_DIR`` when set (as
    ``vs_ray_bench.save_raw``)."""
    directory = os.environ.get("KRS_VS_RAY_RAW_DIR")
    if not directory:
        return
    record = {"profile": profile, "side": side, **dataclasses.asdict(o), **extra}
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / f"{profile}-{o.spec.key}-{side}-{int(o.end)}.json"
    path.write_text(json.dumps(record, default=str))
