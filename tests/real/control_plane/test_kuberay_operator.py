"""What the real KubeRay operator (``e2e/build.sh``: v1.5.1, v1.7.0 with ``KRS_KUBERAY_VERSION``)
does with the applier's patches.

One ordered story of two tests on one RayCluster ``demo`` (the module-scoped ``cp``): run the
whole module, in file order. ``test_replicas_lowered_without_names_let_kuberay_choose`` needs
the RayCluster at 4 pods that ``test_one_patch_removes_exactly_the_named_drained_pods`` creates
and leaves; alone it fails. ``make test`` runs it; alone, inside the bed's network namespace
(as the Makefile's ``BED``)::

    KRS_E2E_BIN="$(bash e2e/build.sh)" bash e2e/netns.sh \\
      .venv/bin/pytest -q -n 0 tests/real/control_plane/test_kuberay_operator.py

etcd, kube-apiserver and ``kuberay-operator`` only: no scheduler, so worker pods stay unbound
and a deletion removes them at once. The applier's one patch (replicas lowered by k, k names in
workersToDelete) must remove exactly the named pods; lowering replicas alone lets KubeRay pick.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tenacity
from control_plane import ControlPlane, Process, build_binaries, spawn, wait_until
from fake_clock import FakeClock
from filled_pods import Pods
from kuberay_examples import example
from kubernetes import client, config
from prometheus_client import CollectorRegistry
from real_kuberay import RC, RWG, api_server, custom_api

from keda_ray_scaler.agent.kube.kube_retry import KubeApiErrors
from keda_ray_scaler.agent.kuberay.applier import KubeRayApplier
from keda_ray_scaler.agent.kuberay.group_round import ApplierSettings
from keda_ray_scaler.agent.kuberay.kuberay_api import KubeRayApi, KubeRaySettings
from keda_ray_scaler.demo.raylets import free_port

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]
NS = "ray"


@pytest.fixture(scope="module")
def cp() -> Iterator[tuple[ControlPlane, Process]]:
    """API server with the CRDs, and KubeRay's operator (leader election off)."""
    bin_dir = Path(os.environ["KRS_E2E_BIN"]) if os.environ.get("KRS_E2E_BIN") else build_binaries()
    with api_server(bin_dir) as started:
        operator = spawn(
            "kuberay-operator",
            [
                str(bin_dir / "bin" / "kuberay-operator"),
                f"--kubeconfig={started.admin_kubeconfig}",
                "--enable-leader-election=false",
                f"--metrics-addr=127.0.0.1:{free_port()}",
                f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            ],
            started.workdir / "logs",
        )
        try:
            started.kubectl("create", "namespace", NS)
            # no controller-manager here: the ServiceAccounts pods name are made by hand
            for account in ("default", "ray-demo-agent"):  # the example head's own
                started.kubectl("create", "serviceaccount", account, f"--namespace={NS}")
            yield started, operator
        finally:
            operator.stop()


def worker_pods(core: client.CoreV1Api, group: str = "cpu") -> set[str]:
    """The group's worker pods that exist and are not being deleted."""
    items = core.list_namespaced_pod(
        NS, label_selector=f"ray.io/cluster=demo,ray.io/group={group},ray.io/node-type=worker"
    ).items
    return {p.metadata.name for p in items if p.metadata.deletion_timestamp is None}


def exactly(core: client.CoreV1Api, count: int) -> set[str] | None:
    """The group's pods when there are ``count`` of them."""
    pods = worker_pods(core)
    return pods if len(pods) == count else None


def test_one_patch_removes_exactly_the_named_drained_pods(
    cp: tuple[ControlPlane, Process],
) -> None:
    """6 pods; victims p2, p4 and /scale to 4: KubeRay deletes exactly them, then nothing."""
    plane, operator = cp
    api = custom_api(plane)
    core = client.CoreV1Api(config.new_client_from_config(str(plane.admin_kubeconfig)))
    rc: dict[str, Any] = example()
    rc["metadata"] = {"name": "demo", "namespace": NS}
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 6
    api.create_namespaced_custom_object(*RC[:2], NS, RC[2], rc)
    rwg = {
        "apiVersion": "keda-ray-scaler.io/v1alpha1",
        "kind": "RayWorkerGroup",
        "metadata": {"name": "ray-demo-cpu"},
        "spec": {"rayCluster": "demo", "groupName": "cpu", "replicas": 6},
    }
    api.create_namespaced_custom_object(*RWG[:2], NS, RWG[2], rwg)
    six = wait_until(
        lambda: exactly(core, 6),
        timeout_s=60,
        what="KubeRay's 6 worker pods",
        alive=[operator],
    )
    named = sorted(six)[1:4:2]
    pods = Pods()
    pods.set("cpu", sorted(six))
    victims = dict.fromkeys(named, "cpu")
    applier = KubeRayApplier(
        KubeRayApi(
            api,
            KubeRaySettings(NS, "demo"),
            KubeApiErrors(CollectorRegistry()),
            wait=tenacity.wait_none(),
        ),
        pods,
        lambda: True,
        lambda: victims,
        FakeClock(1_790_000_000.0, advance_on_sleep=False),
        CollectorRegistry(),
        ApplierSettings(cluster="demo"),
    )
    api.patch_namespaced_custom_object_scale(
        *RWG[:2], NS, RWG[2], "ray-demo-cpu", {"spec": {"replicas": 4}}
    )
    (verdict,) = asyncio.run(applier.apply())
    assert (verdict.action, verdict.replicas, verdict.named) == ("scale_down", 4, tuple(named))
    wait_until(
        lambda: worker_pods(core) == six - set(named),
        timeout_s=60,
        what="exactly the named pods deleted",
        alive=[operator],
    )
    for _ in range(3):  # KubeRay's next reconciles delete nothing more
        pods.set("cpu", [])
        pods._pods.clear()
        pods.set("cpu", sorted(worker_pods(core)))
        assert asyncio.run(applier.apply())[0].action in ("clear", "none")
    assert worker_pods(core) == six - set(named)
    group = api.get_namespaced_custom_object(*RC[:2], NS, RC[2], "demo")["spec"][
        "workerGroupSpecs"
    ][0]
    assert (group["replicas"], group["scaleStrategy"]["workersToDelete"]) == (4, [])


def test_replicas_lowered_without_names_let_kuberay_choose(
    cp: tuple[ControlPlane, Process],
) -> None:
    """Why the applier never lowers replicas alone: KubeRay then deletes pods of its choosing."""
    plane, operator = cp
    api = custom_api(plane)
    core = client.CoreV1Api(config.new_client_from_config(str(plane.admin_kubeconfig)))
    patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2}]
    before = worker_pods(core)
    assert len(before) == 4
    api.patch_namespaced_custom_object(
        *RC[:2], NS, RC[2], "demo", patch, _content_type="application/json-patch+json"
    )
    after = wait_until(
        lambda: exactly(core, 2),
        timeout_s=60,
        what="KubeRay at 2 pods",
        alive=[operator],
    )
    assert after < before  # two pods gone, chosen by KubeRay (its list order), named by no one
