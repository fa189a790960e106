"""Workload (c) of the side-by-side benchmark, a Ray driver: a CPU and a GPU group at once.

    python bench/vs_ray_mix.py ADDRESS GCS_ADDRESS

Run on this machine through Ray Client (``ADDRESS``: ``ray://NODE_IP:10001``), with Ray's token
in the environment, as ``tests/harness/ray_workload.py`` is; its JSON lines are that driver's
(``connected``, ``submitted``, ``done``, ``failed``, ``finished``) and its tasks write
``ATTEMPT_DIR/<task>-<start ns>`` the same way. Self-contained: Ray Client ships this module's
task functions by value.

1. a ``request_resources`` floor of 2 x ``{CPU: 10}`` (Ray's autoscaler v2 SDK: a cluster
   resource constraint in the GCS, which both autoscalers read);
2. a STRICT_SPREAD placement group of 3 x ``{CPU: 2}`` with one 60 s task in each bundle;
3. 3 tasks of ``{GPU: 1, CPU: 1}``, 30 s each;
4. once every task is done and at least ``FLOOR_S`` after the start: the floor cleared and the
   placement group removed.

Needed: 2 cpu pods (the floor: a gpu pod has 8 CPUs, a floor bundle 10) and 3 gpu pods (one GPU
each); the spread's 3 bundles of ``{CPU: 2}`` fit on any 3 of those 5 nodes, and Ray's raylet
places them there (seen on the bed: every spread task ran, one of them on a gpu pod). Ray's
autoscaler v2 launches a third cpu pod for the spread because it schedules placement groups
before tasks (``_sched_gang_resource_requests`` then ``_sched_resource_requests``), when no
gpu pod is in its plan yet.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import ray
from ray.autoscaler.v2.sdk import request_cluster_resources
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

FLOOR = [{"resources": {"CPU": 10}}] * 2
SPREAD = [{"CPU": 2}] * 3
SPREAD_S = 60.0
GPU_TASKS = 3
GPU_S = 30.0
FLOOR_S = 120.0


def emit(**fields: Any) -> None:
    """One JSON line on stdout, flushed."""
    print(json.dumps(fields), flush=True)


@ray.remote(max_retries=3)
def work(task: int, seconds: float, attempts: str) -> tuple[str, float, float]:
    """Run ``seconds`` on a worker pod; record the attempt; the pod and the span."""
    start = time.time()
    pod = os.environ.get("RAY_CLOUD_INSTANCE_ID", "?")
    if attempts:
        with open(os.path.join(attempts, f"{task}-{time.time_ns()}"), "w") as f:
            f.write(pod)
    time.sleep(seconds)
    return pod, start, time.time()


def main(argv: list[str]) -> int:
    address, gcs = argv
    attempts = os.environ.get("ATTEMPT_DIR", "")
    ray.init(address=address, log_to_driver=False, configure_logging=False)
    started = time.monotonic()
    emit(event="connected", at=time.time())
    request_cluster_resources(gcs, FLOOR)
    emit(event="submitted", wave=0, tasks=0, floor=FLOOR, at=time.time())
    group = placement_group(SPREAD, strategy="STRICT_SPREAD")
    strategy = [
        PlacementGroupSchedulingStrategy(placement_group=group, placement_group_bundle_index=i)
        for i in range(len(SPREAD))
    ]
    refs = {
        work.options(num_cpus=2, scheduling_strategy=s).remote(i, SPREAD_S, attempts): i
        for i, s in enumerate(strategy)
    }
    emit(event="submitted", wave=1, tasks=len(SPREAD), at=time.time())
    for n in range(GPU_TASKS):
        task = len(SPREAD) + n
        refs[work.options(num_cpus=1, num_gpus=1).remote(task, GPU_S, attempts)] = task
    emit(event="submitted", wave=2, tasks=GPU_TASKS, at=time.time())
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        task = refs[done[0]]
        try:
            pod, start, end = ray.get(done[0])
        except Exception as exc:
            emit(event="failed", task=task, error=f"{type(exc).__name__}: {exc}"[:500])
        else:
            emit(event="done", task=task, pod=pod, start=start, end=end)
    time.sleep(max(0.0, started + FLOOR_S - time.monotonic()))
    request_cluster_resources(gcs, [])
    remove_placement_group(group)
    emit(event="finished", at=time.time())
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
