"""The demo's side of the workload: start its driver process and read the events it prints.

The driver itself (``python -m keda_ray_scaler.demo.workload``) runs in its own session; each
``done`` line it prints is a task finished, noted in the :class:`DemoResult` and the timeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from keda_ray_scaler.demo.demo_agent import DemoAgent
from keda_ray_scaler.demo.demo_settings import DemoSettings
from keda_ray_scaler.demo.record import DemoResult, Timeline


@dataclass
class Driver:
    """The workload's driver process once submitted, and the task reading its events."""

    process: asyncio.subprocess.Process
    reader: asyncio.Task[None] | None

    async def finished(self) -> bool:
        """True once the driver exited and all its output was read."""
        if self.process.returncode is None:
            return False
        if self.reader is not None:
            await self.reader
            self.reader = None
        return True

    async def stop_reading(self) -> None:
        """Cancel the reader if it still runs."""
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader


async def submit(
    settings: DemoSettings, agent: DemoAgent, say: Timeline, result: DemoResult
) -> Driver:
    """Start the workload's driver; one agent poll later, so the agent sees the demand."""
    process = await _start_driver(settings, agent.gcs_address, agent.env)
    reader = asyncio.create_task(_read_driver(process, say, result))
    say(
        f"driver (pid {process.pid}) submits {settings.tasks} tasks of "
        f"{{CPU: {settings.task_cpus}}}"
        + (f", {settings.long_tasks} of them long" if settings.long_tasks else "")
    )
    await asyncio.sleep(settings.poll_interval_s)  # let the agent see the demand
    await agent.step()
    return Driver(process, reader)


async def _start_driver(
    settings: DemoSettings, gcs_address: str, env: Mapping[str, str]
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(settings.python),
        "-m",
        "keda_ray_scaler.demo.workload",
        f"--tasks={settings.tasks}",
        f"--cpus={settings.task_cpus}",
        f"--seconds={settings.task_seconds}",
        f"--long={settings.long_tasks}",
        f"--long-seconds={settings.long_seconds}",
        f"--worker-start-delay={settings.worker_start_delay_s}",
        env={**env, "RAY_ADDRESS": gcs_address},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        stdin=asyncio.subprocess.DEVNULL,
        cwd=settings.workdir,
        start_new_session=True,
    )


async def _read_driver(
    driver: asyncio.subprocess.Process, say: Timeline, result: DemoResult
) -> None:
    assert driver.stdout is not None
    async for raw in driver.stdout:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        kind = event.get("event")
        if kind == "done":
            result.tasks_done[int(event["task"])] = str(event["pod"])
            result.task_done_at_s[int(event["task"])] = say.now()
            say(f"task {event['task']} finished on {event['pod']}")
        elif kind == "finished":
            result.workload_ok = True
            say(f"driver: all {event['tasks']} tasks finished")
        elif kind == "failed":
            say(f"driver: a task failed: {event['error']}")
    code = await driver.wait()
    if code:
        print(f"driver exited with {code}", file=sys.stderr)
