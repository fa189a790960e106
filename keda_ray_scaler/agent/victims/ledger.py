"""The victim protocol's published victims and frozen groups, and its last step: verify.

Step 6 of :mod:`~keda_ray_scaler.agent.victims.controller`: a pod of a group with published victims
that
goes without being one is a wrong victim and freezes the group's scale-down, unless it was no
live Ray node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge

from keda_ray_scaler import schema
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.victims.verdicts import Outcome, Verdict

log = structlog.get_logger(__name__)


class VictimLedger:
    """Published victims (pod -> worker group and the Ray node drained, "" for none), the
    groups whose scale-down is frozen, and the pods seen at the last step."""

    def __init__(self, name: str, groups: Iterable[str], registry: CollectorRegistry) -> None:
        self._name = name
        self._victims: dict[str, tuple[str, str]] = {}  # pod -> (group, drained node id)
        self._frozen: set[str] = set()
        self._seen: dict[str, set[str]] = {}  # group -> active pods at the last step
        self._live: frozenset[str] = frozenset()  # pods that are live Ray nodes, last read
        self._log = log.bind(cluster=name)
        self._wrong = Counter(
            schema.WRONG_VICTIMS,
            "Pods deleted by a scale-down that were not drained victims.",
            [schema.LABEL_CLUSTER, schema.LABEL_GROUP],
            registry=registry,
        )
        self._frozen_gauge = Gauge(
            schema.SCALE_DOWN_FROZEN,
            "1 while the group's scale-down is frozen after a wrong victim.",
            [schema.LABEL_CLUSTER, schema.LABEL_GROUP],
            registry=registry,
        )
        for group in groups:
            self._wrong.labels(self._name, group)
            self._frozen_gauge.labels(self._name, group).set(0)

    # --- the published victims ---------------------------------------------------------------
    def victims(self) -> Mapping[str, str]:
        """Published victims: pod -> worker group (drained and confirmed)."""
        return {pod: group for pod, (group, _) in sorted(self._victims.items())}

    def pods(self) -> frozenset[str]:
        """Every published victim's pod."""
        return frozenset(self._victims)

    def published(self, group: str) -> list[str]:
        """The group's published victims, sorted."""
        return sorted(p for p, (g, _) in self._victims.items() if g == group)

    def node_of(self, pod: str) -> str | None:
        """The Ray node drained for the published victim ``pod`` ("" for none); None when the
        pod is no published victim."""
        entry = self._victims.get(pod)
        return entry[1] if entry is not None else None

    def publish(self, pod: str, group: str, node_id: str) -> None:
        """``pod`` of ``group`` is a victim now (``node_id`` drained, "" for none)."""
        self._victims[pod] = (group, node_id)

    def unpublish(self, pod: str) -> None:
        """``pod`` is no victim any more."""
        del self._victims[pod]

    # --- frozen groups -----------------------------------------------------------------------
    def frozen(self) -> frozenset[str]:
        """Groups whose scale-down is frozen."""
        return frozenset(self._frozen)

    def unfreeze(self, group: str) -> None:
        """The operator's action after looking at a wrong victim."""
        self._frozen.discard(group)
        self._frozen_gauge.labels(self._name, group).set(0)
        self._log.warning("scale-down unfrozen", worker_group=group)

    # --- verify ------------------------------------------------------------------------------
    def saw_in_ray(self, pods: frozenset[str]) -> None:
        """These pods are live Ray nodes now (the loop's poll): they hold Ray state."""
        self._live = pods

    def verify(self, pods: Iterable[PodInfo]) -> list[Verdict]:
        """The pods gone since the last step: a victim taken, or a wrong victim (frozen)."""
        verdicts: list[Verdict] = []
        current: dict[str, set[str]] = {}
        for pod in pods:
            if pod.active and pod.group:
                current.setdefault(pod.group, set()).add(pod.name)
        for group, before in self._seen.items():
            expecting = any(g == group for g, _ in self._victims.values())
            for name in sorted(before - current.get(group, set())):
                if name in self._victims:
                    del self._victims[name]
                    verdicts.append(Verdict(group, name, Outcome.DELETED, "victim pod is gone"))
                elif expecting and name not in self._live:
                    reason = "no live Ray node at the last read: nothing lost"
                    verdicts.append(Verdict(group, name, Outcome.POD_GONE, reason))
                elif expecting:
                    verdicts.append(self._wrong_victim(group, name))
        self._seen = current
        return verdicts

    def _wrong_victim(self, group: str, pod: str) -> Verdict:
        self._wrong.labels(self._name, group).inc()
        self._frozen.add(group)
        self._frozen_gauge.labels(self._name, group).set(1)
        victims = self.published(group)
        reason = f"pod deleted while victims {victims} were expected; scale-down frozen"
        self._log.error("wrong victim", worker_group=group, pod=pod, victims=victims)
        return Verdict(group, pod, Outcome.WRONG_VICTIM, reason)
