"""The seed workload as a RayJob's entrypoint: ``python /krs-e2e/rayjob_driver.py``.

It runs on the head, started by Ray's job manager (KubeRay submits the RayJob), with the
image's Python and Ray only (no test dependency). Twenty tasks of ``{CPU: 5}``: on 10-CPU pods
they need exactly ten. Each task writes its pod's name to ``<share>/markers/<task>`` when it
starts and holds until ``<share>/release`` exists (at most ``HOLD_S``). Then the driver waits
until no worker node is alive (the cluster back at its floor of zero workers) and exits 0, so
the job's end follows the scale-down and ``shutdownAfterJobFinishes`` deletes a cluster at its
floor. One JSON line per event on stdout (the job's log); exit 1 if a task failed or the floor
was not reached within ``FLOOR_WAIT_S``.
"""

from __future__ import annotations

import json
import os
import sys
import time

import ray

SHARE = os.path.dirname(os.path.abspath(__file__))
TASKS = 20
HOLD_S = 900.0
FLOOR_WAIT_S = 600.0


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


@ray.remote(num_cpus=5, max_retries=0)
def hold(task: int) -> str:
    """Occupy 5 CPUs of one worker pod until the release file exists; the pod's name."""
    pod = os.environ.get("RAY_CLOUD_INSTANCE_ID", "?")
    marker = os.path.join(SHARE, "markers", str(task))
    with open(marker + ".tmp", "w") as f:
        f.write(pod)
    os.replace(marker + ".tmp", marker)
    start = time.time()
    while not os.path.exists(os.path.join(SHARE, "release")) and time.time() - start < HOLD_S:
        time.sleep(0.2)
    return pod


def workers_alive() -> int:
    """Alive Ray nodes other than the head."""
    return sum(
        1 for n in ray.nodes() if n["Alive"] and "node:__internal_head__" not in n["Resources"]
    )


def main() -> int:
    ray.init()
    emit(event="connected", at=time.time())
    refs = [hold.remote(i) for i in range(TASKS)]
    emit(event="submitted", tasks=TASKS, at=time.time())
    failed = 0
    for ref in refs:
        try:
            emit(event="done", pod=ray.get(ref), at=time.time())
        except Exception as exc:  # a task whose pod went under it: the test counts these
            failed += 1
            emit(event="failed", error=f"{type(exc).__name__}: {exc}"[:300])
    deadline = time.monotonic() + FLOOR_WAIT_S
    while workers_alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    alive = workers_alive()
    emit(event="finished", failed=failed, workers_alive=alive, at=time.time())
    return 1 if failed or alive else 0


if __name__ == "__main__":
    sys.exit(main())
