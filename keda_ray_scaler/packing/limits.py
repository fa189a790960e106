"""How many new pods the packer may still open: maxReplicas, maxWorkers, upscalingSpeed; pure."""

from __future__ import annotations

from collections.abc import Sequence


class Limits:
    """New pods each group may still get (``group``), all groups together (``cluster``) and,
    while a rate limit applies, each group under it (``pace``; ``None``: no rate limit).

    One object injected into :class:`~keda_ray_scaler.packing.newpods.NewPods`: every pod
    opened is taken from it, so the packer never exceeds a bound it was given. Counts never go
    below zero: pods a rule adds beyond them (minReplicas) leave them at zero.
    """

    __slots__ = ("cluster", "group", "pace")

    def __init__(self, group: Sequence[int], cluster: int, pace: Sequence[int] | None = None):
        self.group = [max(0, n) for n in group]
        self.cluster = max(0, cluster)
        self.pace = None if pace is None else [max(0, n) for n in pace]

    def copy(self) -> Limits:
        """An independent copy."""
        return Limits(self.group, self.cluster, self.pace)

    def room(self, g: int) -> int:
        """New pods group ``g`` may still get."""
        room = min(self.group[g], self.cluster)
        return room if self.pace is None else min(room, self.pace[g])

    def take(self, g: int, n: int) -> None:
        """Count ``n`` new pods of group ``g`` against every bound."""
        self.group[g] = max(0, self.group[g] - n)
        self.cluster = max(0, self.cluster - n)
        if self.pace is not None:
            self.pace[g] = max(0, self.pace[g] - n)

    def paced(self, pace: Sequence[int] | None) -> Limits:
        """A copy under the rate limit ``pace`` (``None``: without one)."""
        return Limits(self.group, self.cluster, pace)
