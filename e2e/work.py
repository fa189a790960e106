"""Ray driver for e2e/run.sh, run inside the head pod: 20 tasks of {CPU: 5}.

``SHORT`` tasks sleep ``SHORT_S`` seconds; the others sleep ``LONG_S`` seconds and keep their pod
busy long after the short ones have finished and their pods have gone idle. Each task prints the
pod it ran on (RAY_CLOUD_INSTANCE_ID, set from the downward API).
"""

from __future__ import annotations

import os
import sys
import time

import ray

TASKS = 20
SHORT = int(os.environ.get("SHORT", "16"))
SHORT_S = float(os.environ.get("SHORT_S", "45"))
LONG_S = float(os.environ.get("LONG_S", "900"))


@ray.remote(num_cpus=5)
def hold(seconds: float) -> str:
    """Occupy 5 CPUs of one worker pod for ``seconds``; return the pod's name."""
    pod = os.environ.get("RAY_CLOUD_INSTANCE_ID", "?")
    print(f"task started on {pod} for {seconds}s", flush=True)
    time.sleep(seconds)
    return pod


def main() -> int:
    ray.init(address="auto")
    refs = [hold.remote(SHORT_S if i < SHORT else LONG_S) for i in range(TASKS)]
    print(f"submitted {TASKS} tasks of {{CPU: 5}}", flush=True)
    pending = refs
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        print(f"task done on {ray.get(done[0])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
