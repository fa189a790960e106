"""A real node under the real control plane: real containers, restarts, signals, security.

The kubelet (the ``controlplane`` binary's subcommand), containerd v2 and runc of the build set
run busybox pods pinned to the node (``tests/harness/real_node.py``); the control plane runs
without kwok.
Needs root and the network namespace of ``e2e/netns.sh`` (skipped elsewhere)::

    e2e/netns.sh env KRS_E2E_BIN="$(bash e2e/build.sh)" \\
      .venv/bin/pytest -q tests/real/node/test_real_node.py

The node imports only the pause and busybox images (``e2e/images.py``, cached).
Every wait is on the pod's status, a file or an event, never a fixed sleep. Figures go to
``real_node.FIGURES``.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from control_plane import ControlPlane, build_binaries, wait_until
from real_node import (
    CRASH_LOOP_MAX_S,
    FIGURES,
    NODE_IP,
    POD_SUBNET,
    RealNode,
    build_images,
    real_node,
    skip_reason,
)

_SKIP = skip_reason()
pytestmark = [
    pytest.mark.controlplane,
    pytest.mark.timeout(600),
    pytest.mark.skipif(_SKIP is not None, reason=_SKIP or ""),
]

NAMESPACE = "realnode-spec"
DEFAULT_FIRST_BACK_OFF_S = 10.0  # the kubelet's initial back-off without a cap; doubles each time


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNode]:
    """A control plane without kwok and one real node with pause and busybox, for the module."""
    env_bin = os.environ.get("KRS_E2E_BIN")
    bin_dir = Path(env_bin) if env_bin else build_binaries()
    images = build_images("pause", "busybox")
    workdir = tmp_path_factory.mktemp("realnode")
    with (
        ControlPlane.start(workdir / "cp", bin_dir, kwok=False) as cp,
        real_node(cp, bin_dir, images) as started,
    ):
        cp.kubectl("create", "namespace", NAMESPACE)
        wait_until(
            lambda: cp.kubectl("get", "sa/default", f"-n={NAMESPACE}", check=False).returncode == 0,
            timeout_s=60,
            what="the namespace's default ServiceAccount",
        )
        (started.state / "shared").mkdir()
        yield started
        FIGURES.update({f"{k}_rss_mb_end": round(v, 1) for k, v in started.rss_mb().items()})
    FIGURES.update(started.figures)
    print("real-node: " + "; ".join(f"{k} {v}" for k, v in FIGURES.items()))


# ---------------------------------------------------------------------------------------------
# builders and waits


def busybox(
    node: RealNode,
    name: str,
    script: str,
    *,
    grace_s: int = 2,
    restart: str = "Always",
    security: dict[str, Any] | None = None,
    shared: bool = False,
) -> dict[str, Any]:
    """A pod pinned to the node, one container ``main`` running ``sh -c script`` in busybox;
    with ``shared``, the node's ``<state>/shared`` at ``/shared``, an emptyDir at ``/scratch``."""
    container: dict[str, Any] = {
        "name": "main",
        "image": node.images["busybox"]["ref"],
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", script],
        "securityContext": security or {},
    }
    spec: dict[str, Any] = {
        "containers": [container],
        "restartPolicy": restart,
        "terminationGracePeriodSeconds": grace_s,
        "dnsPolicy": "None",
        "dnsConfig": {"nameservers": ["127.0.0.1"]},
    }
    if shared:
        container["volumeMounts"] = [
            {"name": "shared", "mountPath": "/shared"},
            {"name": "scratch", "mountPath": "/scratch"},
        ]
        spec["volumes"] = [
            {"name": "shared", "hostPath": {"path": str(node.state / "shared")}},
            {"name": "scratch", "emptyDir": {}},
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": node.pin(spec),
    }


def create(node: RealNode, pod: dict[str, Any]) -> None:
    """Create the pod."""
    node.cp.apply_docs([pod])


def wait_pod(
    node: RealNode, name: str, check: Callable[[dict[str, Any]], Any], what: str, timeout_s: float
) -> dict[str, Any]:
    """Poll the pod until ``check(pod)`` holds; the pod."""
    found: dict[str, Any] = {}

    def holds() -> bool:
        found.update(node.cp.get_json("pod", name, f"-n={NAMESPACE}"))
        return bool(check(found))

    wait_until(holds, timeout_s=timeout_s, what=f"{name}: {what}", interval_s=0.1)
    return found


def main_status(pod: dict[str, Any]) -> dict[str, Any]:
    """The status of container ``main`` ({} before the kubelet reports it)."""
    statuses = pod.get("status", {}).get("containerStatuses", [])
    return next((s for s in statuses if s["name"] == "main"), {})


def ready(pod: dict[str, Any]) -> bool:
    """The pod's Ready condition is True."""
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def running_after(restarts: int) -> Callable[[dict[str, Any]], bool]:
    """Container ``main`` runs and has restarted ``restarts`` times."""

    def check(pod: dict[str, Any]) -> bool:
        status = main_status(pod)
        return status.get("restartCount") == restarts and "running" in status.get("state", {})

    return check


def delete_and_time(node: RealNode, name: str) -> float:
    """DELETE the pod (its own grace period); seconds until the object is gone."""
    started = time.monotonic()
    node.cp.kubectl("delete", "pod", name, f"-n={NAMESPACE}", "--wait=false")
    wait_until(
        lambda: node.cp.kubectl("get", "pod", name, f"-n={NAMESPACE}", check=False).returncode,
        timeout_s=60,
        what=f"{name} gone",
        interval_s=0.1,
    )
    return time.monotonic() - started


# ---------------------------------------------------------------------------------------------
# the specs


def test_a_pinned_busybox_pod_is_ready_in_seconds(node: RealNode) -> None:
    """A busybox pod pinned to the real node runs on it with an IP of the pod network, Ready in
    under 30 s."""
    started = time.monotonic()
    create(node, busybox(node, "ready", "exec sleep 3600"))
    pod = wait_pod(node, "ready", ready, "Ready", 60)
    seconds = time.monotonic() - started
    FIGURES["pod_ready_s"] = round(seconds, 2)
    assert pod["spec"]["nodeName"] == node.name
    assert pod["status"]["hostIP"] == NODE_IP
    assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(POD_SUBNET)
    assert seconds < 30


def test_a_killed_container_is_restarted_at_once_then_after_the_capped_back_off(
    node: RealNode,
) -> None:
    """SIGKILL of the container's process from the host, three times: the kubelet restarts it at
    once, then after the capped back-off (5 s, where the default waits 10 s, then 20 s), and the
    previous container's log stays readable."""
    create(node, busybox(node, "crasher", 'echo "started $(date +%s)"; exec sleep 3600'))
    wait_pod(node, "crasher", running_after(0), "running", 60)
    gaps = []
    for restarts in (1, 2, 3):
        pid = node.container_pid(NAMESPACE, "crasher", "main")
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        wait_pod(node, "crasher", running_after(restarts), f"restart {restarts}", 60)
        gaps.append(round(time.monotonic() - killed, 2))
    FIGURES["restart_gaps_s"] = gaps
    first, second, third = gaps
    assert first < CRASH_LOOP_MAX_S - 1  # no back-off before the first restart
    for gap in (second, third):  # a back-off, and capped: the default's third step is 20 s
        assert CRASH_LOOP_MAX_S - 0.5 <= gap < 2 * DEFAULT_FIRST_BACK_OFF_S - 5
    last = main_status(node.cp.get_json("pod", "crasher", f"-n={NAMESPACE}"))["lastState"]
    assert last["terminated"]["exitCode"] == 128 + signal.SIGKILL
    assert node.logs(NAMESPACE, "crasher", "main", previous=True).startswith("started ")
    wait_until(
        lambda: node.cp.get_json(
            "events",
            f"-n={NAMESPACE}",
            "--field-selector=involvedObject.name=crasher,reason=BackOff",
        )["items"],
        timeout_s=30,
        what="a BackOff event for crasher",
    )


def test_deleting_a_pod_delivers_sigterm_and_it_goes_well_within_its_grace(node: RealNode) -> None:
    """DELETE of a pod whose container traps TERM (grace 30 s): the container gets SIGTERM, exits
    on it, and the pod object is gone in a few seconds, not at the end of the grace period."""
    marker = node.state / "shared" / "term"
    script = (
        "trap 'echo TERM >> /shared/term; exit 0' TERM; echo trapped > /shared/term; "
        "while true; do sleep 0.2; done"
    )
    create(node, busybox(node, "terminated", script, grace_s=30, shared=True))
    wait_until(marker.exists, timeout_s=60, what="the TERM trap installed")
    seconds = delete_and_time(node, "terminated")
    FIGURES["sigterm_pod_gone_s"] = round(seconds, 2)
    assert marker.read_text().split() == ["trapped", "TERM"]
    assert seconds < 10


def test_a_container_that_ignores_sigterm_is_killed_when_its_grace_ends(node: RealNode) -> None:
    """DELETE of a pod whose container ignores TERM (grace 3 s): it is SIGKILLed when the grace
    period ends, so the pod is gone after 3 s, not before."""
    marker = node.state / "shared" / "ignore"
    script = "trap '' TERM; echo ignoring > /shared/ignore; while true; do sleep 0.2; done"
    create(node, busybox(node, "stubborn", script, grace_s=3, shared=True))
    wait_until(marker.exists, timeout_s=60, what="TERM ignored")
    seconds = delete_and_time(node, "stubborn")
    FIGURES["sigkill_pod_gone_s"] = round(seconds, 2)
    assert 3 <= seconds < 15


def test_run_as_non_root_refuses_an_image_that_runs_as_root(node: RealNode) -> None:
    """runAsNonRoot with busybox (which runs as root): the kubelet refuses to create the container
    (CreateContainerConfigError): the securityContext is enforced, not only stored."""
    create(node, busybox(node, "nonroot", "id -u", security={"runAsNonRoot": True}))
    pod = wait_pod(
        node,
        "nonroot",
        lambda p: main_status(p).get("state", {}).get("waiting", {}).get("message"),
        "refused",
        60,
    )
    waiting = main_status(pod)["state"]["waiting"]
    assert waiting["reason"] == "CreateContainerConfigError"
    assert "runAsNonRoot" in waiting["message"]


def test_run_as_user_runs_the_container_process_as_that_uid(node: RealNode) -> None:
    """runAsNonRoot with runAsUser 1000: the same image runs, and its process has uid 1000."""
    security = {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000}
    create(node, busybox(node, "uid", "id -u; id -g", restart="Never", security=security))
    wait_pod(node, "uid", lambda p: p["status"].get("phase") == "Succeeded", "Succeeded", 60)
    assert node.logs(NAMESPACE, "uid", "main").split() == ["1000", "1000"]


def test_a_read_only_root_filesystem_cannot_be_written(node: RealNode) -> None:
    """readOnlyRootFilesystem: writing under / fails with EROFS, while a mounted emptyDir stays
    writable."""
    script = (
        "if touch /probe; then echo WROTE; exit 0; fi; "
        "touch /scratch/probe && echo SCRATCH-WRITABLE; exit 3"
    )
    security = {"readOnlyRootFilesystem": True}
    create(node, busybox(node, "readonly", script, restart="Never", security=security, shared=True))
    pod = wait_pod(node, "readonly", lambda p: p["status"].get("phase") == "Failed", "Failed", 60)
    assert main_status(pod)["state"]["terminated"]["exitCode"] == 3
    log = node.logs(NAMESPACE, "readonly", "main")
    assert "Read-only file system" in log
    assert "SCRATCH-WRITABLE" in log
    assert "WROTE" not in log
