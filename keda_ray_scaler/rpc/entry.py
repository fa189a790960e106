"""One cluster's last answer, and the steps every reader takes before it trusts that answer.

Why one type for both caches: :class:`~keda_ray_scaler.rpc.targets.TargetCache` (refresh on
this event loop) and :class:`~keda_ray_scaler.rpc.refresh.refresher.ProcessTargetCache` (a mirror
fed
by the refresher child) hold the same outcome per cluster and must refuse it for the same
reasons: the last refresh failed, nothing arrived yet, the agent's poll failed, the snapshot is
too old or from the future. Written twice, the two would drift; here they are one
:class:`TargetEntry` with one :meth:`TargetEntry.notify` and one :meth:`TargetEntry.targets_now`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field

from keda_ray_scaler.errors import DemandUnavailable, NotFound, Refusal, ScalerError, UntrustedData
from keda_ray_scaler.identity import ClusterRef


@dataclass(frozen=True, slots=True)
class GroupTarget:
    """What the scaler reports for one worker group, and why."""

    cluster: str
    group: str
    target: int  # replicas reported to KEDA
    planned: int  # the planner's target before the safety rules
    floor: int  # pods that are not confirmed victims
    current: int  # pods now, victims included
    snapshot_time_s: float  # the agent's snapshot time the target is based on
    held: bool = False  # scale-down held: no fresh snapshot since this process started
    #: the label selectors of the demand planned onto the group's pods (``rpc.safety``'s text;
    #: ``keda-ray-scaler status`` prints it); empty: none
    selectors: str = ""

    @property
    def active(self) -> bool:
        """False only when the target is 0 and no pod that is not a victim remains."""
        return self.target > 0 or self.floor > 0


@dataclass(slots=True, kw_only=True)
class TargetEntry:
    """One cluster's last refresh outcome; mutated only on the event loop.

    ``version`` counts finished refreshes; ``changed`` is set (and replaced) by
    :meth:`notify`, so a waiter sees every outcome after the version it checked.
    """

    last_used_s: float
    version: int = 0
    targets: Mapping[str, GroupTarget] | None = None
    snapshot_time_s: float = 0.0  # the agent's snapshot time of ``targets``
    success: bool = False  # the agent's last poll of Ray succeeded
    error: ScalerError | None = None  # the last refresh failed: wins over ``targets``
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        """A refresh finished: count it and wake every waiter."""
        self.version += 1
        done, self.changed = self.changed, asyncio.Event()
        done.set()

    def targets_now(
        self, cluster: ClusterRef, *, now: float, max_age_s: float, max_skew_s: float
    ) -> Mapping[str, GroupTarget]:
        """The targets, if they may be answered from now; else the error that says why not."""
        if self.error is not None:
            raise self.error
        if self.targets is None:  # pragma: no cover - a finished refresh sets one of the two
            raise DemandUnavailable(f"no data yet for Ray cluster {cluster}")
        check_fresh(
            cluster,
            success=self.success,
            snapshot_time_s=self.snapshot_time_s,
            now=now,
            max_age_s=max_age_s,
            max_skew_s=max_skew_s,
        )
        return self.targets


async def wait_first(first: Awaitable[object], cluster: ClusterRef, timeout_s: float) -> None:
    """Wait for a new cluster's first outcome; DemandUnavailable after ``timeout_s`` (KEDA
    gives a call about 3 s: the refresh goes on and the next request gets its result)."""
    try:
        await asyncio.wait_for(first, timeout_s)
    except TimeoutError:
        raise DemandUnavailable(f"no data yet for Ray cluster {cluster}") from None


def pick(targets: Mapping[str, GroupTarget], cluster: ClusterRef, group: str) -> GroupTarget:
    """``group``'s target; NotFound when the cluster has no such worker group."""
    target = targets.get(group)
    if target is None:
        raise NotFound(f"worker group {group!r} not found in Ray cluster {cluster}")
    return target


def check_not_future(
    cluster: ClusterRef, *, snapshot_time_s: float, now: float, max_skew_s: float
) -> None:
    """Raise UntrustedData (``future_snapshot``) for a snapshot time beyond ``now`` + skew."""
    lead = snapshot_time_s - now
    if lead > max_skew_s:
        raise UntrustedData(
            Refusal.FUTURE_SNAPSHOT,
            f"Ray cluster {cluster}: agent snapshot time is {lead:.0f}s in the future "
            f"(max clock skew {max_skew_s:g}s): refused",
        )


def check_fresh(
    cluster: ClusterRef,
    *,
    success: bool,
    snapshot_time_s: float,
    now: float,
    max_age_s: float,
    max_skew_s: float,
) -> None:
    """Raise DemandUnavailable when the snapshot is from the future (beyond ``max_skew_s``),
    the agent's last poll failed, or the snapshot is older than ``max_age_s``."""
    check_not_future(cluster, snapshot_time_s=snapshot_time_s, now=now, max_skew_s=max_skew_s)
    if not success:
        raise DemandUnavailable(f"Ray cluster {cluster}: the agent's last poll of Ray failed")
    age = now - snapshot_time_s
    if age > max_age_s:
        raise DemandUnavailable(
            f"Ray cluster {cluster}: agent snapshot is {age:.0f}s old (max {max_age_s:.0f}s)"
        )
