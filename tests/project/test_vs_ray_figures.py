"""The side-by-side benchmark's figures from a run's record (bench/vs_ray_figures.py), without
a bed: pod events and driver events made by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pod_watch import PodEvent

from bench.vs_ray_bed import on_bed
from bench.vs_ray_figures import figures
from bench.vs_ray_idle import IdleStarts, idle_note, idle_to_deletion
from bench.vs_ray_profile import FAST
from bench.vs_ray_table import table, vs_ray_line
from bench.vs_ray_workloads import MIX, SEED, Attempt, Run
from keda_ray_scaler.gcs._generated import autoscaler_pb2


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


def _status(*nodes: tuple[str, int, int]) -> autoscaler_pb2.GetClusterStatusReply:
    """A ``GetClusterStatusReply`` of ``(instance_id, status, idle_duration_ms)`` nodes."""
    reply = autoscaler_pb2.GetClusterStatusReply()
    for pod, status, idle_ms in nodes:
        reply.cluster_resource_state.node_states.add(
            instance_id=pod, status=status, idle_duration_ms=idle_ms
        )
    return reply


def test_ray_s_idle_start_is_its_latest_idle_span_and_deletion_counts_from_it() -> None:
    """Each pod keeps the start of its node's latest idle span: a busy, draining or dead read
    keeps it, a new span replaces it; a node without a pod name is left out."""
    idle, running, draining = autoscaler_pb2.IDLE, autoscaler_pb2.RUNNING, autoscaler_pb2.DRAINING
    starts = IdleStarts()
    starts.update(_status(("p1", idle, 4_000), ("p2", running, 0), ("", idle, 9_000)), at=110.0)
    assert starts.since == {"p1": 106.0}
    starts.update(_status(("p1", running, 0), ("p2", idle, 500)), at=120.0)  # p1 busy again
    assert starts.since == {"p1": 106.0, "p2": 119.5}
    starts.update(_status(("p1", idle, 2_000), ("p2", draining, 0)), at=130.0)
    assert starts.since == {"p1": 128.0, "p2": 119.5}
    assert starts.reads == 3
    waits = idle_to_deletion(starts.since, {"p1": 190.0, "p2": 180.0, "p3": 100.0})
    assert waits == {"p1": 62.0, "p2": 60.5}  # p3: never seen idle
    f = figures("ours", _run(), _pods(), 200.0, {}, {"p1": 88.0, "p2": 99.0})
    assert (f.idle_to_deletion_median_s, f.idle_to_deletion_max_s) == (61.5, 62.0)
    assert "Ray idle -> deletion, median / max (pods): all 61.5 / 62.0 s (2)" in f.notes
    assert figures("ours", _run(), _pods(), 200.0, {}).idle_to_deletion_max_s is None
    groups = idle_note({"a": 0.0, "b": 10.0}, {"a": 60.0, "b": 80.0}, {"a": "cpu", "b": "gpu"})
    assert groups.endswith("all 65.0 / 70.0 s (2), cpu 60.0 / 60.0 s (1), gpu 70.0 / 70.0 s (1)")
