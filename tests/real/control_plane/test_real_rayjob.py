"""A RayJob autoscaled with one label, on the real node with real KubeRay (see ``real_optin``).

The RayJob carries ``keda-ray-scaler.io/autoscaling: enabled`` and nothing else of ours. KubeRay
copies its labels to the RayCluster it makes (``<job>-<suffix>``, a name nobody knows in
advance); the chart's webhook adds the agent sidecar to that cluster's head; the chart's
controller makes the RayWorkerGroups, ScaledObjects and the agent's identity, owned by the
cluster. The job is the seed (20 tasks of ``{CPU: 5}`` on 10-CPU pods): exactly 10 pods, then,
its tasks released, back to the floor of 0 before the driver ends (``rayjob_driver.py``); with
``shutdownAfterJobFinishes`` KubeRay deletes the cluster and the garbage collector everything we
made. The suite's summary ends with one ``e2e-rayjob:`` line.

Alone, inside the bed (as the Makefile's ``BED``)::

    KRS_E2E_BIN="$(bash e2e/build.sh)" KRS_E2E_IMAGES="$(.venv/bin/python e2e/images.py)" \\
      bash e2e/netns.sh .venv/bin/pytest -q -n 0 tests/real/control_plane/test_real_rayjob.py
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
import requests
from bed import NAMESPACE, Bed, ray_namespace
from control_plane import wait_until
from kubernetes import client
from pod_watch import PodWatch
from ray_on_node import AGENT_PORT, make_share
from real_kuberay import operator_deletions
from real_loop import EXPECTED_PODS, REAL_LOOP_MARKS, agent_sample
from real_optin import (
    FIGURES,
    JobView,
    controller_release,
    controller_samples,
    ours,
    raycluster,
    rayjob,
    rayjob_on,
)

pytestmark = REAL_LOOP_MARKS

JOB = "seed"
GROUP = "cpu"
TASKS = 20  # rayjob_driver.py's
#: what the controller makes for the example's cluster: per worker group (cpu, gpu) a
#: RayWorkerGroup and a ScaledObject; the agent's ServiceAccount, Role and RoleBinding
OBJECTS = 7


def _ray_nodes() -> int:
    """Pods the agent exports as live Ray nodes."""
    text = requests.get(f"http://127.0.0.1:{AGENT_PORT}/metrics", timeout=2).text
    return len(agent_sample(time.time(), text).live)


def test_a_labelled_rayjob_scales_up_for_its_job_back_down_and_leaves_nothing(
    bed: Bed,
) -> None:
    cp = bed.cp
    core = client.CoreV1Api(bed.api)
    view = JobView(cp, client.CustomObjectsApi(bed.api), JOB)
    workdir = Path(tempfile.mkdtemp(prefix="rayjob-", dir=bed.workdir))
    share = make_share(workdir / "share")
    with (
        ray_namespace(cp, workdir),
        controller_release(bed),
        PodWatch(core, NAMESPACE, "ray.io/node-type=worker") as pods,
    ):
        created = time.time()
        cp.apply_docs([rayjob(JOB, share, bed.refs)])
        cluster = wait_until(view.cluster_name, timeout_s=120, what="the RayJob's cluster name")
        made = view.cluster()
        assert made is not None
        # KubeRay passed the label; the webhook added the agent to the head
        assert made["metadata"]["labels"]["keda-ray-scaler.io/autoscaling"] == "enabled"
        containers = made["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in containers] == ["ray-head", "agent"]
        wait_until(
            lambda: len(ours(cp, cluster)) == OBJECTS,
            timeout_s=120,
            what=f"the controller's {OBJECTS} objects for {cluster}",
        )
        wait_until(
            lambda: (
                len(pods.running_pods(GROUP)) == EXPECTED_PODS and _ray_nodes() == EXPECTED_PODS
            ),
            timeout_s=600,
            what=f"{EXPECTED_PODS} Ready {GROUP} pods, each a Ray node the agent sees",
            interval_s=0.5,
        )
        ten = time.time() - created
        markers = share / "markers"
        wait_until(  # Ray places the last tasks a moment after their nodes join
            lambda: len(list(markers.glob("[0-9]*"))) == TASKS,
            timeout_s=300,
            what=f"all {TASKS} tasks started",
        )
        busy = {p.read_text() for p in markers.glob("[0-9]*")}
        released = time.time()
        (share / "release").touch()
        wait_until(
            lambda: view.status().get("jobStatus") in {"SUCCEEDED", "FAILED", "STOPPED"},
            timeout_s=600,
            what="the job's end (its driver waits for the floor of 0 workers)",
        )
        status = view.status()
        assert status["jobStatus"] == "SUCCEEDED", status
        floor_at = max((at for _, at in pods.deleted_since(released, GROUP)), default=released)
        wait_until(lambda: view.cluster() is None, timeout_s=180, what=f"{cluster} deleted")
        gone_at = time.time()
        wait_until(
            lambda: not ours(cp), timeout_s=180, what="every object of ours garbage-collected"
        )
        left_s = time.time() - gone_at
        peak = pods.most_alive(GROUP, created)
        named, randomly = (  # this cluster's: the operator's log holds the whole session
            {pod for pod in found if pod.startswith(f"{cluster}-")}
            for found in operator_deletions(bed.operator.log)
        )
        assert peak == EXPECTED_PODS
        assert not randomly, f"KubeRay deleted pods at random: {randomly}"
        assert len(busy) == EXPECTED_PODS, busy  # the seed used every pod it made
        assert pods.most_alive("gpu", created) == 0  # a group the seed never asks for
        writes = controller_samples().get("ray_scaler_controller_writes_total", 0.0)
    FIGURES.update(
        {
            "kuberay": os.environ.get("KRS_KUBERAY_VERSION") or "v1.5.1",  # build.sh's default
            "to 10 pods": f"{ten:.1f} s",
            "peak pods": str(peak),
            "release to floor": f"{floor_at - released:.1f} s",
            "pods deleted by name": str(len(named)),
            "at random": str(len(randomly)),
            "objects left": "0",
            "gone after cluster": f"{left_s:.1f} s",
            "controller writes": f"{writes:.0f}",
        }
    )


def test_a_rayjob_on_a_labelled_cluster_is_served_by_that_clusters_objects(bed: Bed) -> None:
    """``clusterSelector``: the job runs on an existing labelled RayCluster; that cluster's
    objects scale it to the 10 pods the seed needs and back, and nothing is made for the job."""
    cp = bed.cp
    core = client.CoreV1Api(bed.api)
    view = JobView(cp, client.CustomObjectsApi(bed.api), "on-shared")
    workdir = Path(tempfile.mkdtemp(prefix="rayjob-on-", dir=bed.workdir))
    share = make_share(workdir / "share")
    with (
        ray_namespace(cp, workdir),
        controller_release(bed),
        PodWatch(core, NAMESPACE, "ray.io/node-type=worker") as pods,
    ):
        cp.apply_docs([raycluster("shared", share, bed.refs)])
        wait_until(lambda: len(ours(cp, "shared")) == OBJECTS, timeout_s=120, what="its objects")
        wait_until(lambda: _ray_nodes() == 0, timeout_s=300, what="the agent at 0 workers")
        submitted = time.time()
        cp.apply_docs([rayjob_on("on-shared", "shared", share, bed.refs)])
        wait_until(
            lambda: (
                len(pods.running_pods(GROUP)) == EXPECTED_PODS and _ray_nodes() == EXPECTED_PODS
            ),
            timeout_s=600,
            what=f"{EXPECTED_PODS} Ready pods of the shared cluster",
            interval_s=0.5,
        )
        ten = time.time() - submitted
        (share / "release").touch()
        wait_until(
            lambda: view.status().get("jobStatus") in {"SUCCEEDED", "FAILED", "STOPPED"},
            timeout_s=600,
            what="the job's end",
        )
        assert view.status()["jobStatus"] == "SUCCEEDED", view.status()
        wait_until(lambda: not pods.running_pods(GROUP), timeout_s=300, what="back to 0 pods")
        assert view.cluster_name() == "shared"
        assert cp.get_json("raycluster", "shared", "-n", NAMESPACE)["metadata"]["name"]
        assert ours(cp) == ours(cp, "shared") and len(ours(cp)) == OBJECTS
        assert pods.most_alive(GROUP, submitted) == EXPECTED_PODS
    FIGURES["on an existing cluster, to 10 pods"] = f"{ten:.1f} s"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q", "-n", "0"]))
