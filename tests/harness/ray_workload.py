"""A Ray driver for the real-control-plane test: waves of ``{CPU: 5}`` tasks, one JSON line each.

    python tests/harness/ray_workload.py ADDRESS WAVES_JSON

``ADDRESS`` is what ``ray.init`` takes: the real-node test gives the head's Ray Client address
(``ray://NODE_IP:10001``), since this driver runs on the machine and the tasks in worker pods.

``WAVES_JSON`` is a list of ``[start_after_s, [seconds, ...]]``: each wave is submitted
``start_after_s`` after the driver connected, one task per duration; a negative duration ``-n``
holds its task until the file ``RELEASE_FILE`` (environment) exists, at most ``n`` seconds; with
``START_FILE`` (environment, optional) a task of a positive duration holds until that file
exists (at most ``START_WAIT_S``) before its seconds begin: a test that needs all of its tasks
waiting until the pods it expects are there says so by an event, not by a guess of how long
pods take to join.
Each task writes its pod's name to ``MARKER_DIR/<task>`` when it starts (``MARKER_DIR`` and
``RELEASE_FILE`` are paths as the worker pods see them: the test's share). ``TASK_RESOURCES``
(environment, JSON, optional) adds custom resources every task asks, e.g. ``{"broken": 1}``;
``RUNTIME_ENV`` (JSON, optional) is the job's ``runtime_env``. ``TASK_CPUS`` (optional, default 5)
is each task's ``num_cpus``; with ``ATTEMPT_DIR`` (optional, a path as the pods see it) every
attempt of a task also writes its pod's name to ``ATTEMPT_DIR/<task>-<start ns>``, so that a task
Ray retried still shows the pod it was on when that pod went. Tasks never retry
(``max_retries=0``) unless ``TASK_RETRIES`` says how often Ray may, so a task whose pod is
removed under it fails and says so. Output, one JSON object per line, on stdout:

    {"event": "connect_retry", "attempt": 1, "error": "..."}   (Ray Client refused; tried again)
    {"event": "connected", "at": <unix time>}
    {"event": "submitted", "wave": 0, "tasks": 20, "at": ...}
    {"event": "done", "task": 3, "pod": "ray-demo-cpu-...", "start": ..., "end": ...}
    {"event": "failed", "task": 4, "error": "..."}
    {"event": "finished", "at": ...}
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any

import ray
from tenacity import RetryCallState, retry, retry_if_exception_type, stop_after_attempt, wait_fixed

#: The longest a task of positive duration waits for ``START_FILE``.
START_WAIT_S = 600.0


@ray.remote(num_cpus=5, max_retries=0)
def hold(
    seconds: float, release: str, marker: str, go: str = "", attempts: str = ""
) -> tuple[str, float, float]:
    """Occupy 5 CPUs of one worker pod for ``seconds``; return the pod and the wall-clock span.

    At start, the pod's name is written to the file ``marker`` (the test reads which pods are
    busy from these files: the worker pods mount the test's share).
    """
    start = time.time()
    pod = os.environ.get("RAY_CLOUD_INSTANCE_ID", "?")
    with open(marker + ".tmp", "w") as f:
        f.write(pod)
    os.replace(marker + ".tmp", marker)
    if attempts:
        task = os.path.basename(marker)
        with open(os.path.join(attempts, f"{task}-{time.time_ns()}"), "w") as f:
            f.write(pod)
    if seconds >= 0:
        while go and not os.path.exists(go) and time.time() - start < START_WAIT_S:
            time.sleep(0.2)
        time.sleep(seconds)
    else:
        while not os.path.exists(release) and time.time() - start < -seconds:
            time.sleep(0.2)
    return pod, start, time.time()


def emit(**fields: Any) -> None:
    """One JSON line on stdout, flushed."""
    print(json.dumps(fields), flush=True)


def _log_retry(state: RetryCallState) -> None:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    emit(event="connect_retry", attempt=state.attempt_number, error=f"{error}"[:300])
    with contextlib.suppress(Exception):  # a half-made client connection goes first
        ray.shutdown()


@retry(
    retry=retry_if_exception_type(ConnectionError),
    stop=stop_after_attempt(5),
    wait=wait_fixed(2),
    before_sleep=_log_retry,
    reraise=True,
)
def connect(address: str, runtime_env: dict[str, Any] | None = None) -> None:
    """``ray.init``; a Ray Client connection the head refused while it starts its per-client
    server (seen under load: the server process gone before Ray read its command line) is
    tried again, each retry a JSON line."""
    ray.init(address=address, log_to_driver=False, configure_logging=False, runtime_env=runtime_env)


def main(argv: list[str]) -> int:
    address, waves_json = argv
    waves: list[tuple[float, list[float]]] = json.loads(waves_json)
    release = os.environ.get("RELEASE_FILE", "/nonexistent")
    go = os.environ.get("START_FILE", "")
    markers = os.environ["MARKER_DIR"]
    options: dict[str, Any] = {}
    if extra := json.loads(os.environ.get("TASK_RESOURCES") or "{}"):
        options["resources"] = extra
    if retries := int(os.environ.get("TASK_RETRIES") or 0):
        options["max_retries"] = retries
    if cpus := os.environ.get("TASK_CPUS"):
        options["num_cpus"] = float(cpus)
    attempts = os.environ.get("ATTEMPT_DIR", "")
    task = hold.options(**options) if options else hold
    connect(address, json.loads(os.environ.get("RUNTIME_ENV") or "null"))
    t0 = time.monotonic()
    emit(event="connected", at=time.time())
    refs: dict[ray.ObjectRef, int] = {}
    for n, (after_s, durations) in enumerate(waves):
        time.sleep(max(0.0, t0 + after_s - time.monotonic()))
        for seconds in durations:
            n_task = len(refs)
            marker = os.path.join(markers, str(n_task))
            refs[task.remote(seconds, release, marker, go, attempts)] = n_task
        emit(event="submitted", wave=n, tasks=len(durations), at=time.time())
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        task = refs[done[0]]
        try:
            pod, start, end = ray.get(done[0])
        except Exception as exc:  # a task killed under its pod: the test counts these
            emit(event="failed", task=task, error=f"{type(exc).__name__}: {exc}"[:500])
        else:
            emit(event="done", task=task, pod=pod, start=start, end=end)
    emit(event="finished", at=time.time())
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
