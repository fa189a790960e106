"""``keda-ray-scaler demo``: the local demo, no Kubernetes, no Prometheus (see demo/run.py)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

from keda_ray_scaler.agent.ports import SystemClock
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.telemetry import configure_logging


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo`` and its flags."""
    p = subparsers.add_parser(
        "demo",
        help="run the local demo: real Ray, agent and scaler; simulated Kubernetes and KEDA",
        description=(
            "Start a Ray head on 127.0.0.1, the agent and the scaler in-process (gRPC on "
            "loopback), and a simulated Deployment that starts and stops worker raylets. "
            "Submit 20 tasks of {CPU: 5}: the target goes to 10 pods, then back to 0 after the "
            "idle timeout, removing only drained, idle pods. Prints a timeline."
        ),
    )
    p.add_argument("--tasks", type=int, default=20, help="tasks to submit (default 20)")
    p.add_argument("--task-seconds", type=float, default=8.0, help="each task's duration")
    p.add_argument(
        "--long-tasks", type=int, default=0, help="tasks that run --long-seconds instead"
    )
    p.add_argument("--long-seconds", type=float, default=30.0)
    p.add_argument(
        "--idle-timeout", type=float, default=10.0, help="idleTimeoutSeconds of the group"
    )
    p.add_argument("--deadline", type=float, default=115.0, help="stop after this many seconds")
    p.add_argument("--keep-logs", action="store_true", help="keep the Ray logs directory")
    p.add_argument("--log-level", default="warning", help="agent/scaler log level")


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit 0 when it went back to zero with every task done."""
    from keda_ray_scaler.demo.run import DemoSettings, run_demo

    for name in ("tasks", "task_seconds", "long_seconds", "idle_timeout", "deadline"):
        if getattr(args, name) <= 0:
            raise ConfigError("demo", "--" + name.replace("_", "-"), "must be positive")
    if not 0 <= args.long_tasks <= args.tasks:
        raise ConfigError("demo", "--long-tasks", f"must be between 0 and --tasks ({args.tasks})")
    configure_logging(json=False, level=args.log_level)
    # Short: Ray's socket paths must stay under the 107-byte limit of AF_UNIX.
    workdir = Path(tempfile.mkdtemp(prefix="krs-demo-"))
    # Nothing reads the real home directory: Ray's token auth (~/.ray/auth_token) stays off.
    os.environ["HOME"] = str(workdir / "home")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ.pop("RAY_ADDRESS", None)
    settings = DemoSettings(
        workdir=workdir,
        ray_bin=Path(sys.executable).with_name("ray"),
        python=Path(sys.executable),
        base_env=dict(os.environ),
        tasks=args.tasks,
        task_seconds=args.task_seconds,
        long_tasks=args.long_tasks,
        long_seconds=args.long_seconds,
        idle_timeout_s=args.idle_timeout,
        deadline_s=args.deadline,
    )
    try:
        result = asyncio.run(run_demo(settings, SystemClock(), sys.stdout))
    finally:
        if args.keep_logs:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    ok = result.finished and result.workload_ok
    wrong = [pod for pod, victim in result.victim_when_deleted.items() if not victim]
    print(
        f"summary: GetMetrics with all {settings.tasks} tasks pending: "
        f"{result.metric_at_full_demand}, peak {result.peak_replicas} pods, "
        f"{len(result.deletions)} deleted ({len(wrong)} not drained victims), "
        f"tasks done {len(result.tasks_done)}/{settings.tasks}, "
        f"{'OK' if ok and not wrong else 'FAILED'}"
    )
    return 0 if ok and not wrong else 1
