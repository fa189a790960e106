"""Side by side with Ray's own autoscaler, on the same bed (issue 16): ``python -m bench vs_ray``.

For each profile (:mod:`bench.vs_ray_profile`: production settings, then the bed's fast ones) a
bed is started (:mod:`bench.vs_ray_bed`: control plane, KEDA, one real node, KubeRay 1.5.1's
operator, the scaler, Prometheus); each workload (:mod:`bench.vs_ray_workloads`) runs once on a
fresh cluster of each side (:mod:`bench.vs_ray_clusters`: ours, the agent + KEDA + the scaler
in KubeRay mode; Ray's, Ray 2.60's autoscaler v2 as KubeRay's sidecar), the sides taking turns
to go first. After the workload's last task the run is watched until the side's pods are gone
(at most ``OBSERVE_AFTER_S`` beyond the timeouts that apply). One table, then one line that
begins ``vs-ray:`` (:mod:`bench.vs_ray_table`).

It needs the bed: root, inside ``e2e/netns.sh``, with ``KRS_E2E_BIN`` and ``KRS_E2E_IMAGES``
(``make bench-vs-ray`` sets them). Elsewhere it prints one line saying why and returns. It is a
benchmark: a side that fails is printed as an error, the run goes on, the exit status is 0.

``KRS_VS_RAY_PROFILES`` (``production,fast``), ``KRS_VS_RAY_WORKLOADS`` (``a,b,c,d,e,f,g``; about
55 minutes for a-d, both sides, 40 more at production settings for f and g, about 10 for e) and
``KRS_VS_RAY_SIDES`` (``ours,ray``) narrow the run. The RayJob (f) and RayService (g) workloads
make their own clusters through KubeRay (:mod:`bench.vs_ray_optin`): no RayCluster ``demo``, no
hop probe, no CPU figures. The labels workload (e) makes its three labelled groups from the
example's ``cpu`` group (:mod:`bench.vs_ray_labels`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench import vs_ray_cpu as cpu
from bench.vs_ray_bed import Bed, TestBed, bed, on_bed
from bench.vs_ray_clusters import cluster
from bench.vs_ray_figures import Figures, figures
from bench.vs_ray_hops import HopProbe, budget_lines
from bench.vs_ray_idle import IdleWatch
from bench.vs_ray_labels import relabel, run_labels
from bench.vs_ray_profile import PROFILES, Profile
from bench.vs_ray_rayjob import run_rayjob
from bench.vs_ray_rayservice import run_rayservice
from bench.vs_ray_table import Results, table, vs_ray_line
from bench.vs_ray_workloads import RUNNERS, SPECS, Run

from pod_watch import PodEvent  # isort: skip
from ray_on_node import NODE_IP  # isort: skip
from real_node import skip_reason as node_skip_reason  # isort: skip

PROFILE_NAMES = os.environ.get("KRS_VS_RAY_PROFILES", "production,fast").split(",")
WORKLOADS = os.environ.get("KRS_VS_RAY_WORKLOADS", "a,b,c,d,e,f,g").split(",")
SIDES = os.environ.get("KRS_VS_RAY_SIDES", "ours,ray").split(",")
#: how long beyond the idle timeout, HPA window and cooldown a run is watched for its last pods
OBSERVE_AFTER_S = 90.0
SHIPPED = {"idle_s": 60, "down_window_s": 60, "cooldown_s": 30}
#: the workloads whose clusters KubeRay makes (a RayJob, a RayService): a runner per side each
OPTIN_RUNNERS = {"f": run_rayjob, "g": run_rayservice}
#: the workloads whose groups are made from the example's ``cpu`` group (labelled groups)
RELABELLED = {"e": (run_labels, relabel)}
#: the head's GCS port on the node's network (the example's head, ``hostNetwork``)
GCS_PORT = 6379


def isolate_home() -> None:
    """As the test suite does (tests/conftest.py): no ``~/.ray/auth_token`` or kubeconfig of
    this machine's user reaches the drivers."""
    os.environ.setdefault("KRS_REAL_HOME", os.environ.get("HOME", ""))
    os.environ["HOME"] = tempfile.mkdtemp(prefix="krs-home-")
    for var in (
        "RAY_AUTH_MODE",
        "RAY_AUTH_TOKEN",
        "RAY_AUTH_TOKEN_PATH",
        "RAY_ADDRESS",
        "KUBECONFIG",
    ):
        os.environ.pop(var, None)


def _interrupted(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C: the bed's context managers stop what they started."""
    raise KeyboardInterrupt(f"signal {signum}")


def skip_reason() -> str | None:
    """Why the bed cannot run here, or None."""
    if not (os.environ.get("KRS_E2E_BIN") and os.environ.get("KRS_E2E_IMAGES")):
        return "needs KRS_E2E_BIN and KRS_E2E_IMAGES (run it as `make bench-vs-ray`)"
    return node_skip_reason()


def observe_s(profile: Profile, groups: tuple[str, ...]) -> float:
    """The longest a run's last pods may take to go after its last task, on either side."""
    idle = profile.idle_s if profile.idle_s is not None else (300 if "gpu" in groups else 60)
    window = (
        profile.down_window_s if profile.down_window_s is not None else SHIPPED["down_window_s"]
    )
    cooldown = profile.cooldown_s if profile.cooldown_s is not None else SHIPPED["cooldown_s"]
    return idle + window + cooldown + OBSERVE_AFTER_S


def run_side(bed: Bed, side: str, key: str) -> Figures:
    """One side's run of workload ``key`` on a fresh cluster; its figures."""
    if key in OPTIN_RUNNERS:
        return OPTIN_RUNNERS[key](bed, side)
    spec = SPECS[key]
    group = spec.groups[0]
    runner, layout = RELABELLED.get(key, (RUNNERS.get(key), None))
    relabelled = layout(bed.profile) if layout else None
    with cluster(bed, side, spec.groups, relabelled) as c, contextlib.ExitStack() as probing:
        probe = None
        if side == "ours":  # our path's hops (its latency budget); Ray's has no such hops
            probe = probing.enter_context(HopProbe(bed, group, spec.needed.get(group, 1)))
        idle = probing.enter_context(IdleWatch(f"{NODE_IP}:{GCS_PORT}", c.ray_token))
        before = cpu.read(bed, c)
        assert runner is not None, key
        run = runner(bed, c)
        deadline = run.last_end() + observe_s(bed.profile, spec.groups)
        while time.time() < deadline and any(bed.pods.live_pods(g) for g in spec.groups):
            time.sleep(0.5)
        end = time.time()
        after = cpu.read(bed, c)
    events = [e for e in list(bed.pods.events) if e.group in spec.groups]
    mine = {e.pod for e in events if e.what == "created" and e.at >= run.started_at}
    events = [e for e in events if e.pod in mine]
    used = after.since(before)
    if probe is not None:  # stopped with the cluster's block
        hops = probe.hops(events, run.submitted_at)
        print(f"vs_ray: {bed.profile.name} {key} ours, latency budget:", flush=True)
        print("\n".join(budget_lines(hops, run.submitted_at)), flush=True)
    if idle.errors:
        reads = idle.starts.reads + idle.errors
        print(f"vs_ray: {key} {side} idle watch: {idle.errors} of {reads} reads failed, "
              f"last: {idle.last_error}", flush=True)  # fmt: skip
    since = idle.starts.since
    save_raw(bed.profile.name, key, side, run, events, end, used, since)
    return figures(side, run, events, end, used, since)


def save_raw(
    profile: str,
    key: str,
    side: str,
    run: Run,
    events: list[PodEvent],
    end: float,
    used: dict[str, float],
    idle_since: dict[str, float] | None = None,
) -> None:
    """The run's raw record (pod events, driver events, attempts, CPU, Ray's idle starts) as JSON in
    ``KRS_VS_RAY_RAW_DIR`` when set: the figures can be made again from it."""
    directory = os.environ.get("KRS_VS_RAY_RAW_DIR")
    if not directory:
        return
    record = {
        "profile": profile, "workload": key, "side": side, "end": end, "cpu": used,
        "started_at": run.started_at, "events": run.events,
        "attempts": [dataclasses.asdict(a) for a in run.attempts],
        "pods": [dataclasses.asdict(e) for e in events], "idle_since": idle_since or {},
    }  # fmt: skip
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / f"{profile}-{key}-{side}-{int(end)}.json"
    path.write_text(json.dumps(record))


def run_profile(
    profile: Profile, workloads: list[str], results: Results, on: TestBed | None = None
) -> None:
    """Run each workload on both sides, taking turns, on a bed started at ``profile`` or on
    ``on``, a bed already up at its timings."""
    with bed(profile) if on is None else on_bed(on, profile) as started:
        print(f"vs_ray: {profile.name} bed up in {started.workdir}", flush=True)
        for n, key in enumerate(workloads):
            sides = SIDES if n % 2 == 0 else SIDES[::-1]
            for side in sides:
                t0 = time.monotonic()
                try:
                    result: Figures | str = run_side(started, side, key)
                except Exception as exc:  # a benchmark prints, it does not fail
                    traceback.print_exc()
                    result = f"{type(exc).__name__}: {exc}"[:300]
                results.setdefault((profile.name, key), {})[side] = result
                print(f"vs_ray: {profile.name} {key} {side} in {time.monotonic() - t0:.0f} s: "
                      f"{result}", flush=True)  # fmt: skip


def run(profiles: list[str], workloads: list[str], on: TestBed | None = None) -> Results:
    """Run ``workloads`` at each of ``profiles`` (on ``on``, a bed already up, if given), print
    the table and the ``vs-ray:`` line; the results by (profile, workload)."""
    results: Results = {}
    started = time.monotonic()
    try:
        for name in profiles:
            try:
                run_profile(PROFILES[name], workloads, results, on)
            except Exception:  # the bed itself failed: print, go on
                traceback.print_exc()
    finally:  # interrupted too: what ran is printed
        print_results(results, time.monotonic() - started)
    return results


def print_results(results: Results, took_s: float) -> None:
    """The table and the ``vs-ray:`` line."""
    kuberay = os.environ.get("KRS_KUBERAY_VERSION") or "v1.5.1"  # e2e/build.sh's default
    print(f"\nRay 2.60.0 autoscaler v2 (KubeRay {kuberay} sidecar) vs keda-ray-scaler, "
          f"{took_s:.0f} s, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for line in table(results):
        print(line)
    print(vs_ray_line(results), flush=True)


def main() -> None:
    """``python -m bench vs_ray``: the bed's skip line, or the run (module docstring)."""
    reason = skip_reason()
    if reason:
        print(f"vs-ray: skipped: {reason}")
        return
    isolate_home()
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        run(PROFILE_NAMES, WORKLOADS)
    finally:
        shutil.rmtree(os.environ["HOME"], ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(0)
