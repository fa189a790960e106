"""Workload (e) of the side-by-side benchmark, "labels" (issue 37): the real-node labels test's
cluster and driver, on each side.

The cluster is ``tests/harness/real_labels.py``'s: three worker groups made from the example's
``cpu`` group, ``spot`` and ``on-demand`` (2 CPUs, both ``tier: batch``) and ``gpu``
(``ray.io/accelerator-type: A100``, 1 CPU and 1 logical GPU), their Ray node labels in each
group's top-level ``labels`` (KubeRay 1.5+ refuses them in ``rayStartParams``; Ray's autoscaler
v2 reads them there), ``spot`` with worker-group ``priority`` 10 on KubeRay 1.7. The groups are
copies of the example's ``cpu`` group, so its shipped ``idleTimeoutSeconds`` holds for all three
at production settings (the profile's otherwise). Ours has a RayWorkerGroup and a ScaledObject
for each; Ray's the RayCluster alone (:func:`bench.vs_ray_clusters.cluster`).

The driver is ``tests/harness/label_driver.py``, its phases one at a time, each sent once every
unit of the one before runs (:data:`bench.vs_ray_workloads.LABEL_PHASES`): phase 1, two tasks
asking ``spot``, an actor asking the A100, a SPREAD placement group whose bundles ask ``spot``
and ``on-demand``, a task asking ``market-type: reserved`` (no group has it: it never runs);
phase 2, a task asking ``on-demand`` with a fallback to any node; phase 3 (KubeRay 1.7), a task
asking ``tier: batch``, which both cpu groups have (priority decides: ``spot``). Each unit takes
one pod. Every unit holds its pod until ``HELD_S`` after the last one started; the actor holds
the gpu pod until the driver ends.

Each ``done`` event names the group the unit's selector asks for (``want``): the figures count
the units that ran elsewhere and the pods a group has beyond its demand
(:func:`bench.vs_ray_figures.group_figures`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.vs_ray_bed import Bed
from bench.vs_ray_clusters import Cluster
from bench.vs_ray_profile import Profile
from bench.vs_ray_workloads import HAS_PRIORITY, LABEL_PHASES, LABEL_UNITS, LABELS, Attempt, Run

from kuberay_examples import example  # isort: skip
from real_labels import LabelDriver, labelled_groups  # isort: skip
from real_loop import Docs  # isort: skip

#: every unit holds its pod this long after the last one started
HELD_S = 20.0
#: from a phase's submission to its every unit running (the labels test's CAPACITY_S)
PHASE_TIMEOUT_S = 420.0
#: units that are an actor's call: the actor holds its pod until the driver ends
ACTORS = frozenset({"gpu-actor"})
TASKS = {unit: n for n, unit in enumerate(LABEL_UNITS)}
#: unit -> its phase, as the driver's ``submitted`` lines name it (1, "phase2", "phase3")
PHASE_OF = {u: 1 if command is None else command for command, us in LABEL_PHASES for u in us}


def relabel(profile: Profile) -> Callable[[Docs], Docs]:
    """The overlay's objects with the labelled groups in place of the example's two, each
    group's ``idleTimeoutSeconds`` the profile's (the example's ``cpu`` group's when shipped)."""
    labelled = labelled_groups(HAS_PRIORITY)
    (cpu,) = [g for g in example()["spec"]["workerGroupSpecs"] if g["groupName"] == "cpu"]
    idle = profile.idle_s if profile.idle_s is not None else cpu["idleTimeoutSeconds"]

    def transform(docs: Docs) -> Docs:
        out = labelled(docs)
        for doc in out:
            for group in doc["spec"]["workerGroupSpecs"] if doc["kind"] == "RayCluster" else ():
                group["idleTimeoutSeconds"] = idle
        return out

    return transform


def _fresh(share: Path) -> None:
    """No release file and no marker of the other side's run (the driver's names are fixed)."""
    (share / "release-labels").unlink(missing_ok=True)
    markers = share / "markers-labels"
    for path in markers.iterdir() if markers.is_dir() else ():
        path.unlink()


def _wait_started(driver: LabelDriver, units: dict[str, str]) -> None:
    """Until every unit runs, the driver ends or ``PHASE_TIMEOUT_S`` (a figure then: the units
    that never ran show as not done)."""
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    while time.monotonic() < deadline and driver.alive():
        if set(units) <= set(driver.started()):
            return
        time.sleep(0.2)


def _marks(driver: LabelDriver) -> dict[str, float]:
    """unit -> when it started (its marker's time)."""
    return {
        p.name: p.stat().st_mtime for p in driver.markers.iterdir() if not p.name.endswith("tmp")
    }


def run_labels(bed: Bed, cluster: Cluster) -> Run:
    """Workload (e): see the module docstring."""
    _fresh(bed.share)
    driver = LabelDriver.start(bed.workdir, bed.share, cluster.ray_token)
    started_at = time.time()
    try:
        for command, units in LABEL_PHASES:
            if not driver.alive():  # it failed (its log says why): the figures show it
                break
            if command is not None:
                driver.send(command)
            _wait_started(driver, units)
        time.sleep(HELD_S)
    finally:
        driver.release.touch()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not _all_done(driver.events(), driver.started()):
            time.sleep(0.2)
        with contextlib.suppress(Exception):  # what it did is read below either way
            driver.stop()
    stopped_at = time.time()
    return labels_run(driver.events(), driver.started(), _marks(driver), started_at, stopped_at)


def _all_done(events: list[dict[str, Any]], started: dict[str, str]) -> bool:
    ended = {e.get("unit") for e in events if e["event"] in ("done", "failed")}
    return set(started) <= ended


def labels_run(
    events: list[dict[str, Any]],
    started: dict[str, str],
    marks: dict[str, float],
    started_at: float,
    stopped_at: float,
) -> Run:
    """The driver's events as a :class:`~bench.vs_ray_workloads.Run`: a task number per unit,
    each ``done`` with its pod, start (its marker), end and the group it asks for (``want``);
    ``finished`` when every unit is done. Phase 1 counts as submitted when the driver connected:
    its calls reach Ray while it makes them, before its ``submitted`` line."""
    out: list[dict[str, Any]] = []
    connected = [e["at"] for e in events if e["event"] == "connected"]
    for e in events:
        unit = e.get("unit")
        if e["event"] == "connected":
            out.append(e)
        elif e["event"] == "submitted":  # phase 1 goes out as soon as the driver is connected
            at = connected[0] if e["phase"] == 1 and connected else e["at"]
            out.append({"event": "submitted", "wave": e["phase"], "tasks": len(e["units"]),
                        "at": at})  # fmt: skip
        elif e["event"] == "done" and unit in TASKS:
            end = max(e["at"], stopped_at) if unit in ACTORS else e["at"]
            out.append({"event": "done", "task": TASKS[unit], "unit": unit,
                        "want": LABEL_UNITS[unit], "wave": PHASE_OF[unit], "pod": e["pod"],
                        "start": marks.get(unit, end), "end": end})  # fmt: skip
        elif e["event"] == "failed" and unit in TASKS:
            out.append({"event": "failed", "task": TASKS[unit], "unit": unit, "error": e["error"]})
    if {e["unit"] for e in out if e["event"] == "done"} == set(TASKS):
        out.append({"event": "finished", "at": stopped_at})
    attempts = [
        Attempt(TASKS[u], pod, marks[u]) for u, pod in started.items() if u in marks and u in TASKS
    ]
    return Run(LABELS, started_at, out, sorted(attempts, key=lambda a: a.start))
