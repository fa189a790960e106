"""A pod store the test fills by hand: the pods a KubeRay applier reads, without a pod cache."""

from __future__ import annotations

from keda_ray_scaler.agent.kube.pod_store import PodStore
from keda_ray_scaler.agent.pod import PodInfo


class Pods(PodStore):
    """A pod store filled by the test."""

    def set(self, group: str, names: list[str]) -> None:
        """The active pods of ``group`` (those not named are gone)."""
        for gone in [n for n, p in self._pods.items() if p.group == group and n not in names]:
            del self._pods[gone]
        for name in names:
            self._pods[name] = PodInfo(name, group=group, owner="RayCluster/demo")
