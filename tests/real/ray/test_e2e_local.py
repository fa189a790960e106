"""End to end on this machine: real Ray, the agent, the scaler over real gRPC; no Kubernetes.

The demo's composition (``keda_ray_scaler.demo.run``) with two long tasks, so that idle pods go
while busy ones must stay. Kubernetes (pods, the ReplicaSet's deletion ranking) and KEDA/HPA are
simulated in-process; every process is started on 127.0.0.1 and stopped by its PID.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.demo.demo_settings import DemoSettings
from keda_ray_scaler.demo.record import DemoResult
from keda_ray_scaler.demo.run import run_demo

pytestmark = [pytest.mark.ray, pytest.mark.timeout(420)]

LONG = 2


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoResult]:
    """One demo run shared by the assertions below (about a minute on an idle machine)."""
    # Short: Ray's AF_UNIX socket paths must stay under 107 bytes.
    workdir = Path(tempfile.mkdtemp(prefix="krs-e2e-"))
    env = dict(os.environ, HOME=str(workdir / "home"), RAY_AUTH_MODE="disabled")
    env.pop("RAY_ADDRESS", None)
    settings = DemoSettings(
        workdir=workdir,
        ray_bin=Path(sys.executable).with_name("ray"),
        python=Path(sys.executable),
        base_env=env,
        task_seconds=6.0,
        long_tasks=LONG,
        long_seconds=40.0,
        idle_timeout_s=8.0,
        deadline_s=360.0,
    )
    # The in-process agent talks to the GCS with this process's environment.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_MODE", "disabled")
        mp.delenv("RAY_ADDRESS", raising=False)
        yield asyncio.run(run_demo(settings, SystemClock(), sys.stdout))
    shutil.rmtree(workdir, ignore_errors=True)


def test_twenty_pending_five_cpu_tasks_ask_for_ten_pods(demo: DemoResult) -> None:
    """GetMetrics answers 10 while Ray reports 20 pending {CPU: 5} tasks and 10-CPU pods."""
    assert demo.metric_at_full_demand == 10.0


def test_every_task_finishes_so_no_busy_pod_was_removed(demo: DemoResult) -> None:
    """Tasks are never retried: all 20 finishing means no pod went away under a task."""
    assert demo.workload_ok
    assert sorted(demo.tasks_done) == list(range(20))


def test_only_drained_victims_are_deleted(demo: DemoResult) -> None:
    """Every pod the ReplicaSet deleted was a published victim and had no resource in use."""
    assert demo.deletions
    assert demo.victim_when_deleted == {d.pod: True for d in demo.deletions}
    assert demo.busy_when_deleted == {d.pod: False for d in demo.deletions}
    assert {d.cost for d in demo.deletions} == {-(2**31)}


def test_idle_pods_go_while_the_long_tasks_still_run(demo: DemoResult) -> None:
    """The target comes down before the long tasks end, and their pods go only after them."""
    long_tasks = range(20 - LONG, 20)
    last_long_end = max(demo.task_done_at_s[t] for t in long_tasks)
    first_deletion = min(d.at_s for d in demo.deletions)
    assert first_deletion < last_long_end
    deleted_at = {d.pod: d.at_s for d in demo.deletions}
    for task in long_tasks:
        pod = demo.tasks_done[task]
        assert deleted_at[pod] > demo.task_done_at_s[task], pod


def test_the_group_goes_back_to_zero_and_every_pod_is_accounted_for(demo: DemoResult) -> None:
    """After the idle timeout the group is at 0; each created pod was deleted exactly once."""
    assert demo.finished
    assert demo.final_replicas == 0
    assert demo.peak_replicas >= 10
    assert sorted(d.pod for d in demo.deletions) == sorted(demo.created)


def test_the_group_never_exceeds_the_ten_pods_the_demand_needs(demo: DemoResult) -> None:
    """No transient 11th pod while tasks move onto joining pods (agent/ray/demand_filter.py): the
    Deployment's replicas and the scaler's every answer stay at or below 10."""
    assert demo.peak_replicas == 10
    answers = [s.target for s in demo.samples if s.target is not None]
    assert answers and max(answers) == 10
