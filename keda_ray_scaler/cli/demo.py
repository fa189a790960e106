"""``keda-ray-scaler demo``: the local demo, no Kubernetes, no Prometheus (see demo/run.py)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from keda_ray_scaler.cli import add_command
from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.telemetry import configure_logging

if TYPE_CHECKING:
    from keda_ray_scaler.demo.record import DemoResult

#: What ``demo --help`` says the command does.
_DESCRIPTION = (
    "Start a Ray head on 127.0.0.1, the agent and the scaler in-process (gRPC on "
    "loopback), and a simulated Deployment that starts and stops worker raylets. "
    "Submit 20 tasks of {CPU: 5}: the target goes to 10 pods, then back to 0 after the "
    "idle timeout, removing only drained, idle pods. Prints a timeline."
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo`` and its flags."""
    p = add_command(subparsers, "demo", _DESCRIPTION)
    p.add_argument("--tasks", type=int, default=20, help="tasks to submit (default 20)")
    p.add_argument("--task-seconds", type=float, default=8.0, help="each task's duration")
    p.add_argument(
        "--long-tasks", type=int, default=0, help="tasks that run --long-seconds instead"
    )
    p.add_argument("--long-seconds", type=float, default=30.0)
    p.add_argument(
        "--worker-start-delay",
        type=float,
        default=0.0,
        help="seconds each Ray worker process sleeps as it starts, as a runtime_env that "
        "installs packages would (0)",
    )
    p.add_argument(
        "--demand-read",
        choices=["exact", "gcs"],
        default="exact",
        help="the agent's task demand: 'exact' (rule R1, the head raylet read after the "
        "cluster status) or 'gcs' (the GCS's sum, as before) (exact)",
    )
    p.add_argument(
        "--use-window",
        type=float,
        default=None,
        help="the agent's double-count window in seconds (default: the agent's)",
    )
    p.add_argument(
        "--idle-timeout", type=float, default=10.0, help="idleTimeoutSeconds of the group"
    )
    p.add_argument(
        "--stall",
        type=float,
        default=60.0,
        help="fail when nothing changed for this many seconds (default 60)",
    )
    p.add_argument(
        "--deadline", type=float, default=600.0, help="hard cap on the whole run, s (600)"
    )
    p.add_argument(
        "--png",
        type=Path,
        default=Path(tempfile.gettempdir()) / "keda-ray-scaler-demo.png",
        help="where to draw the timeline (default: keda-ray-scaler-demo.png in the temp dir)",
    )
    p.add_argument("--keep-logs", action="store_true", help="keep the Ray logs directory")
    p.add_argument("--log-level", default="warning", help="agent/scaler log level")


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit 0 when it went back to zero with every task done."""
    from keda_ray_scaler.agent.ray.ray_state import DemandRead
    from keda_ray_scaler.demo.demo_settings import DemoSettings
    from keda_ray_scaler.demo.run import run_demo

    for name in ("tasks", "task_seconds", "long_seconds", "idle_timeout", "stall", "deadline"):
        if getattr(args, name) <= 0:
            raise ConfigError("demo", "--" + name.replace("_", "-"), "must be positive")
    if args.worker_start_delay < 0:
        raise ConfigError("demo", "--worker-start-delay", "must be >= 0")
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
        worker_start_delay_s=args.worker_start_delay,
        demand_read=DemandRead(args.demand_read),
        **({} if args.use_window is None else {"use_window_s": args.use_window}),
        idle_timeout_s=args.idle_timeout,
        stall_s=args.stall,
        deadline_s=args.deadline,
    )
    try:
        result = asyncio.run(run_demo(settings, SystemClock(), sys.stdout))
    finally:
        if args.keep_logs:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    failure = verdict(result, settings.tasks)
    print(_draw(result, args.png, failure))
    wrong = [pod for pod, victim in result.victim_when_deleted.items() if not victim]
    print(
        f"summary: GetMetrics with all {settings.tasks} tasks pending: "
        f"{result.metric_at_full_demand}, peak {result.peak_replicas} pods, "
        f"{len(result.deletions)} deleted ({len(wrong)} not drained victims), "
        f"tasks done {len(result.tasks_done)}/{settings.tasks}, "
        + (f"FAILED: {failure}" if failure else "OK")
    )
    return 1 if failure else 0


def verdict(result: DemoResult, tasks: int) -> str:
    """Empty when the demo went back to zero with every task done; else the failed condition."""
    wrong = sorted(pod for pod, victim in result.victim_when_deleted.items() if not victim)
    if wrong:
        return f"pods deleted that were not drained victims: {', '.join(wrong)}"
    if result.failed:
        return result.failed
    if not result.workload_ok:
        return f"the driver did not report every task finished ({len(result.tasks_done)}/{tasks})"
    if not result.finished:
        return f"stopped while waiting for {result.waiting_for}"
    return ""


def _draw(result: DemoResult, path: Path, failure: str) -> str:
    """Draw the timeline PNG; the line that says where it is (or why there is none)."""
    from keda_ray_scaler.demo.timeline_png import PlotUnavailable, draw

    if not result.samples:
        return "timeline: no samples to draw"
    title = "keda-ray-scaler demo: " + (f"FAILED: {failure}" if failure else "OK")
    try:
        return f"timeline: {draw(result.samples, path, title)}"
    except PlotUnavailable as exc:
        return f"timeline: not drawn ({exc})"
    except OSError as exc:
        return f"timeline: not drawn ({path}: {exc.strerror})"
