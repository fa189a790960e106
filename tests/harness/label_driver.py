"""A Ray driver for the label-selector test on the real node: demand with label selectors.

    python tests/harness/label_driver.py ADDRESS MARKER_DIR RELEASE_FILE

``ADDRESS`` is Ray Client's (``ray://NODE_IP:10001``); ``MARKER_DIR`` and ``RELEASE_FILE`` are
paths as the worker pods see them (the test's share). Every unit of work (a task, the actor's
call, a task in a placement-group bundle) writes its pod's name to ``MARKER_DIR/<unit>`` when it
starts; tasks then hold their CPUs until ``RELEASE_FILE`` exists. Each unit asks 2 CPUs (1 CPU
and 1 GPU for the actor): one pod of its group each.

At start (phase 1, no unit can take another group's pod):

- ``spot-0``, ``spot-1``: tasks asking ``market-type: spot``;
- ``gpu-actor``: an actor asking ``ray.io/accelerator-type: A100`` and a GPU;
- ``pg-0``, ``pg-1``: a SPREAD placement group whose bundles ask ``market-type: spot`` and
  ``market-type: on-demand``, a task in each bundle;
- ``nowhere``: a task asking ``market-type: reserved``, which no group has (never starts).

On the line ``phase2`` on stdin (every pod of phase 1 busy, so it cannot run elsewhere):
``fallback``, a task asking ``market-type: on-demand``, falling back to any node. On the line
``phase3`` (every pod busy again): ``priority``, a task asking ``tier: batch``, which both cpu
groups have. One phase at a time: a unit that two groups admit could otherwise take the pod
made for the other. ``stop`` ends the driver.

Output, one JSON object per line: ``{"event": "connected"}``, ``{"event": "submitted",
"phase": 1}``, ``{"event": "pg_ready"}``, ``{"event": "done", "unit": ..., "pod": ...}``,
``{"event": "failed", "unit": ..., "error": ...}``; each with its time, ``at``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
from ray_workload import connect

#: The longest a task holds its CPUs without the release file.
HOLD_S = 1200.0


def _mark(markers: str, unit: str) -> str:
    pod = os.environ.get("RAY_CLOUD_INSTANCE_ID", "?")
    path = os.path.join(markers, unit)
    with open(path + ".tmp", "w") as f:
        f.write(pod)
    os.replace(path + ".tmp", path)
    return pod


@ray.remote(num_cpus=2, max_retries=0)
def hold(unit: str, markers: str, release: str) -> str:
    """Mark the pod, hold 2 CPUs until the release file exists."""
    pod = _mark(markers, unit)
    start = time.time()
    while not os.path.exists(release) and time.time() - start < HOLD_S:
        time.sleep(0.5)
    return pod


@ray.remote(num_cpus=1, num_gpus=1, label_selector={"ray.io/accelerator-type": "A100"})
class Gpu:
    """An actor on an A100 node."""

    def where(self, unit: str, markers: str) -> str:
        """Mark the pod."""
        return _mark(markers, unit)


_EMITTING = threading.Lock()


def emit(**fields: Any) -> None:
    """One JSON line on stdout, flushed, with its time (``at``, unix) unless given; one line at
    a time (the units' threads emit at once when released)."""
    line = json.dumps({"at": time.time(), **fields}) + "\n"
    with _EMITTING:
        sys.stdout.write(line)
        sys.stdout.flush()


def _watch(unit: str, ref: Any) -> None:
    try:
        emit(event="done", unit=unit, pod=ray.get(ref))
    except Exception as exc:  # a unit whose pod went under it
        emit(event="failed", unit=unit, error=f"{type(exc).__name__}: {exc}"[:400])


def _track(refs: dict[str, Any]) -> None:
    for unit, ref in refs.items():
        threading.Thread(target=_watch, args=(unit, ref), daemon=True).start()


def phase1(markers: str, release: str) -> tuple[dict[str, Any], list[Any]]:
    """Submit phase 1; its refs by unit, and what must stay alive (the actor, the group)."""
    refs = {
        f"spot-{i}": hold.options(label_selector={"market-type": "spot"}).remote(
            f"spot-{i}", markers, release
        )
        for i in range(2)
    }
    refs["nowhere"] = hold.options(label_selector={"market-type": "reserved"}).remote(
        "nowhere", markers, release
    )
    actor = Gpu.remote()  # type: ignore[attr-defined]
    refs["gpu-actor"] = actor.where.remote("gpu-actor", markers)
    pg = placement_group(
        [{"CPU": 2}, {"CPU": 2}],
        strategy="SPREAD",
        bundle_label_selector=[{"market-type": "spot"}, {"market-type": "on-demand"}],
    )
    for i in range(2):
        strategy = PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=i)
        refs[f"pg-{i}"] = hold.options(scheduling_strategy=strategy).remote(
            f"pg-{i}", markers, release
        )
    threading.Thread(target=lambda: (pg.wait(HOLD_S), emit(event="pg_ready")), daemon=True).start()
    return refs, [actor, pg]


def later(phase: str, markers: str, release: str) -> dict[str, Any]:
    """Submit phase 2 or 3; its refs by unit."""
    if phase == "phase2":
        fallback = hold.options(
            label_selector={"market-type": "on-demand"},
            fallback_strategy=[{"label_selector": {}}],
        )
        return {"fallback": fallback.remote("fallback", markers, release)}
    batch = hold.options(label_selector={"tier": "batch"})
    return {"priority": batch.remote("priority", markers, release)}


def main(argv: list[str]) -> int:
    address, markers, release = argv
    connect(address)  # Ray Client's refusals under load tried again
    emit(event="connected", at=time.time())
    refs, keep = phase1(markers, release)
    emit(event="submitted", phase=1, units=sorted(refs))
    _track({u: r for u, r in refs.items() if u != "nowhere"})
    for line in sys.stdin:
        if line.strip() in ("phase2", "phase3"):
            more = later(line.strip(), markers, release)
            emit(event="submitted", phase=line.strip(), units=sorted(more))
            _track(more)
        elif line.strip() == "stop":
            break
    del keep
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
