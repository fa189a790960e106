"""The RayJob (f) and RayService (g) workloads of the side-by-side benchmark without a bed: each
side's object, and the figures from pod events made by hand (bench/vs_ray_optin.py,
bench/vs_ray_rayjob.py, bench/vs_ray_rayservice.py)."""

from __future__ import annotations

import math
from pathlib import Path

from pod_watch import PodEvent

from bench.vs_ray_optin import Outcome, figures_of, for_side, needed_since, seconds_between
from bench.vs_ray_optin_cpu import window
from bench.vs_ray_profile import FAST, PRODUCTION
from bench.vs_ray_rayjob import busy_pods as job_busy
from bench.vs_ray_rayjob import submitted_at
from bench.vs_ray_rayservice import asked_at
from bench.vs_ray_rayservice import busy_pods as service_busy
from bench.vs_ray_table import vs_ray_line
from bench.vs_ray_workloads import RAYSERVICE
from keda_ray_scaler.controller.optin import OPT_IN_LABEL

from real_optin import rayjob  # isort: skip
from real_serve import rayservice  # isort: skip

REFS = {"ray": "ray:local", "keda-ray-scaler": "krs:local"}


def _pods() -> list[PodEvent]:
    """A rest pod p0, two more under load (p2's deletion begins at 150), back to p0."""
    return [
        PodEvent(10.0, "p0", "cpu", "created"),
        PodEvent(12.0, "p0", "cpu", "ready"),
        PodEvent(105.0, "p1", "cpu", "created"),
        PodEvent(106.0, "p2", "cpu", "created"),
        PodEvent(110.0, "p1", "cpu", "ready"),
        PodEvent(111.0, "p2", "cpu", "ready"),
        PodEvent(150.0, "p2", "cpu", "deleted"),
        PodEvent(152.0, "p2", "cpu", "gone"),
        PodEvent(170.0, "p1", "cpu", "deleted"),
        PodEvent(171.0, "p1", "cpu", "gone"),
    ]


def test_rays_side_has_its_autoscaler_and_no_label_ours_the_label_only(tmp_path: Path) -> None:
    """Ray's object: in-tree autoscaling v2, no label; ours: the label; both the example's idle
    timeouts at production settings, the profile's at fast ones."""
    job = rayjob("j", tmp_path, REFS)
    ray = for_side(job, "ray", PRODUCTION, 6443)
    spec = ray["spec"]["rayClusterSpec"]
    assert OPT_IN_LABEL not in ray["metadata"]["labels"]
    assert spec["enableInTreeAutoscaling"] is True and spec["autoscalerOptions"]["version"] == "v2"
    assert [g["idleTimeoutSeconds"] for g in spec["workerGroupSpecs"]] == [60, 300]
    ours = for_side(rayservice("s", tmp_path, REFS), "ours", FAST, 6443)
    spec = ours["spec"]["rayClusterConfig"]
    assert ours["metadata"]["labels"][OPT_IN_LABEL] == "enabled"
    assert not spec.get("enableInTreeAutoscaling")
    assert [g["idleTimeoutSeconds"] for g in spec["workerGroupSpecs"]] == [5, 5]
    assert OPT_IN_LABEL in job["metadata"]["labels"]  # the object given is left as it was


def test_needed_pods_count_from_since_with_the_pods_already_there() -> None:
    """Three pods needed from 100 on: the rest pod counts, the third Ready at 111."""
    assert needed_since(_pods(), {"cpu": 3}, 100.0) == 111.0
    assert needed_since(_pods(), {"cpu": 1}, 100.0) == 100.0  # already met at since
    assert needed_since(_pods(), {"cpu": 4}, 100.0) is None


def test_pod_seconds_cover_the_window_only() -> None:
    assert seconds_between(_pods(), 100.0, 200.0) == 100 + (171 - 105) + (152 - 106)


def test_figures_of_a_load_step() -> None:
    """From the step at 100, the load's end at 140 and the watch's at 200, back at rest."""
    outcome = Outcome(RAYSERVICE, 100.0, 140.0, 200.0, 1, _pods(), 50, 49, 1, True, ["p2"])
    f = figures_of("ours", outcome)
    assert (f.first_pod_s, f.first_ready_s, f.all_needed_s) == (5.0, 10.0, 11.0)
    assert (f.peak, f.needed, f.created) == (3, 3, 2)
    assert (f.to_deletion_median_s, f.to_deletion_max_s, f.to_zero_s) == (20.0, 30.0, 30.0)
    assert (f.done, f.failed, f.busy_deleted) == (49, 1, 1)
    assert f.notes == ("busy pod deleted: p2",)
    line = vs_ray_line({("production", "g"): {"ours": f, "ray": f}})
    assert line.endswith("busy-deleted 1/1 failed 1/1")


def test_a_rayjob_pod_is_busy_from_its_tasks_start_to_their_end() -> None:
    """p1 deleted while its task held (no done from it), p2 after its task's done, p3 before
    its task started: only p1."""
    started = [("p1", 10.0), ("p2", 10.0), ("p3", 50.0)]
    done = [{"event": "done", "pod": "p2", "at": 30.0}]
    deleted = {"p1": 20.0, "p2": 40.0, "p3": 45.0}
    assert job_busy(started, done, deleted) == ["p1"]


def test_a_serve_pod_is_busy_when_the_last_sample_before_its_deletion_had_a_replica() -> None:
    samples = [(10.0, frozenset({"p1", "p2"})), (20.0, frozenset({"p1"}))]
    assert service_busy(samples, {"p1": 25.0, "p2": 21.0, "p3": 5.0}) == ["p1"]


def test_a_rayjobs_figures_count_from_its_drivers_submission() -> None:
    """The driver's ``submitted`` line is the start (the cluster's creation before it is
    KubeRay's); without one, the RayJob's creation."""
    events = [
        {"event": "connected", "at": 110.0},
        {"event": "submitted", "tasks": 20, "at": 112.5},
        {"event": "done", "task": 0, "pod": "p", "at": 130.0},
    ]
    assert submitted_at(events, 100.0) == 112.5
    assert submitted_at(events[:1], 100.0) == 100.0


def test_optin_cpu_counts_from_the_start_to_the_last_sample_the_head_answered() -> None:
    """Samples before the start are left out; the last ones, after the head pod went (its
    container NaN), too: the window is the first sample at or after the start to the last
    that knows the head pod's container."""
    nan = math.nan
    samples = [
        (90.0, {"agent": 1.0, "keda": 10.0}),
        (100.0, {"agent": 2.0, "keda": 11.0}),
        (102.0, {"agent": 2.5, "keda": 11.5}),
        (104.0, {"agent": 3.5, "keda": 13.0}),
        (106.0, {"agent": nan, "keda": 14.0}),
    ]
    assert window(samples, 99.0, "agent") == {"agent": 1.5, "keda": 2.0}
    assert window(samples, 104.0, "agent") == {}
    assert window(samples[-1:], 0.0, "agent") == {}


def test_serve_asks_for_replicas_when_it_first_has_more_than_at_rest_after_the_step() -> None:
    """(g): the demand starts when Serve's autoscaler asks for more replicas (its upscale delay
    after the step), not at the step: the first pod is timed from then too."""
    asked = [(9.5, 2), (10.0, 1), (10.5, 1), (13.0, 1), (13.5, 4), (14.0, 6)]
    assert asked_at(asked, 10.0) == 13.5
    assert asked_at(asked[:4], 10.0) is None
