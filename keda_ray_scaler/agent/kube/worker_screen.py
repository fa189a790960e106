"""The pod cache's owner screen: the rule of :mod:`~keda_ray_scaler.agent.kube.pod_owner` applied
to each pod the selector matches, each refused pod counted and logged once by its uid."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import structlog
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler.agent.kube.pod_owner import PodController, WorkerOwner, refusal
from keda_ray_scaler.agent.metric_names import KUBE_PODS_REFUSED
from keda_ray_scaler.agent.pod import PodInfo

log = structlog.get_logger(__name__)


class WorkerScreen:
    """The owner rule of one cluster's pod cache, and the pods it refused: each counted and
    logged once by its uid, remembered while it exists (bounded by the pods there are)."""

    def __init__(self, owner: WorkerOwner, registry: CollectorRegistry, *, cluster: str) -> None:
        self.owner = owner
        self._cluster = cluster
        self._noted: set[str] = set()  # uids of the pods refused and still present
        self._log = log.bind(cluster=cluster)
        self._refused = Counter(
            KUBE_PODS_REFUSED.removesuffix("_total"),
            "Pods matching the worker selector left out: not controlled by the cluster's "
            "workload. Each pod once, by reason.",
            ["cluster", "reason"],
            registry=registry,
        )

    def admits(self, pod: PodInfo, controller: PodController | None) -> bool:
        """True when ``pod`` is the cluster's worker; a pod refused the first time is counted
        and logged."""
        why = refusal(controller, self.owner)
        if why is None:
            self._noted.discard(pod.uid)  # refused before the owner's uid was known
            return True
        if pod.uid not in self._noted:
            self._noted.add(pod.uid)
            self._refused.labels(self._cluster, why.value).inc()
            self._log.warning(
                "pod refused as a worker",
                pod=pod.name,
                uid=pod.uid,
                reason=why.value,
                controller=str(controller) if controller else "none",
                expected=str(self.owner),
            )
        return False

    def expect_uid(self, uid: str) -> bool:
        """Ask the owner's ``uid`` from now on; True when that changes the rule."""
        if not self.owner.name or uid == self.owner.uid:
            return False
        self.owner = replace(self.owner, uid=uid)
        return True

    def keep_only(self, uids: Iterable[str]) -> None:
        """Forget the refused pods not among ``uids`` (they are gone)."""
        self._noted &= set(uids)
