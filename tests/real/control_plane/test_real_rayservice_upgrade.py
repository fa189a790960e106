"""A RayService's zero-downtime upgrade under load, autoscaled by its label (``real_serve``).

Every pod on the pod network (:func:`real_serve.pod_network_spec`): two clusters run side by side
during the upgrade, and on the node's network their heads' ports would collide. The load goes
through the RayService's serve Service (its ClusterIP, kube-proxy on the bed), as a user's
clients do, so KubeRay's switch from the old cluster to the new one is what they see. Steps: the
app at rest on one pod; under load three pods; then a changed ``rayClusterConfig`` (a label on
the cpu group's pods), which makes KubeRay build a new cluster beside the old one; the new
cluster gets the label, the sidecar and its objects, and once KubeRay sends it the traffic,
Serve scales it and our pods follow, while the old cluster, deleted by KubeRay, takes every
object we made for it along. The bed's Prometheus scrapes each head's agent at its pod IP
(:class:`HeadTargets`, for the ``kubernetes_sd_configs`` the bed does not run). Requests that
failed over the whole run, and pods deleted at random, must be 0. One ``e2e-rayservice-upgrade:``
line in the summary.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bed import NAMESPACE, Bed
from control_plane import wait_until
from kubernetes import client
from prometheus_server import ScrapeTarget
from ray_on_node import AGENT_PORT
from real_kuberay import operator_deletions
from real_loop import REAL_LOOP_MARKS
from real_optin import ours
from real_serve import (
    RS,
    SERVICE,
    UPGRADE_FIGURES,
    Load,
    app_running,
    rayservice,
    service_of,
    stage,
)

pytestmark = REAL_LOOP_MARKS

GROUP = "cpu"
OBJECTS = 7  # per cluster: the cpu and gpu groups' RayWorkerGroups and ScaledObjects; the agent's


class HeadTargets:
    """Keeps the bed's Prometheus scraping every head pod's agent at its pod IP."""

    def __init__(self, bed: Bed) -> None:
        self.bed = bed
        self.core = client.CoreV1Api(bed.api)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="head-targets", daemon=True)

    def __enter__(self) -> HeadTargets:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.bed.prometheus.set_targets([f"127.0.0.1:{AGENT_PORT}"])

    def _run(self) -> None:
        seen: tuple[ScrapeTarget, ...] = ()
        while not self._stop.wait(0.5):
            try:
                heads = self.core.list_namespaced_pod(
                    NAMESPACE, label_selector="ray.io/node-type=head"
                ).items
            except Exception:  # the API server busy: the next round
                continue
            targets = tuple(
                ScrapeTarget(f"{p.status.pod_ip}:{AGENT_PORT}", NAMESPACE, p.metadata.name)
                for p in heads
                if p.status.pod_ip and p.metadata.deletion_timestamp is None
            )
            if targets != seen:
                self.bed.prometheus.set_targets([f"127.0.0.1:{AGENT_PORT}", *targets])
                seen = targets


def _status(custom: client.CustomObjectsApi, which: str) -> str:
    status = service_of(custom).get("status") or {}
    return str((status.get(which) or {}).get("rayClusterName") or "")


def _serve_url(core: client.CoreV1Api) -> str:
    svc = core.read_namespaced_service(f"{SERVICE}-serve-svc", NAMESPACE)
    return f"http://{svc.spec.cluster_ip}:8000/"


def _upgrade(custom: client.CustomObjectsApi) -> None:
    """A changed cluster config: a label on the cpu group's pods (a new cluster, not in place)."""
    ops: list[dict[str, Any]] = [
        {
            "op": "add",
            "path": "/spec/rayClusterConfig/workerGroupSpecs/0/template/metadata",
            "value": {"labels": {"app-version": "2"}},
        }
    ]
    custom.patch_namespaced_custom_object(
        *RS[:2], NAMESPACE, RS[2], SERVICE, ops, _content_type="application/json-patch+json"
    )


def test_an_upgrade_under_load_scales_the_new_cluster_and_the_old_ones_objects_go(
    bed: Bed,
) -> None:
    cp, core = bed.cp, client.CoreV1Api(bed.api)
    share = Path(tempfile.mkdtemp(prefix="upgrade-", dir=bed.workdir)) / "share"
    share.mkdir(mode=0o1777)
    share.chmod(0o1777)
    with stage(bed, share.parent) as (custom, pods), HeadTargets(bed):
        created = time.time()
        cp.apply_docs([rayservice(SERVICE, share, bed.refs, pod_network=True)])
        wait_until(lambda: app_running(custom), timeout_s=600, what="the Serve app RUNNING")
        old = _status(custom, "activeServiceStatus")

        def cpu_pods(cluster: str) -> int:
            return len({p for p in pods.running_pods(GROUP) if p.startswith(f"{cluster}-")})

        wait_until(lambda: cpu_pods(old) == 1, timeout_s=300, what="1 pod at rest")
        load = Load(clients=12, url=_serve_url(core)).start()
        try:
            wait_until(lambda: cpu_pods(old) == 3, timeout_s=600, what="3 pods under load")
            upgraded = time.time()
            _upgrade(custom)
            new = wait_until(
                lambda: _status(custom, "pendingServiceStatus"),
                timeout_s=120,
                what="the new cluster",
            )
            wait_until(lambda: len(ours(cp, new)) == OBJECTS, timeout_s=180, what="its objects")
            wait_until(
                lambda: _status(custom, "activeServiceStatus") == new,
                timeout_s=600,
                what="the traffic switched to the new cluster",
            )
            switched = time.time()
            wait_until(
                lambda: cpu_pods(new) == 3,
                timeout_s=600,
                what="the new cluster at 3 pods under load",
                interval_s=0.5,
            )
            new_up = time.time()
            wait_until(
                lambda: not ours(cp, old), timeout_s=600, what="the old cluster's objects gone"
            )
            old_gone = time.time()
        finally:
            load.stop()
        named, randomly = (
            {pod for pod in found if pod.startswith((f"{old}-", f"{new}-"))}
            for found in operator_deletions(bed.operator.log)
        )
        custom.delete_namespaced_custom_object(*RS[:2], NAMESPACE, RS[2], SERVICE)
        wait_until(lambda: not ours(cp), timeout_s=240, what="every object of ours gone")
    assert not randomly, f"KubeRay deleted pods at random: {randomly}"
    assert load.failed == 0, (load.outcomes, load.failures)
    UPGRADE_FIGURES.update(
        {
            "to app running": f"{upgraded - created:.1f} s",
            "upgrade to switch": f"{switched - upgraded:.1f} s",
            "switch to 3 new pods": f"{new_up - switched:.1f} s",
            "old objects gone after switch": f"{old_gone - switched:.1f} s",
            "requests": str(load.sent),
            "failed": str(load.failed),
            "pods deleted by name": str(len(named)),
            "at random": str(len(randomly)),
        }
    )
