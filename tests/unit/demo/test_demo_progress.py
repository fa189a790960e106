"""The demo's progress bound, its named failure, and the timeline PNG (pure parts, no Ray)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from keda_ray_scaler.cli.demo import verdict
from keda_ray_scaler.demo.progress import DemoState, Progress, Sample, waiting_for
from keda_ray_scaler.demo.record import DemoResult

DONE = DemoState(
    agent_ready=True,
    submitted=True,
    answered=True,
    tasks=20,
    tasks_done=20,
    driver_running=False,
    replicas=0,
    pods_left=0,
)


@pytest.mark.parametrize(
    ("changes", "condition"),
    [
        ({"agent_ready": False, "submitted": False}, "the agent's first successful poll of Ray"),
        ({"submitted": False}, "the driver to submit the tasks"),
        ({"answered": False, "tasks_done": 0}, "the scaler's first target for the pending tasks"),
        ({"tasks_done": 13, "replicas": 10}, "every task to finish (13/20 done)"),
        ({"driver_running": True}, "the driver to exit"),
        ({"replicas": 2, "pods_left": 3}, "the group back to 0 pods (3 pods, 2 replicas left)"),
        ({}, "nothing (done)"),
    ],
    ids=["agent", "submit", "answer", "tasks", "driver", "back-to-zero", "done"],
)
def test_the_first_unmet_condition_is_named(changes: dict[str, object], condition: str) -> None:
    """The condition named is the earliest the demo has not met."""
    assert waiting_for(dataclasses.replace(DONE, **changes)) == condition  # type: ignore[arg-type]


def test_progress_stalls_only_after_stall_seconds_without_a_change() -> None:
    """Any change restarts the count; the same state for stall_s is a stall."""
    progress = Progress(stall_s=60, now_s=0)
    progress.observe(("pods", 1), 0)
    progress.observe(("pods", 1), 59)
    assert not progress.stalled(59)
    progress.observe(("pods", 2), 59.5)  # a pod started: progress
    assert not progress.stalled(110)
    progress.observe(("pods", 2), 119.5)
    assert progress.stalled(119.5)


def test_a_slow_but_moving_demo_is_not_stalled_however_long() -> None:
    """Wall time alone never stalls it: a change every 30 s keeps it going for an hour."""
    progress = Progress(stall_s=60, now_s=0)
    for step in range(120):
        progress.observe(step, step * 30.0)
        assert not progress.stalled(step * 30.0 + 29)


def test_stall_must_be_positive() -> None:
    """A non-positive stall bound is refused."""
    with pytest.raises(ValueError, match="stall_s"):
        Progress(stall_s=0, now_s=0)


@pytest.mark.parametrize(
    ("result", "says"),
    [
        (DemoResult(workload_ok=True, finished=True), ""),
        (
            DemoResult(failed="no progress for 60 s while waiting for the driver to exit"),
            "no progress for 60 s while waiting for the driver to exit",
        ),
        (
            DemoResult(workload_ok=True, victim_when_deleted={"p1": True, "p2": False}),
            "pods deleted that were not drained victims: p2",
        ),
        (
            DemoResult(tasks_done={0: "p", 1: "p"}),
            "the driver did not report every task finished (2/20)",
        ),
        (
            DemoResult(
                workload_ok=True, waiting_for="the group back to 0 pods (1 pods, 0 replicas left)"
            ),
            "stopped while waiting for the group back to 0 pods (1 pods, 0 replicas left)",
        ),
    ],
    ids=["ok", "stalled", "wrong-victim", "tasks", "not-finished"],
)
def test_the_summary_names_the_failed_condition(result: DemoResult, says: str) -> None:
    """The verdict is empty on success, else names what failed."""
    assert verdict(result, tasks=20) == says


def test_the_timeline_png_is_drawn(tmp_path: Path) -> None:
    """Pending demand, target and pods by state become a PNG image of the expected size."""
    pytest.importorskip("matplotlib")
    from keda_ray_scaler.demo.timeline_png import draw

    samples = [
        Sample(0.0, 20, None, 0, (0, 0, 0, 0, 0)),
        Sample(1.0, 20, 10.0, 10, (10, 0, 0, 0, 0)),
        Sample(5.0, 0, 10.0, 10, (0, 10, 0, 0, 0)),
        Sample(20.0, 0, 0.0, 10, (0, 0, 6, 2, 2)),
        Sample(30.0, 0, None, 0, (0, 0, 0, 0, 0)),
    ]
    path = draw(samples, tmp_path / "timeline.png", "demo: OK")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1000, 600)
