"""The demo's Ray driver, run as its own process: ``python -m keda_ray_scaler.demo.workload``.

Submits ``--tasks`` tasks of ``{CPU: --cpus}``; ``--long`` of them hold their CPUs for
``--long-seconds``, the others for ``--seconds``. Tasks are never retried, so a task whose pod
was removed while it ran fails the driver. Prints one JSON object per line: ``submitted``, one
``done`` per task (with the pod it ran on, from ``RAY_CLOUD_INSTANCE_ID``), then ``finished``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence

import ray

#: Environment variable: seconds every worker process of the workload sleeps as it starts.
START_DELAY_ENV = "KRS_WORKER_START_DELAY"

#: The hook by its import path: run as ``python -m``, this module's ``__name__`` is
#: ``__main__``, which a Ray worker cannot import.
SLOW_START_HOOK = "keda_ray_scaler.demo.workload.slow_start"


def slow_start() -> None:
    """The workers' ``worker_process_setup_hook``: a start that takes ``KRS_WORKER_START_DELAY``
    seconds, as a ``runtime_env`` that installs packages would."""
    time.sleep(float(os.environ.get(START_DELAY_ENV, "0")))


def _emit(**fields: object) -> None:
    print(json.dumps(fields, sort_keys=True), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workload against the cluster at ``RAY_ADDRESS``."""
    p = argparse.ArgumentParser(prog="keda_ray_scaler.demo.workload")
    p.add_argument("--tasks", type=int, default=20)
    p.add_argument("--cpus", type=float, default=5)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--long", type=int, default=0)
    p.add_argument("--long-seconds", type=float, default=30.0)
    p.add_argument("--worker-start-delay", type=float, default=0.0)
    args = p.parse_args(argv)

    @ray.remote(num_cpus=args.cpus, max_retries=0)
    def hold(index: int, seconds: float) -> tuple[int, str]:
        time.sleep(seconds)
        return index, os.environ.get("RAY_CLOUD_INSTANCE_ID", "?")

    runtime_env = None
    if args.worker_start_delay > 0:
        runtime_env = {
            "env_vars": {START_DELAY_ENV: str(args.worker_start_delay)},
            "worker_process_setup_hook": SLOW_START_HOOK,
        }
    ray.init(logging_level=logging.ERROR, log_to_driver=False, runtime_env=runtime_env)
    refs = [
        hold.remote(i, args.long_seconds if i >= args.tasks - args.long else args.seconds)
        for i in range(args.tasks)
    ]
    _emit(event="submitted", tasks=args.tasks, cpus=args.cpus)
    pending = list(refs)
    pods: dict[int, str] = {}
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            index, pod = ray.get(done[0])
            pods[index] = pod
            _emit(event="done", task=index, pod=pod)
    except ray.exceptions.RayError as exc:
        _emit(event="failed", error=str(exc).splitlines()[0])
        return 1
    _emit(event="finished", tasks=len(pods))
    return 0


if __name__ == "__main__":
    sys.exit(main())
