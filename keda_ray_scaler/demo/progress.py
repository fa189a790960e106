"""What the demo is waiting for, whether it still makes progress, and what it recorded.

Pure values and functions (no clock read here: times are arguments). The demo stops when
nothing it watches has changed for ``stall_s`` (a slow machine is not a failure while pods keep
starting and tasks keep finishing), and its summary names the condition it was waiting for.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Pod states the timeline draws, bottom to top.
POD_STATES = ("starting", "busy", "idle", "draining", "victim")


@dataclass(frozen=True, slots=True)
class Sample:
    """The demo at one poll: demand, the scaler's answer, the Deployment and its pods."""

    at_s: float  # seconds since the demo started
    pending: int  # task bundles Ray reports pending
    target: float | None  # GetMetrics' answer (None: no answer or inactive)
    replicas: int  # the Deployment's replicas (what KEDA/the HPA set)
    pods: tuple[int, ...]  # pods by state, in POD_STATES order


@dataclass(frozen=True, slots=True)
class DemoState:
    """What the next condition depends on."""

    agent_ready: bool
    submitted: bool
    answered: bool  # the scaler gave a target for the submitted tasks
    tasks: int
    tasks_done: int
    driver_running: bool
    replicas: int
    pods_left: int


def waiting_for(s: DemoState) -> str:
    """The first condition of the demo not met yet, in the order the demo meets them."""
    if not s.agent_ready:
        return "the agent's first successful poll of Ray"
    if not s.submitted:
        return "the driver to submit the tasks"
    if not s.answered:
        return "the scaler's first target for the pending tasks"
    if s.tasks_done < s.tasks:
        return f"every task to finish ({s.tasks_done}/{s.tasks} done)"
    if s.driver_running:
        return "the driver to exit"
    if s.replicas or s.pods_left:
        return f"the group back to 0 pods ({s.pods_left} pods, {s.replicas} replicas left)"
    return "nothing (done)"


class Progress:
    """When anything watched last changed; stalled after ``stall_s`` without a change."""

    def __init__(self, stall_s: float, now_s: float) -> None:
        if stall_s <= 0:
            raise ValueError(f"stall_s must be > 0, got {stall_s:g}")
        self.stall_s = stall_s
        self._key: object = None
        self._changed_s = now_s

    def observe(self, key: object, now_s: float) -> None:
        """Record the watched state (any comparable value) seen at ``now_s``."""
        if key != self._key:
            self._key = key
            self._changed_s = now_s

    def stalled(self, now_s: float) -> bool:
        """Nothing changed for ``stall_s``."""
        return now_s - self._changed_s >= self.stall_s
