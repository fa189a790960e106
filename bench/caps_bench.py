"""What a forged cluster costs the refresher, before and after the caps (issue "Trust boundaries").

The review's heavy forgery: one cluster's series carrying 5,000 demand shapes, each asking its
own custom resource. The refresher's path for one fetched cluster is: series -> (caps) ->
``decoding.decode`` -> ``planner.plan``. Each case runs in a fresh ``spawn`` child, so its peak
RSS (``ru_maxrss``) is its own; printed: wall time of the path, peak RSS, and RSS after the
imports (the baseline every refresher has). Wall and CPU time both: on a loaded machine the
wall time is mostly waiting for a core.

- before: no caps, 5,000 forged shapes decoded and planned (what the scaler did);
- after: the same series refused by :func:`~keda_ray_scaler.sources.series_caps.check_caps`;
- worst within the default caps: 256 shapes over 64 distinct resource names, 32 placement
  groups of 128 STRICT_SPREAD bundles, 64 worker groups: what a forger can still make one
  plan cost.

Target: the refresher stays far below the manifests' 512 MiB limit whatever one cluster sends.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing.connection import Connection
from typing import Any

FORGED_SHAPES = 5_000
NOW_S = 1_795_000_000.0
LIMIT_MIB = 512  # manifests/base/deployment.yaml: the scaler pod's memory limit


def _demand(shape: str, kind: str = "task", strategy: str = "") -> Any:
    from keda_ray_scaler import schema

    labels = {"cluster": "forged", "kind": kind, "shape": shape, "strategy": strategy}
    return schema.Sample(schema.DEMAND_BUNDLES, labels, 1.0)


def _groups(n: int) -> list[Any]:
    from keda_ray_scaler import schema
    from keda_ray_scaler.model import ClusterSpec, PlanningInput, Resources, WorkerGroup
    from keda_ray_scaler.schema import encoding

    groups = tuple(
        WorkerGroup(f"g{i}", Resources.of(CPU=16, GPU=i % 2, memory=64e9), max_replicas=1000)
        for i in range(n)
    )
    spec = ClusterSpec("forged", groups)
    snapshot = schema.ClusterSnapshot(PlanningInput(spec), NOW_S, True)
    return encoding.encode(snapshot)


def forged(shapes: int = FORGED_SHAPES) -> list[Any]:
    """The review's forgery: ``shapes`` shapes, each with its own custom resource."""
    return _groups(2) + [_demand(f"CPU=1,r{i}=1") for i in range(shapes)]


def worst_within_caps() -> list[Any]:
    """As much as the default caps let through, in the planner's costliest form."""
    from keda_ray_scaler.sources.series_caps import DataCaps

    caps = DataCaps()
    pgs = caps.max_placement_groups
    names = caps.max_resource_names - 3  # CPU, GPU, memory come from the groups
    out = _groups(caps.max_worker_groups)
    for i in range(caps.max_shapes - pgs):
        out.append(_demand(f"CPU={1 + i % 8},r{i % names}={1 + i // names}"))
    bundles = caps.max_bundles_per_placement_group
    for i in range(pgs):
        shape = ";".join(f"CPU={1 + (i + j) % 7}" for j in range(bundles))
        out.append(_demand(shape, "placement_group", "STRICT_SPREAD"))
    return out


def _case(conn: Connection, build: str, capped: bool) -> None:
    """One child: build the series, then caps (or not), decode and plan; send the figures."""
    import resource

    from keda_ray_scaler.errors import CapExceeded
    from keda_ray_scaler.planner import plan
    from keda_ray_scaler.schema import decoding
    from keda_ray_scaler.sources.series_caps import DataCaps, check_caps

    baseline_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    samples = forged() if build == "forged" else worst_within_caps()
    started, cpu_started = time.perf_counter(), time.process_time()
    outcome = "planned"
    try:
        if capped:
            check_caps(samples, DataCaps())
        snapshots = decoding.decode(samples)
        plan(snapshots["forged"].input)
    except CapExceeded as exc:
        outcome = f"refused ({exc.cap.value})"
    seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    conn.send((len(samples), outcome, seconds, cpu_s, baseline_kib, peak_kib))
    conn.close()


def run_case(build: str, capped: bool) -> tuple[int, str, float, float, int, int]:
    """Run :func:`_case` in a fresh spawned process; its figures."""
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_case, args=(theirs, build, capped))
    proc.start()
    theirs.close()
    figures: tuple[int, str, float, float, int, int] = ours.recv()
    proc.join()
    return figures


def main() -> None:
    """Print the three cases."""
    print(f"one forged cluster, refresher path (caps, decode, plan); limit {LIMIT_MIB} MiB")
    print(
        f"{'case':<34} {'series':>7} {'outcome':<26} {'wall':>9} {'cpu':>9} "
        f"{'peak RSS':>10} {'base':>8}"
    )
    for label, build, capped in (
        (f"before: {FORGED_SHAPES:,} shapes, no caps", "forged", False),
        (f"after: {FORGED_SHAPES:,} shapes, caps", "forged", True),
        ("after: worst within default caps", "worst", True),
    ):
        series, outcome, seconds, cpu_s, base_kib, peak_kib = run_case(build, capped)
        verdict = "PASS" if peak_kib / 1024 < LIMIT_MIB else "FAIL"
        print(
            f"{label:<34} {series:>7} {outcome:<26} {seconds:>8.3f}s {cpu_s:>8.3f}s "
            f"{peak_kib / 1024:>7.0f} MiB {base_kib / 1024:>5.0f} MiB "
            f"{verdict if capped else ''}",
            flush=True,
        )


if __name__ == "__main__":
    main()
