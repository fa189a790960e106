"""Workload (g), a Serve application under a load step as a RayService (issue 36, item 7): one
side's run.

The RayService is ``real_serve.rayservice``'s (one deployment of ``{CPU: 5}`` replicas, two a
10-CPU pod, Serve's own autoscaling on ongoing requests from 1 to ``MAX_REPLICAS`` = 6) as the
side has it (:mod:`bench.vs_ray_optin`). Once its application is RUNNING and at rest (one replica
on one pod), a load step: ``2 x MAX_REPLICAS`` clients (``real_serve.Load``, 1 s requests) for
``LOAD_S``, then none; the run is watched a fixed ``after_load_s`` more (the same on both sides,
so that the pod-seconds cover the same span), then the RayService is deleted.

Figures from the load step: the 3 pods Serve's 6 replicas need Ready at once, peak pods,
pod-seconds until the end of the watch, failed requests (any answer but 200), pods whose deletion
began while they held a RUNNING replica (Serve's own account, sampled every 0.5 s, matched to the
pods by IP: the last sample before the deletion). "Last task" in the table's deletion rows is the
end of the load, and "zero pods" the rest of one pod.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.vs_ray_bed import Bed
from bench.vs_ray_figures import Figures
from bench.vs_ray_optin import Outcome, all_gone, figures_of, for_side, release, save_raw, workers
from bench.vs_ray_optin_cpu import CpuSampler
from bench.vs_ray_profile import Profile
from bench.vs_ray_workloads import RAYSERVICE

from control_plane import wait_until  # isort: skip  (tests/harness, through bench.vs_ray_bed)
from ray_on_node import make_share  # isort: skip
from real_loop import read_ray_token  # isort: skip
from real_serve import MAX_REPLICAS, RS, Held, Load, Samples, rayservice  # isort: skip

LOAD_S = 120.0
CLIENTS = 2 * MAX_REPLICAS
APP = "echo"  # real_serve.SERVE_CONFIG's application
GONE_S = 300.0
_RUNS = itertools.count(1)


def after_load_s(profile: Profile) -> float:
    """How long a run is watched after its load: the groups' idle timeout and three minutes."""
    return (profile.idle_s if profile.idle_s is not None else 60) + 180.0


def busy_pods(samples: Samples, deleted: dict[str, float]) -> list[str]:
    """Pods that held a replica at the last sample before their deletion began."""
    busy = []
    for pod, at in sorted(deleted.items()):
        before = [held for t, held in samples if t <= at]
        if before and pod in before[-1]:
            busy.append(pod)
    return busy


def asked_at(asked: list[tuple[float, int]], step: float) -> float | None:
    """When Serve first had more replicas than at rest (1) after the load step: the demand's
    own start, which Serve's autoscaler sets (its upscale delay and metric periods), sampled
    every 0.5 s; None when it never did."""
    return next((t for t, n in asked if t >= step and n > 1), None)


def _active(bed: Bed, name: str) -> dict[str, Any]:
    """The RayService's ``status.activeServiceStatus``."""
    obj: dict[str, Any] = bed.custom.get_namespaced_custom_object(*RS[:2], "ray", RS[2], name)
    return dict(obj.get("status") or {}).get("activeServiceStatus") or {}


def _running(bed: Bed, name: str) -> bool:
    apps = _active(bed, name).get("applicationStatuses") or {}
    return (apps.get(APP) or {}).get("status") == "RUNNING"


def _delete(bed: Bed, name: str) -> None:
    """The RayService deleted, the namespace empty (its cluster, pods, our objects)."""
    bed.cp.kubectl(
        "delete", f"{RS[2]}.{RS[0]}", name, "--namespace=ray", "--ignore-not-found", check=False
    )
    wait_until(lambda: all_gone(bed), timeout_s=GONE_S, what="the namespace empty")


def _step(bed: Bed) -> tuple[Load, float, float, float]:
    """The load step (module docstring): the load, when it began and ended, the watch's end."""
    load = Load(clients=CLIENTS, max_s=LOAD_S + 60).start()
    step = time.time()
    time.sleep(LOAD_S)
    load.stop()
    stopped = time.time()
    time.sleep(after_load_s(bed.profile))
    return load, step, stopped, time.time()


def run_rayservice(bed: Bed, side: str) -> Figures:
    """One side's run of workload (g) (module docstring)."""
    share = make_share(Path(tempfile.mkdtemp(prefix="rayservice-", dir=bed.workdir)) / "share")
    name = f"vs-ray-{side}-{next(_RUNS)}"
    doc = for_side(rayservice(name, share, bed.images), side, bed.profile, bed.cp.apiserver_port)
    with release(bed, side), workers(bed) as pods, CpuSampler(bed, side) as cpu:
        try:
            created = time.time()
            bed.cp.apply_docs([doc])
            wait_until(lambda: _running(bed, name), timeout_s=600, what="the Serve app RUNNING")
            running_s = time.time() - created
            token = read_ray_token(bed.cp, str(_active(bed, name)["rayClusterName"]), timeout_s=60)
            with Held(bed.core, token) as held:
                wait_until(
                    lambda: len(pods.running_pods("cpu")) == 1 and held.count == 1,
                    timeout_s=300,
                    what="at rest: 1 replica on 1 pod",
                )
                load, step, stopped, end = _step(bed)
        finally:
            _delete(bed, name)
    deleted = {e.pod: e.at for e in pods.events if e.what == "deleted" and step <= e.at <= end}
    asked = asked_at(held.asked, step)
    first = min((e.at for e in pods.events if e.what == "created" and e.at >= step), default=None)
    lag = "-" if asked is None or first is None else f"{first - asked:.1f} s"
    notes = (
        f"Serve asked for replicas {asked - step:.1f} s after the step, first pod {lag} after that"
        if asked is not None
        else "Serve never asked for more replicas",
    )
    outcome = Outcome(
        spec=RAYSERVICE,
        since=step,
        work_end=stopped,
        end=end,
        floor=1,
        events=list(pods.events),
        tasks=load.sent,
        done=load.sent - load.failed,
        failed=load.failed,
        finished=True,
        busy=busy_pods(held.samples, deleted),
        notes=(f"created -> app RUNNING {running_s:.0f} s; requests by outcome "
               f"{dict(load.outcomes)}", *notes, *load.failures[:3]),
    )  # fmt: skip
    extra = {
        "samples": [(t, sorted(h)) for t, h in held.samples],
        "asked": held.asked,
        "pods_served": load.pods,
    }
    save_raw(bed.profile.name, side, outcome, {**extra, "cpu_samples": cpu.samples})
    return figures_of(side, outcome, cpu.figure(step))
