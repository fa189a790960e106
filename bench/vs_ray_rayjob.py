"""Workload (f), the seed as a RayJob (issue 36, item 7): one side's run.

The RayJob is ``real_optin.rayjob``'s (``tests/harness/rayjob_driver.py`` as its entrypoint,
``submissionMode: HTTPMode``, ``shutdownAfterJobFinishes`` with ``ttlSecondsAfterFinished: 0``)
as the side has it (:mod:`bench.vs_ray_optin`). Its twenty tasks of ``{CPU: 5}`` (ten 10-CPU
pods) hold until released: once all twenty have started (each writes its pod's name to the
share), ``HOLD_S`` more, the same on both sides. The driver then waits until no worker is alive
and ends; KubeRay deletes the cluster. The run is watched until the RayCluster and its pods are
gone.

Figures from the driver's submission of its tasks (:func:`submitted_at`; the RayJob's creation
when the log has no such line): the first pod, the 10 pods Ready at once, peak pods,
pod-seconds until the cluster is gone. Before the submission KubeRay makes the cluster and
starts the job (12-14 s on the bed, the same path on both sides, noted), no autoscaler's.
Failed tasks (the driver's JSON lines, from the job's log on the dashboard, read
while the job runs: the cluster goes with the job), pods whose deletion began while a task held
on them (a task's pod and start from its marker, its end from the driver's ``done`` line).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests

from bench.vs_ray_bed import Bed
from bench.vs_ray_figures import Figures
from bench.vs_ray_optin import Outcome, all_gone, figures_of, for_side, release, save_raw, workers
from bench.vs_ray_optin_cpu import CpuSampler
from bench.vs_ray_workloads import RAYJOB

from control_plane import wait_until  # isort: skip  (tests/harness, through bench.vs_ray_bed)
from ray_on_node import make_share  # isort: skip
from real_loop import read_ray_token  # isort: skip
from real_optin import RJ, JobView, rayjob  # isort: skip
from real_serve import DASHBOARD  # isort: skip

HOLD_S = 30.0  # the tasks held this long after the last of them started
STARTED_WITHIN_S = 600.0  # released at the latest this long after the RayJob's creation
JOB_END_S = 1200.0  # the driver waits at most 600 s for the floor (rayjob_driver.FLOOR_WAIT_S)
GONE_S = 300.0
TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}
_RUNS = itertools.count(1)


class JobLog:
    """The job's log as the dashboard has it, read every 2 s in a thread until the block ends
    (and once more then); :attr:`text` is the last read."""

    def __init__(self, bed: Bed, view: JobView) -> None:
        self._bed, self._view = bed, view
        self.text = ""
        self._token = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="job-log", daemon=True)

    def __enter__(self) -> JobLog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)
        with contextlib.suppress(Exception):
            self._read()

    def _run(self) -> None:
        while not self._stop.wait(2.0):
            with contextlib.suppress(Exception):  # not up yet, or gone: the last read stays
                self._read()

    def _read(self) -> None:
        status = self._view.status()
        job, cluster = status.get("jobId"), status.get("rayClusterName")
        if not (job and cluster):
            return
        if not self._token:
            self._token = read_ray_token(self._bed.cp, str(cluster), timeout_s=2)
        reply = requests.get(
            f"{DASHBOARD}/api/jobs/{job}/logs",
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=5,
        )
        reply.raise_for_status()
        self.text = str(reply.json().get("logs") or "")

    def events(self) -> list[dict[str, Any]]:
        """The driver's JSON lines (Ray's own lines left out)."""
        found = []
        for line in self.text.splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and "event" in event:
                    found.append(event)
        return found


def markers(share: Path) -> list[tuple[str, float]]:
    """``(pod, start)`` of every task that started (its marker's content and time)."""
    return [(p.read_text(), p.stat().st_mtime) for p in (share / "markers").glob("[0-9]*")]


def busy_pods(
    started: list[tuple[str, float]], done: list[dict[str, Any]], deleted: dict[str, float]
) -> list[str]:
    """Pods whose deletion began after a task started there and before the driver's last
    ``done`` from it (any time after, when fewer ``done`` came from it than tasks started)."""
    busy = []
    for pod in sorted({p for p, _ in started} & set(deleted)):
        starts = [t for p, t in started if p == pod]
        ends = [float(e["at"]) for e in done if e.get("pod") == pod]
        until = max(ends) if len(ends) >= len(starts) else math.inf
        if min(starts) <= deleted[pod] < until:
            busy.append(pod)
    return busy


def submitted_at(events: list[dict[str, Any]], created: float) -> float:
    """When the driver submitted its tasks (its ``submitted`` line), else ``created``."""
    return next((float(e["at"]) for e in events if e["event"] == "submitted"), created)


def _hold_and_release(share: Path, created: float) -> float:
    """Release the tasks ``HOLD_S`` after all have started (or at the latest time); when."""
    with contextlib.suppress(TimeoutError):
        wait_until(
            lambda: len(markers(share)) >= RAYJOB.tasks,
            timeout_s=created + STARTED_WITHIN_S - time.time(),
            what="every task started",
            interval_s=0.5,
        )
        time.sleep(HOLD_S)
    (share / "release").touch()
    return time.time()


def _end_of_job(view: JobView) -> str:
    """Wait for the job's end; its status."""
    wait_until(
        lambda: view.status().get("jobStatus") in TERMINAL,
        timeout_s=JOB_END_S,
        what="the job's end (its driver waits for the floor of 0 workers)",
    )
    return str(view.status().get("jobStatus"))


def _delete(bed: Bed, name: str) -> None:
    """The RayJob deleted (its cluster is gone already when the job ended), the namespace
    empty."""
    bed.cp.kubectl(
        "delete", f"{RJ[2]}.{RJ[0]}", name, "--namespace=ray", "--ignore-not-found", check=False
    )
    wait_until(lambda: all_gone(bed), timeout_s=GONE_S, what="the namespace empty")


def run_rayjob(bed: Bed, side: str) -> Figures:
    """One side's run of workload (f) (module docstring)."""
    share = make_share(Path(tempfile.mkdtemp(prefix="rayjob-", dir=bed.workdir)) / "share")
    name = f"vs-ray-{side}-{next(_RUNS)}"
    view = JobView(bed.cp, bed.custom, name)
    doc = for_side(rayjob(name, share, bed.images), side, bed.profile, bed.cp.apiserver_port)
    with release(bed, side), workers(bed) as pods, CpuSampler(bed, side) as cpu:
        try:
            created = time.time()
            bed.cp.apply_docs([doc])
            with JobLog(bed, view) as log:
                released = _hold_and_release(share, created)
                status = _end_of_job(view)
            job_end = time.time()
            wait_until(
                lambda: view.cluster() is None and not pods.live_pods("cpu"),
                timeout_s=GONE_S,
                what="the RayJob's cluster and its pods gone",
            )
            end = time.time()
        finally:
            _delete(bed, name)
    events = log.events()
    done = [e for e in events if e["event"] == "done"]
    deleted = {e.pod: e.at for e in pods.events if e.what == "deleted"}
    notes = [f"job {status}: created -> job end {job_end - created:.0f} s, "
             f"-> cluster gone {end - created:.0f} s"]  # fmt: skip
    if not events:
        notes.append("the job's log was not read: done and failed unknown")
    since = submitted_at(events, created)
    notes.append(f"RayJob created -> tasks submitted {since - created:.1f} s (figures from then)")
    outcome = Outcome(
        spec=RAYJOB,
        since=since,
        work_end=released,
        end=end,
        floor=0,
        events=list(pods.events),
        tasks=RAYJOB.tasks,
        done=len(done),
        failed=sum(1 for e in events if e["event"] == "failed"),
        finished=status == "SUCCEEDED",
        busy=busy_pods(markers(share), done, deleted),
        notes=tuple(notes),
    )
    raw = {"driver": events, "markers": markers(share), "cpu_samples": cpu.samples}
    save_raw(bed.profile.name, side, outcome, raw)
    return figures_of(side, outcome, cpu.figure(since))
