"""A RayService autoscaled with one label, on the real node with real KubeRay (``real_serve``).

The RayService carries ``keda-ray-scaler.io/autoscaling: enabled`` and nothing else of ours;
KubeRay makes its cluster, the chart's webhook and controller do the rest (``real_optin``).
Serve's own replica autoscaling drives the pods: one replica (one pod) at rest; under load
(:class:`real_serve.Load`) Serve wants :data:`real_serve.MAX_REPLICAS` replicas of ``{CPU: 5}``,
three 10-CPU pods; the load gone, back to one replica and one pod. While scaled up and under
load, a worker group is appended to the RayService's ``rayClusterConfig``: KubeRay rewrites the
live cluster's whole spec in place (``modifyRayCluster``), which resets every group's
``replicas`` and ``workersToDelete`` to the RayService's; the webhook puts the agent's back, so
no pod goes, and nothing loops. Requests that failed, pods deleted while a replica ran on them,
and objects left after the RayService is deleted must all be 0. The suite's summary ends with
one ``e2e-rayservice:`` line.

Alone, inside the bed (as the Makefile's ``BED``)::

    KRS_E2E_BIN="$(bash e2e/build.sh)" KRS_E2E_IMAGES="$(.venv/bin/python e2e/images.py)" \\
      bash e2e/netns.sh .venv/bin/pytest -q -n 0 tests/real/control_plane/test_real_rayservice.py
"""

from __future__ import annotations

import copy
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from bed import NAMESPACE, Bed
from control_plane import ControlPlane, wait_until
from kubernetes import client
from ray_on_node import make_share
from real_kuberay import operator_deletions
from real_loop import REAL_LOOP_MARKS, read_ray_token
from real_optin import ours
from real_serve import (
    FIGURES,
    MAX_REPLICAS,
    RS,
    SERVICE,
    Held,
    Load,
    app_running,
    rayservice,
    service_of,
    stage,
)

pytestmark = REAL_LOOP_MARKS

GROUP = "cpu"
PER_POD = 2  # {CPU: 5} replicas on a 10-CPU pod


def _cluster_name(custom: client.CustomObjectsApi) -> str:
    status = service_of(custom).get("status") or {}
    return str((status.get("activeServiceStatus") or {}).get("rayClusterName") or "")


def _append_group(cp: ControlPlane, custom: client.CustomObjectsApi) -> None:
    """A worker group appended to the RayService's cluster config (a copy of cpu)."""
    groups = service_of(custom)["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    extra = copy.deepcopy(groups[0])
    extra["groupName"] = "extra"
    ops = [{"op": "add", "path": "/spec/rayClusterConfig/workerGroupSpecs/-", "value": extra}]
    custom.patch_namespaced_custom_object(
        *RS[:2], NAMESPACE, RS[2], SERVICE, ops, _content_type="application/json-patch+json"
    )


def _raycluster(cp: ControlPlane, name: str) -> dict[str, Any]:
    found: dict[str, Any] = cp.get_json("raycluster", name, "-n", NAMESPACE)
    return found


@pytest.fixture
def share(bed: Bed) -> Path:
    return make_share(Path(tempfile.mkdtemp(prefix="rayservice-", dir=bed.workdir)) / "share")


def test_a_labelled_rayservice_follows_serve_and_survives_an_in_place_rewrite(
    bed: Bed, share: Path
) -> None:
    cp, core = bed.cp, client.CoreV1Api(bed.api)
    with stage(bed, share.parent) as (custom, pods):
        created = time.time()
        cp.apply_docs([rayservice(SERVICE, share, bed.refs)])
        wait_until(lambda: app_running(custom), timeout_s=600, what="the Serve app RUNNING")
        ready_s = time.time() - created
        cluster = _cluster_name(custom)
        token = read_ray_token(cp, cluster, timeout_s=60)
        wait_until(lambda: len(pods.running_pods(GROUP)) == 1, timeout_s=300, what="1 pod")
        with Held(core, token) as busy:
            load = Load(clients=2 * MAX_REPLICAS).start()
            loaded = time.time()
            want = math.ceil(MAX_REPLICAS / PER_POD)
            wait_until(
                lambda: busy.count == MAX_REPLICAS and len(pods.running_pods(GROUP)) == want,
                timeout_s=600,
                what=f"{MAX_REPLICAS} replicas on {want} pods under load",
                interval_s=0.5,
            )
            up_s = time.time() - loaded
            before = _raycluster(cp, cluster)
            appended = time.time()
            _append_group(cp, custom)
            wait_until(
                lambda: len(_raycluster(cp, cluster)["spec"]["workerGroupSpecs"]) == 3,
                timeout_s=120,
                what="the group appended to the live cluster in place",
            )
            wait_until(
                lambda: ("ScaledObject", f"ray-{cluster}-extra") in ours(cp, cluster),
                timeout_s=120,
                what="the appended group's ScaledObject",
            )
            after = _raycluster(cp, cluster)
            generation = after["metadata"]["generation"]
            time.sleep(10)  # a window for a loop to show: the generation must hold still
            settled = _raycluster(cp, cluster)
            load.stop()
            stopped = time.time()
            wait_until(
                lambda: len(pods.running_pods(GROUP)) == 1 and busy.count == 1,
                timeout_s=600,
                what="back to 1 replica on 1 pod",
                interval_s=0.5,
            )
            down_s = time.time() - stopped
        deleted = pods.deleted_since(created, GROUP)
        busy_deleted = {pod for pod, at in deleted if pod in busy.held_before(at)}
        rewritten = [p for p, at in deleted if appended <= at <= stopped]
        custom.delete_namespaced_custom_object(*RS[:2], NAMESPACE, RS[2], SERVICE)
        wait_until(lambda: not ours(cp), timeout_s=240, what="every object of ours gone")
        named, randomly = (  # this cluster's: the operator's log holds the whole session
            {pod for pod in found if pod.startswith(f"{cluster}-")}
            for found in operator_deletions(bed.operator.log)
        )
        gpu_pods = pods.most_alive("gpu", created)
        head = settled["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
        cpu_before = before["spec"]["workerGroupSpecs"][0]
        cpu_after = settled["spec"]["workerGroupSpecs"][0]
    assert [c["name"] for c in head] == ["ray-head", "agent"]  # the sidecar kept
    assert cpu_after.get("replicas") == cpu_before.get("replicas")  # the agent's count kept
    assert settled["metadata"]["generation"] == generation, "the cluster's spec kept changing"
    assert not rewritten, f"pods deleted after the in-place rewrite: {rewritten}"
    assert not busy_deleted, f"pods deleted while holding a replica: {busy_deleted}"
    assert not randomly, f"KubeRay deleted pods at random: {randomly}"
    assert load.failed == 0, (load.outcomes, load.failures)
    FIGURES.update(
        {
            "to app running": f"{ready_s:.1f} s",
            "load to 3 pods": f"{up_s:.1f} s",
            "load gone to 1 pod": f"{down_s:.1f} s",
            "peak pods": str(pods.most_alive(GROUP, created)),
            "gpu pods": str(gpu_pods),
            "requests": str(load.sent),
            "failed": str(load.failed),
            "busy pods deleted": str(len(busy_deleted)),
            "deleted by the rewrite": str(len(rewritten)),
            "pods deleted by name": str(len(named)),
            "at random": str(len(randomly)),
        }
    )
