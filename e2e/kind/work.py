"""Ray driver of the kind e2e's seed scenario, run in the head pod's Ray container: 20 tasks of
{CPU: 5} (e2e/kind/scenario.py copies it there and starts it).

Every task first waits, sleeping, for the file ``START_FILE``: the kind node's directory that
e2e/overlays/kuberay-example mounts in every worker. The scenario makes it when the 10 pods are
there, so no task ends while pods still start (as e2e-local's seed holds its tasks). The wait
reads a file, not Ray: a task blocked in ``ray.get`` gives its CPUs back, and the pending tasks
would pile onto fewer pods. Then ``SHORT`` tasks sleep ``SHORT_S`` seconds and the others
``LONG_S``, keeping their pods busy after the short ones' pods went idle; they end when the
driver is killed. Each task prints the pod it ran on (RAY_CLOUD_INSTANCE_ID, set by KubeRay) and
its length: ``task started on POD for Ns``.
"""

from __future__ import annotations

import os
import sys
import time

import ray

TASKS = 20
SHORT = int(os.environ.get("SHORT", "16"))
SHORT_S = float(os.environ.get("SHORT_S", "20"))
LONG_S = float(os.environ.get("LONG_S", "3600"))
START_FILE = os.environ.get("START_FILE", "/krs-start-gate/open")


@ray.remote(num_cpus=5)
def hold(seconds: float) -> str:
    """Occupy 5 CPUs of one worker pod: until ``START_FILE`` exists, then ``seconds``."""
    pod = os.environ.get("RAY_CLOUD_INSTANCE_ID", "?")
    while not os.path.exists(START_FILE):
        time.sleep(0.5)
    print(f"task started on {pod} for {seconds:g}s", flush=True)
    time.sleep(seconds)
    return pod


def main() -> int:
    ray.init(address="auto", log_to_driver=True)
    refs = [hold.remote(SHORT_S if i < SHORT else LONG_S) for i in range(TASKS)]
    print(f"submitted {TASKS} tasks of {{CPU: 5}}", flush=True)
    pending = refs
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        print(f"task done on {ray.get(done[0])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
