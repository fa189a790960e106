"""The pod-deletion-cost race (kubernetes/kubernetes#126138), measured on a real control plane.

The ReplicaSet controller ranks pods for a scale-down from its informer cache. A pod whose
``controller.kubernetes.io/pod-deletion-cost`` was lowered just before the scale-down may not
carry the new cost in that cache yet, and another pod goes. :func:`deletion_cost_race` marks one
pod of a 5-pod Deployment, waits ``delay`` (or, like the agent, until the mark is seen through a
watch and then a settle time), scales the Deployment to 4, and records which pod was deleted.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from control_plane import ControlPlane, wait_until
from kubernetes import client, config, watch

NAMESPACE = "race"
NAME = "race"
COST = "controller.kubernetes.io/pod-deletion-cost"
REPLICAS = 5
SETTLE_S = 1.0


@dataclass(frozen=True)
class RaceResult:
    """Trials of one arm: ``label`` is the delay ("10 ms") or "confirm+settle"."""

    label: str
    trials: int
    wrong: int


def _deployment() -> dict[str, Any]:
    labels = {"app": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    # kwok's fake nodes only: the real node beside them would try to pull it
                    "nodeSelector": {"type": "kwok"},
                    "containers": [
                        {
                            "name": "pause",
                            "image": "registry.k8s.io/pause:3.10",  # never pulled: kwok runs it
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ],
                },
            },
        },
    }


def _live_pods(core: client.CoreV1Api) -> list[Any]:
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={NAME}").items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def _ready(core: client.CoreV1Api) -> bool:
    pods = _live_pods(core)
    return len(pods) == REPLICAS and all(
        any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))
        for p in pods
    )


def _annotate(core: client.CoreV1Api, pod: str, cost: str | None) -> None:
    core.patch_namespaced_pod(pod, NAMESPACE, {"metadata": {"annotations": {COST: cost}}})


def _seen_through_watch(core: client.CoreV1Api, pod: str, cost: str) -> None:
    """Return once a watch (as the agent's pod cache) delivers the pod with the new cost."""
    listed = core.list_namespaced_pod(NAMESPACE, field_selector=f"metadata.name={pod}")
    if any((p.metadata.annotations or {}).get(COST) == cost for p in listed.items):
        return
    for event in watch.Watch().stream(
        core.list_namespaced_pod,
        NAMESPACE,
        field_selector=f"metadata.name={pod}",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=10,
    ):
        if (event["object"].metadata.annotations or {}).get(COST) == cost:
            return


def _one_trial(
    core: client.CoreV1Api, apps: client.AppsV1Api, rng: random.Random, delay_s: float | None
) -> bool:
    """One mark-and-scale-down; True if the marked pod was the one deleted."""
    wait_until(lambda: _ready(core), timeout_s=60, what="5 Ready race pods")
    names = sorted(p.metadata.name for p in _live_pods(core))
    victim = rng.choice(names)
    _annotate(core, victim, "-1000")
    if delay_s is None:
        _seen_through_watch(core, victim, "-1000")
        time.sleep(SETTLE_S)
    elif delay_s > 0:
        time.sleep(delay_s)
    apps.patch_namespaced_deployment_scale(NAME, NAMESPACE, {"spec": {"replicas": REPLICAS - 1}})

    def deleted() -> list[str]:
        live = {p.metadata.name for p in _live_pods(core)}
        return [n for n in names if n not in live]

    gone = wait_until(deleted, timeout_s=30, what="the scale-down")
    if victim not in gone:
        _annotate(core, victim, None)
    apps.patch_namespaced_deployment_scale(NAME, NAMESPACE, {"spec": {"replicas": REPLICAS}})
    return bool(gone == [victim])


def deletion_cost_race(
    cp: ControlPlane, *, trials: int, delays_s: Sequence[float], seed: int = 126138
) -> list[RaceResult]:
    """``trials`` trials per delay in ``delays_s`` and with confirm+settle; one result per arm."""
    api = config.new_client_from_config(config_file=str(cp.admin_kubeconfig))
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    cp.kubectl("create", "namespace", NAMESPACE)
    cp.apply_docs([_deployment()])
    rng = random.Random(seed)
    arms: list[tuple[str, float | None]] = [(f"{d * 1000:g} ms", d) for d in delays_s]
    arms.append(("confirm+settle", None))
    results = []
    try:
        for label, delay in arms:
            right = sum(_one_trial(core, apps, rng, delay) for _ in range(trials))
            results.append(RaceResult(label, trials, trials - right))
    finally:
        cp.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
    return results
