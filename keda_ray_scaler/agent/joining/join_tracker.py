"""Which worker pods will not be Ray nodes, and which groups are backed off: the agent's memory
between polls around the pure rules of :mod:`~keda_ray_scaler.agent.joining.joins`.

Each poll hands :meth:`JoinTracker.observe` the pods (from the pod cache), the pods that are
Ray nodes, the pods whose Ray node is DEAD and the published victims; it answers the failing
pods with their reasons (``NodeStatus.FAILING`` in the export) and the groups' launch limits
(``PlanningInput.launch_limits``), and keeps the series: failures by reason (counter), back-off
seconds left and launch limit per group (gauges).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge

from keda_ray_scaler import schema
from keda_ray_scaler.agent.interfaces import SpecView, spec_view
from keda_ray_scaler.agent.joining.joins import (
    DEFAULT_JOIN_TIMEOUT_S,
    Backoff,
    BackoffSettings,
    PodEntry,
    after_failures,
    failed_launches,
    join_failure,
    launch_limit,
    newly_failing,
    remaining_s,
)
from keda_ray_scaler.agent.metric_names import BACKOFF_SECONDS, JOIN_FAILURES
from keda_ray_scaler.model import ClusterSpec, JoinFailure

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class JoinSettings:
    """``join_timeout_s``: the default; ``group_timeouts_s``: per group (config file)."""

    join_timeout_s: float = DEFAULT_JOIN_TIMEOUT_S
    group_timeouts_s: Mapping[str, float] = field(default_factory=dict)
    backoff: BackoffSettings = field(default_factory=BackoffSettings)

    def timeout_s(self, group: str) -> float:
        """The join timeout of ``group``."""
        return self.group_timeouts_s.get(group, self.join_timeout_s)


@dataclass(frozen=True, slots=True)
class JoinView:
    """One poll's answer: failing pods (pod -> reason) and launch limits (group, limit)."""

    failing: Mapping[str, JoinFailure]
    launch_limits: tuple[tuple[str, int], ...]


class JoinTracker:
    """Join states and back-offs of one Ray cluster's worker groups."""

    def __init__(
        self, cluster: ClusterSpec | SpecView, registry: CollectorRegistry, settings: JoinSettings
    ) -> None:
        self._specs = spec_view(cluster)
        self._name = self._specs.spec.name
        self._settings = settings
        self._backoff: dict[str, Backoff] = {}  # per group of the spec as last followed
        self._failing: dict[str, JoinFailure] = {}
        self._coming: set[tuple[str, str]] = set()  # (pod, group) coming at the last poll
        self._view = JoinView({}, ())
        self._now_s = 0.0
        self._last_reason: dict[str, JoinFailure] = {}  # group -> its latest failure
        self._log = log.bind(cluster=self._name)
        labels = [schema.LABEL_CLUSTER, schema.LABEL_GROUP]
        self._failures = Counter(
            JOIN_FAILURES.removesuffix("_total"),
            "Worker pods found failing to become (or stay) Ray nodes, by reason.",
            [*labels, schema.LABEL_REASON],
            registry=registry,
        )
        self._seconds = Gauge(
            BACKOFF_SECONDS,
            "Seconds left of the group's launch back-off after pods that did not join (0: none).",
            labels,
            registry=registry,
        )
        self._follow({g.name for g in self._specs.spec.worker_groups})

    def _follow(self, groups: set[str]) -> None:
        """Keep a back-off and the series of exactly ``groups`` (the spec may have changed)."""
        for name in sorted(groups - self._backoff.keys()):
            self._backoff[name] = Backoff()
            self._seconds.labels(self._name, name).set(0)
            for why in JoinFailure:
                self._failures.labels(self._name, name, why.value)
        for name in sorted(self._backoff.keys() - groups):
            del self._backoff[name]
            self._seconds.remove(self._name, name)

    @property
    def view(self) -> JoinView:
        """The last poll's answer."""
        return self._view

    def launch_limit(self, group: str) -> int | None:
        """The new pods ``group`` may get now, as of the last poll (None: no limit)."""
        return dict(self._view.launch_limits).get(group)

    def backoff_message(self, group: str) -> str:
        """Why the group gets few or no new pods (for a RayWorkerGroup condition); "" if not."""
        b = self._backoff.get(group)
        if b is None or not b.active():
            return ""
        limit = dict(self._view.launch_limits).get(group)
        left = remaining_s(b, self._now_s)
        why = self._last_reason.get(group, JoinFailure.NOT_JOINED).value
        now = f"no new pods for {left:.0f} s" if left > 0 else f"new pods now: {limit}"
        return (
            f"{b.failures} failed launch(es), pods that did not join Ray (last: {why}); {now}, "
            "then one at a time until a pod joins"
        )

    def observe(
        self,
        now_s: float,
        pods: Sequence[PodEntry] | None,
        in_ray: set[str],
        dead: set[str],
        victims: Mapping[str, str],
    ) -> JoinView:
        """One poll; ``pods`` None (cache not synced) keeps the last answer."""
        if pods is None:
            return self._view
        self._now_s = now_s
        groups = {g.name for g in self._specs.spec.worker_groups}
        self._follow(groups)
        by_name = {p.name: p for p in pods}
        failing, coming = self._classify(pods, groups, now_s, in_ray, dead, victims)
        self._record_failures(failing, by_name)
        self._record_joins(in_ray)
        self._back_off(groups, newly_failing(self._failing, failing), by_name, now_s)
        self._failing, self._coming = failing, coming
        limits: list[tuple[str, int]] = []
        for name in sorted(groups):
            b = self._backoff[name]
            self._seconds.labels(self._name, name).set(remaining_s(b, now_s))
            limit = launch_limit(
                b,
                now_s=now_s,
                coming=sum(1 for _, g in coming if g == name),
                failing=sum(1 for pod in failing if _group(by_name, pod) == name),
            )
            if limit is not None:
                limits.append((name, limit))
        self._view = JoinView(dict(sorted(failing.items())), tuple(limits))
        return self._view

    def _classify(
        self,
        pods: Sequence[PodEntry],
        groups: set[str],
        now_s: float,
        in_ray: set[str],
        dead: set[str],
        victims: Mapping[str, str],
    ) -> tuple[dict[str, JoinFailure], set[tuple[str, str]]]:
        """The live pods of ``groups`` not in Ray and no victim: failing (pod -> why) or
        coming ((pod, group))."""
        failing: dict[str, JoinFailure] = {}
        coming: set[tuple[str, str]] = set()
        for p in pods:
            if not p.active or p.group not in groups or p.name in in_ray or p.name in victims:
                continue
            why = join_failure(
                p.facts,
                ray_dead=p.name in dead,
                now_s=now_s,
                timeout_s=self._settings.timeout_s(p.group),
            )
            # Sticky: a crash-looping container is Running or Terminated between its waits, and
            # a pod that failed once is failing until it joins Ray or goes (seen on the real
            # node: without this each wait counted as a new failure and doubled the back-off).
            why = why or self._failing.get(p.name)
            if why is None:
                coming.add((p.name, p.group))
            else:
                failing[p.name] = why
        return failing, coming

    def _back_off(
        self,
        groups: set[str],
        fresh: Mapping[str, JoinFailure],
        by_name: Mapping[str, PodEntry],
        now_s: float,
    ) -> None:
        """Each group's back-off after this poll's newly failing pods (one per failed launch)."""
        for name in groups:
            made = [by_name[pod].facts.created_s for pod in fresh if _group(by_name, pod) == name]
            before = self._backoff[name]
            count = failed_launches(before, made)
            self._backoff[name] = after_failures(before, count, now_s, self._settings.backoff)
            if count:
                self._log.warning(
                    "worker group backed off",
                    worker_group=name,
                    failed_launches=self._backoff[name].failures,
                    wait_s=round(remaining_s(self._backoff[name], now_s), 1),
                )

    def _record_failures(
        self, failing: Mapping[str, JoinFailure], by_name: Mapping[str, PodEntry]
    ) -> None:
        for pod, why in sorted(failing.items()):
            if self._failing.get(pod) is why:
                continue
            group = _group(by_name, pod)
            self._failures.labels(self._name, group, why.value).inc()
            if why is not JoinFailure.RAY_NODE_DEAD:
                self._last_reason[group] = why
            self._log.warning("worker pod failing", worker_group=group, pod=pod, reason=why.value)

    def _record_joins(self, in_ray: set[str]) -> None:
        for pod, group in sorted(self._coming):
            b = self._backoff.get(group)
            if pod in in_ray and b is not None and b.active():
                self._backoff[group] = Backoff()
                self._log.info("worker group back-off ended", worker_group=group, joined=pod)


def _group(by_name: Mapping[str, PodEntry], pod: str) -> str:
    """``pod``'s group ("" for a pod not in this poll)."""
    entry = by_name.get(pod)
    return entry.group if entry is not None else ""
