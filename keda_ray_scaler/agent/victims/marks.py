"""The victim protocol's marks on pods: ``pod-deletion-cost`` and the agent's marker; pure.

A cost the agent did not write (no marker, or a marker that differs from the cost) is never
written over: another controller or a person owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from keda_ray_scaler.agent.pod import DELETION_COST, PodInfo
from keda_ray_scaler.model import INT32_MAX, INT32_MIN


@dataclass(frozen=True, slots=True)
class VictimSettings:
    """Tuning of the protocol.

    - ``settle_s``: wait after the marks are seen, so the ReplicaSet controller's informer has
      them too (#126138 lost a race of 0.6 s); default 5 s.
    - ``confirm_timeout_s``: how long to wait for the watch to show the marks (real time).
    - ``drain_deadline_s``: drain deadline after ``now``; 0 sends deadline 0 (Ray: none).
    - ``victim_cost`` / ``busy_cost``: int32 extremes, the range the controller parses.
    - ``owner_annotation``: the marker; its value is the cost the agent wrote.
    """

    settle_s: float = 5.0
    confirm_timeout_s: float = 10.0
    drain_deadline_s: float = 0.0
    victim_cost: int = INT32_MIN
    busy_cost: int = INT32_MAX
    owner_annotation: str = "ray-scaler.keda.sh/deletion-cost"


def owns_cost(pod: PodInfo, settings: VictimSettings) -> bool:
    """The agent may write the cost: none is set, or the marker says the agent wrote it."""
    cost = pod.annotations.get(DELETION_COST)
    return cost is None or pod.annotations.get(settings.owner_annotation) == cost


def has_mark(pod: PodInfo, value: int, settings: VictimSettings) -> bool:
    """The pod carries the agent's own mark with this cost."""
    text = str(value)
    annotations = pod.annotations
    return annotations.get(DELETION_COST) == text and (
        annotations.get(settings.owner_annotation) == text
    )


def set_cost(value: int, settings: VictimSettings) -> Callable[[PodInfo], Mapping[str, str | None]]:
    """A decision for :meth:`PodCache.update`: write ``value`` with the marker, if owned."""

    def decide(pod: PodInfo) -> Mapping[str, str | None]:
        if not owns_cost(pod, settings):
            return {}
        return {DELETION_COST: str(value), settings.owner_annotation: str(value)}

    return decide


def clear_cost(settings: VictimSettings) -> Callable[[PodInfo], Mapping[str, str | None]]:
    """A decision for :meth:`PodCache.update`: remove the agent's cost and marker, if owned."""

    def decide(pod: PodInfo) -> Mapping[str, str | None]:
        if settings.owner_annotation not in pod.annotations or not owns_cost(pod, settings):
            return {}
        return {DELETION_COST: None, settings.owner_annotation: None}

    return decide
