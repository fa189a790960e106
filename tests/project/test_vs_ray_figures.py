"""The side-by-side benchmark's figures from a run's record (bench/vs_ray_figures.py), without
a bed: pod events and driver events made by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pod_watch import PodEvent

from bench.vs_ray_bed import on_bed
from bench.vs_ray_figures import figures
from bench.vs_ray_profile import FAST
from bench.vs_ray_table import table, vs_ray_line
from bench.vs_ray_workloads import MIX, SEED, Attempt, Run


def _run() -> Run:
    events = [
        {"event": "connected", "at": 90.0},
        {"event": "submitted", "wave": 0, "tasks": 2, "at": 100.0},
        {"event": "done", "task": 0, "pod": "p1", "start": 112.0, "end": 130.0},
        {"event": "done", "task": 1, "pod": "p2", "start": 121.0, "end": 140.0},
        {"event": "finished", "at": 141.0},
    ]
    attempts = [
        Attempt(1, "p3", 115.0),  # p3 deleted under it, retried on p2
        Attempt(0, "p1", 112.0),
        Attempt(1, "p2", 121.0),
    ]
    return Run(SEED, 80.0, events, attempts)


def _pods() -> list[PodEvent]:
    return [
        PodEvent(105.0, "p1", "cpu", "created"),
        PodEvent(106.0, "p2", "cpu", "created"),
        PodEvent(107.0, "p3", "cpu", "created"),
        PodEvent(110.0, "p1", "cpu", "ready"),
        PodEvent(111.0, "p2", "cpu", "ready"),
        PodEvent(112.0, "p3", "cpu", "ready"),
        PodEvent(118.0, "p3", "cpu", "deleted"),
        PodEvent(119.0, "p3", "cpu", "gone"),
        PodEvent(150.0, "p1", "cpu", "deleted"),
        PodEvent(151.0, "p1", "cpu", "gone"),
        PodEvent(160.0, "p2", "cpu", "deleted"),
        PodEvent(161.0, "p2", "cpu", "gone"),
    ]


def test_figures_of_a_run() -> None:
    f = figures("ray", _run(), _pods(), 200.0, {"autoscaler": 1.5})
    assert f.first_pod_s == 5.0 and f.first_ready_s == 10.0  # from the first submission
    assert f.all_needed_s is None  # 10 needed, 3 at most
    assert (f.peak, f.created) == (3, 3)
    assert f.pod_seconds == (151 - 105) + (161 - 106) + (119 - 107)
    assert f.busy_deleted == 1 and f.notes == ("busy pod deleted: p3",)
    assert f.to_deletion_median_s == 20.0 and f.to_deletion_max_s == 20.0  # p3 (churn) left out
    assert f.to_zero_s == 20.0
    assert (f.done, f.failed, f.retries, f.finished) == (2, 0, 1, True)


def test_a_workload_of_two_groups_notes_deletion_group_by_group() -> None:
    """(c): cpu pods go a minute after their tasks, gpu pods five; a third cpu pod that ran
    nothing (Ray's) pulls the per-pod median to the cpu side: the note gives each group's."""
    run = _run()
    mix = Run(MIX, run.started_at, run.events, run.attempts)
    pods = [
        *_pods(),
        PodEvent(106.0, "g1", "gpu", "created"),
        PodEvent(106.0, "g2", "gpu", "created"),
        PodEvent(440.0, "g1", "gpu", "deleted"),
        PodEvent(441.0, "g2", "gpu", "deleted"),
    ]
    f = figures("ray", mix, pods, 500.0, {})
    assert f.to_deletion_median_s == 20.0 + (300.0 - 20.0) / 2  # p1, p2; g1, g2 (last end 140)
    assert (
        "last task -> deletion by group, median / max (pods): cpu 20.0 / 20.0 s (2), "
        "gpu 300.5 / 301.0 s (2)"
    ) in f.notes
    assert not any("by group" in n for n in figures("ray", run, _pods(), 200.0, {}).notes)


def test_table_and_line() -> None:
    ours = figures("ours", _run(), _pods(), 200.0, {"agent": 1.0})
    ray = figures("ray", _run(), _pods(), 200.0, {"autoscaler": 2.0})
    results = {("fast", "a"): {"ours": ours, "ray": ray}, ("fast", "b"): {"ours": "boom"}}
    lines = table(results)
    assert any("pod-seconds" in line and line.rstrip().endswith("1.00") for line in lines)
    line = vs_ray_line(results)
    assert line.startswith("vs-ray: fast a peak 3/3 pod-s 113/113 (1.00)")
    assert line.endswith("fast b error (ours, ray)")


def test_the_benchmark_refuses_a_bed_at_other_timings() -> None:
    """``on_bed`` runs the side-by-side benchmark on a bed already up (the tests' session bed)
    only where that bed has the profile's HPA sync, scrape and refresh: else the figures would
    be named for settings they were not taken at."""
    started = SimpleNamespace(hpa_sync_s=15.0, scrape_s=1.0, refresh_s=1)
    refused = pytest.raises(ValueError, match=r"HPA sync, scrape and refresh \(15.0, 1.0, 1\)")
    with refused, on_bed(started, FAST):  # type: ignore[arg-type]
        pass
