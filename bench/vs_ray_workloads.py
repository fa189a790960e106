"""The workloads of the side-by-side benchmark, one driver for both sides (issue 16).

Each runs ``tests/harness/ray_workload.py`` on this machine through Ray Client, as the real-loop
tests
do, with Ray's default task retries (3) and every attempt recorded (``ATTEMPT_DIR``: the pod an
attempt ran on, even when Ray retried it elsewhere):

- **a, seed**: the tests' seed example, 20 x ``{CPU: 5}`` on 10-CPU pods: 16 of 20 s and 4 held.
  The short tasks' seconds begin when the 10 pods the demand needs are Ready (or after
  ``START_AFTER_S``): until then the demand stays whole on both sides, so the time to 10 pods
  is the autoscaler's alone. The held tasks are released ``RELEASE_AFTER_S`` after the 16th short
  task is done (a fixed time, the same on both sides). Needed: 10 pods.
- **b, burst**: 200 x ``{CPU: 1}`` of 10 s, all at once. Needed if all ran at once: 20 pods.
- **c, mix**: a cpu and a gpu group, a STRICT_SPREAD placement group of 3 x ``{CPU: 2}`` (60 s
  tasks), 3 x ``{GPU: 1, CPU: 1}`` of 30 s and a ``request_resources`` floor of 2 x
  ``{CPU: 10}`` held 120 s (``bench/vs_ray_mix.py``). Needed: 2 cpu pods (the floor) and 3 gpu
  pods (the GPU tasks); the spread's 3 bundles fit on 3 of those 5 nodes (a gpu pod has 8 CPUs,
  the GPU task takes 1), as Ray's own scheduler places them.
- **s, seed's short form** (CI's, ``tests/real/node/test_vs_ray.py``): (a) with its short tasks and
the
  held tasks' release 5 s each instead of 20 s and 30 s. Needed: 10 pods.
- **d, cycles**: the real-control-plane test's random waves (seed 20261123), 14 waves 6 s apart
  of 1-6 tasks of ``{CPU: 5}``, 1-5 s each. Needed: at most 3 pods at a time (a wave's tasks on
  10-CPU pods; waves do not overlap once pods are there).
- **e, labels**: Ray's label selectors over three labelled groups, ``spot``, ``on-demand`` and
  ``gpu`` (the real-node labels test's cluster and driver, ``bench/vs_ray_labels.py``): tasks,
  an actor, a placement group's bundles, a fallback and (KubeRay 1.7) a choice ``priority``
  decides, one unit a pod. Needed: 4 spot pods (3 without priority), 2 on-demand, 1 gpu.
- **f, rayjob** and **g, rayservice**: the seed as a RayJob, and a Serve application under a load
  step as a RayService; KubeRay makes their clusters, so each side's objects differ
  (``bench/vs_ray_rayjob.py``, ``bench/vs_ray_rayservice.py``, ``bench/vs_ray_optin.py``).
"""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.vs_ray_bed import Bed
from bench.vs_ray_clusters import Cluster

from ray_on_node import CLIENT_ADDRESS, GCS_ADDRESS, SHARE_MOUNT, make_share  # isort: skip
from real_labels import GROUPS as LABEL_GROUPS  # isort: skip
from real_labels import PHASE1, PHASE2, PRIORITY_UNIT  # isort: skip
from real_loop import RAY_TASK_RETRIES, SEED_SHORT, SEED_WAVES, Workload, submit  # isort: skip

START_AFTER_S = 300.0  # the seed's short tasks begin at the latest this long after submission
RELEASE_AFTER_S = 30.0  # the seed's held tasks end this long after the last short one
DRIVER_TIMEOUT_S = 900.0
CYCLES = 14
RNG_SEED = 20261123
_RUNS = itertools.count(1000)  # the drivers' file names (real_loop.submit's ``n``)


@dataclass(frozen=True)
class Attempt:
    """One attempt of a task: the pod it ran on, when it began (unix time)."""

    task: int
    pod: str
    start: float


@dataclass(frozen=True)
class Spec:
    """A workload: its key and title, the worker groups it needs, the pods its demand needs."""

    key: str
    title: str
    groups: tuple[str, ...]
    needed: dict[str, int]
    tasks: int


@dataclass
class Run:
    """What a driver did: its events (``tests/harness/ray_workload.py``) and its tasks' attempts."""

    spec: Spec
    started_at: float  # unix time the driver started (it connects through Ray Client first)
    events: list[dict[str, Any]]
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def submitted_at(self) -> float:
        """When the driver submitted its first tasks (its first ``submitted`` event): the
        figures count from here, not from the driver's start (Ray Client's connection took
        20-40 s on the loaded machine)."""
        return min(
            (float(e["at"]) for e in self.events if e["event"] == "submitted"),
            default=self.started_at,
        )

    def done(self) -> list[dict[str, Any]]:
        """The tasks' ``done`` events."""
        return [e for e in self.events if e["event"] == "done"]

    def failed(self) -> int:
        """Tasks that failed (Ray gave up on them)."""
        return sum(1 for e in self.events if e["event"] == "failed")

    def finished(self) -> bool:
        """The driver ran to its end."""
        return any(e["event"] == "finished" for e in self.events)

    def last_end(self) -> float:
        """When the last task ended (unix time)."""
        return max((e["end"] for e in self.done()), default=self.submitted_at)


def cycle_waves(seed: int = RNG_SEED, cycles: int = CYCLES) -> list[tuple[float, list[float]]]:
    """The cycles test's waves (tests/real/control_plane/test_real_control_plane.py)."""
    rng = random.Random(seed)
    return [
        (n * 6.0, [round(rng.uniform(1.0, 5.0), 1) for _ in range(rng.randint(1, 6))])
        for n in range(cycles)
    ]


MIX_DRIVER = Path(__file__).with_name("vs_ray_mix.py")
SEED = Spec("a", "seed: 20 x {CPU: 5}", ("cpu",), {"cpu": 10}, 20)
BURST = Spec("b", "burst: 200 x {CPU: 1} x 10 s", ("cpu",), {"cpu": 20}, 200)
CYCLE = Spec(
    "d", f"cycles: {CYCLES} random waves", ("cpu",), {"cpu": 3},
    sum(len(d) for _, d in cycle_waves()),
)  # fmt: skip
MIX = Spec("c", "mix: cpu + gpu, STRICT_SPREAD, floor", ("cpu", "gpu"), {"cpu": 2, "gpu": 3}, 6)
#: CI's short form of the seed (``tests/real/node/test_vs_ray.py``): short tasks and the release 5
#: s each
SHORT_FORM_S = 5.0
SHORT_FORM_WAVES = [
    (t, [SHORT_FORM_S if d > 0 else d for d in durations]) for t, durations in SEED_WAVES
]
SEED_SHORT_FORM = Spec("s", "seed, short form: 20 x {CPU: 5}, 5 s", ("cpu",), {"cpu": 10}, 20)
RAYJOB = Spec("f", "rayjob: the seed as a RayJob", ("cpu",), {"cpu": 10}, 20)
#: the requests are counted as they are sent (``tasks`` is 0 here)
RAYSERVICE = Spec("g", "rayservice: Serve 1 -> 6 replicas under load", ("cpu",), {"cpu": 3}, 0)
#: workload e's units (unit -> the group its selector asks for), phase by phase (the driver's
#: command, none for phase 1); the priority phase on KubeRay 1.7+ only (1.5's CRD prunes it)
KUBERAY = os.environ.get("KRS_KUBERAY_VERSION") or "v1.5.1"  # e2e/build.sh's default
HAS_PRIORITY = tuple(map(int, KUBERAY.lstrip("v").split(".")[:2])) >= (1, 7)
LABEL_PHASES: list[tuple[str | None, dict[str, str]]] = [(None, PHASE1), ("phase2", PHASE2)]
LABEL_PHASES += [("phase3", PRIORITY_UNIT)] if HAS_PRIORITY else []
LABEL_UNITS = {unit: group for _, units in LABEL_PHASES for unit, group in units.items()}
LABELS = Spec(
    "e", "labels: spot, on-demand, gpu; selectors", tuple(LABEL_GROUPS),
    dict(Counter(LABEL_UNITS.values())), len(LABEL_UNITS),
)  # fmt: skip
SPECS = {s.key: s for s in (SEED, BURST, MIX, CYCLE, SEED_SHORT_FORM, RAYJOB, RAYSERVICE, LABELS)}


def _submit(
    bed: Bed,
    cluster: Cluster,
    waves: list[tuple[float, list[float]]],
    *,
    cpus: float = 5,
    wait_for_start: bool = False,
) -> tuple[Workload, Path]:
    n = next(_RUNS)
    attempts = make_share(bed.share / f"attempts-{n}")
    workload = submit(
        bed.workdir, bed.share, n, waves, retries=RAY_TASK_RETRIES, ray_token=cluster.ray_token,
        wait_for_start=wait_for_start,
        extra_env={"TASK_CPUS": f"{cpus:g}", "ATTEMPT_DIR": f"{SHARE_MOUNT}/{attempts.name}"},
    )  # fmt: skip
    return workload, attempts


def _attempts(directory: Path) -> list[Attempt]:
    found = []
    for path in directory.iterdir():
        task, _, ns = path.name.partition("-")
        if ns.isdigit():
            found.append(Attempt(int(task), path.read_text(), int(ns) / 1e9))
    return sorted(found, key=lambda a: a.start)


def _wait(check: Any, timeout_s: float, workload: Workload) -> bool:
    """Poll ``check`` until true, the driver exits or ``timeout_s``; whether it came true."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not workload.finished():
        if check():
            return True
        time.sleep(0.2)
    return bool(check())


def _finish(spec: Spec, workload: Workload, attempts: Path) -> Run:
    try:
        workload.wait(DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:  # a figure too: the tasks that never ran show as not done
        pass
    finally:
        workload.release()
        workload.stop()
    events = workload.events()
    return Run(spec, workload.submitted_at, events, _attempts(attempts))


def run_seed(bed: Bed, cluster: Cluster) -> Run:
    """Workload (a): see the module docstring."""
    return _seed(bed, cluster, SEED, SEED_WAVES, RELEASE_AFTER_S)


def run_seed_short(bed: Bed, cluster: Cluster) -> Run:
    """Workload (s), CI's short form of (a): the same 20 tasks and 10 pods, seconds shorter."""
    return _seed(bed, cluster, SEED_SHORT_FORM, SHORT_FORM_WAVES, SHORT_FORM_S)


def _seed(
    bed: Bed, cluster: Cluster, spec: Spec, waves: list[tuple[float, list[float]]], release: float
) -> Run:
    workload, attempts = _submit(bed, cluster, waves, wait_for_start=True)
    try:
        needed = spec.needed["cpu"]
        _wait(lambda: len(bed.pods.running_pods("cpu")) >= needed, START_AFTER_S, workload)
        workload.start()
        _wait(lambda: workload.count("done") >= SEED_SHORT, 600, workload)
        time.sleep(release)
    finally:
        workload.release()
    return _finish(spec, workload, attempts)


def run_burst(bed: Bed, cluster: Cluster) -> Run:
    """Workload (b): see the module docstring."""
    workload, attempts = _submit(bed, cluster, [(0.0, [10.0] * BURST.tasks)], cpus=1)
    return _finish(BURST, workload, attempts)


def _start_mix(bed: Bed, cluster: Cluster) -> tuple[Workload, Path]:
    """``bench/vs_ray_mix.py`` as ``real_loop.submit`` starts ``tests/harness/ray_workload.py``."""
    n = next(_RUNS)
    attempts = make_share(bed.share / f"attempts-{n}")
    out = bed.workdir / f"workload-{n}.jsonl"
    with out.open("wb") as stdout, (bed.workdir / "logs" / f"workload-{n}.log").open("wb") as err:
        popen = subprocess.Popen(
            [sys.executable, str(MIX_DRIVER), CLIENT_ADDRESS, GCS_ADDRESS],
            env={
                **os.environ,
                "ATTEMPT_DIR": f"{SHARE_MOUNT}/{attempts.name}",
                "RAY_AUTH_MODE": "token",
                "RAY_AUTH_TOKEN": cluster.ray_token,
            },
            stdout=stdout,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    unused = bed.share / f"unused-{n}"
    return Workload(
        popen, out, unused, make_share(bed.share / f"markers-{n}"), time.time()
    ), attempts


def run_mix(bed: Bed, cluster: Cluster) -> Run:
    """Workload (c): see the module docstring."""
    workload, attempts = _start_mix(bed, cluster)
    return _finish(MIX, workload, attempts)


def run_cycles(bed: Bed, cluster: Cluster) -> Run:
    """Workload (d): see the module docstring."""
    workload, attempts = _submit(bed, cluster, cycle_waves())
    return _finish(CYCLE, workload, attempts)


RUNNERS = {"a": run_seed, "b": run_burst, "c": run_mix, "d": run_cycles, "s": run_seed_short}
