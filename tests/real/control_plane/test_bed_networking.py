"""The bed's Service networking (``tests/harness/service_network.py``): kube-proxy and CoreDNS.

A busybox ``httpd`` pod on the pod bridge behind a ClusterIP Service: a second pod on the bridge
resolves the Service's name through CoreDNS (``dnsPolicy: ClusterFirst``, the default) and fetches
the page through the ClusterIP (kube-proxy's DNAT to a pod on the same bridge); this process,
on the bed's own network, fetches it through the ClusterIP too. What a Ray head on the pod
network needs for its workers to join it by the head Service's DNS name, as on a cluster.

The client pod runs the Ray image, whose glibc resolves names as a Ray worker does (``getent``,
Python): Debian's busybox-static has its own ``nslookup``, but its ``wget`` crashes (SIGSEGV) in
the static glibc's name lookup, before any query is sent.

Alone, inside the bed (as the Makefile's ``BED``)::

    KRS_E2E_BIN="$(bash e2e/build.sh)" KRS_E2E_IMAGES="$(.venv/bin/python e2e/images.py)" \\
      bash e2e/netns.sh .venv/bin/pytest -q -n 0 tests/real/control_plane/test_bed_networking.py
"""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from bed import Bed
from control_plane import wait_until
from real_loop import REAL_LOOP_MARKS
from real_node import CLUSTER_DNS, CLUSTER_DOMAIN

pytestmark = REAL_LOOP_MARKS

NAMESPACE = "netcheck"
SERVICE = "web"
FQDN = f"{SERVICE}.{NAMESPACE}.svc.{CLUSTER_DOMAIN}"
HTTPD_PORT = 8080
SERVICE_PORT = 80
#: the page the server pod serves: a fresh token, so no other server can pass for it
TOKEN = uuid.uuid4().hex
RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}}


def _pod(bed: Bed, name: str, image: str, command: str, **container: Any) -> dict[str, Any]:
    """A pod of a local image on the pod bridge (not hostNetwork), pinned to the real node."""
    spec = {
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "main",
                "image": bed.refs[image],
                "imagePullPolicy": "Never",
                "command": ["sh", "-c", command],
                "resources": RESOURCES,
                **container,
            }
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": bed.node.pin(spec),
    }


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE},
        "spec": {
            "selector": {"app": "server"},
            "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": HTTPD_PORT}],
        },
    }


@pytest.fixture(scope="module")
def cluster_ip(bed: Bed) -> Iterator[str]:
    """The Service's ClusterIP, its server pod Ready (so its endpoint is ready) and the client
    pod Running; the namespace goes on exit."""
    cp = bed.cp
    cp.kubectl("create", "namespace", NAMESPACE)
    try:
        serve = (
            f"mkdir -p /www && echo {TOKEN} > /www/index.html && "
            f"exec httpd -f -v -p {HTTPD_PORT} -h /www"
        )
        probe = {"tcpSocket": {"port": HTTPD_PORT}, "periodSeconds": 1}
        cp.apply_docs(
            [
                _pod(bed, "server", "busybox", serve, readinessProbe=probe),
                _pod(bed, "client", "ray", "exec sleep 3600"),
                _service(),
            ]
        )
        cp.kubectl("wait", f"--namespace={NAMESPACE}", "--for=condition=Ready", "--timeout=90s",
                   "pod/server", "pod/client")  # fmt: skip
        service = cp.get_json("service", SERVICE, f"--namespace={NAMESPACE}")
        yield service["spec"]["clusterIP"]
    finally:
        cp.kubectl("delete", "namespace", NAMESPACE, "--wait=true", "--timeout=110s")


def _in_client(bed: Bed, *command: str) -> str:
    """``command`` run in the client pod (``kubectl exec``): its stdout, or "" when it failed."""
    done = bed.cp.kubectl("exec", f"--namespace={NAMESPACE}", "client", "--", *command, check=False)
    return done.stdout if done.returncode == 0 else ""


def test_a_pod_resolves_the_service_name_and_reaches_it_through_the_cluster_ip(
    bed: Bed, cluster_ip: str
) -> None:
    resolv = _in_client(bed, "cat", "/etc/resolv.conf")
    assert f"nameserver {CLUSTER_DNS}" in resolv.splitlines()
    assert f"{NAMESPACE}.svc.{CLUSTER_DOMAIN}" in resolv  # the search path of ClusterFirst
    for name in (FQDN, SERVICE):  # the short name through the search path
        answer = _in_client(bed, "getent", "hosts", name)
        assert answer.split()[:1] == [cluster_ip], (name, answer)
    fetch = (
        f"import urllib.request as u; print(u.urlopen('http://{FQDN}/', timeout=3).read().decode())"
    )
    page = wait_until(
        lambda: _in_client(bed, "python3", "-c", fetch),
        timeout_s=30,
        what=f"http://{FQDN}/ from the client pod",
    )
    assert page.strip() == TOKEN


def test_a_process_on_the_bed_reaches_the_cluster_ip(cluster_ip: str) -> None:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy from env

    def fetch() -> str:
        with direct.open(f"http://{cluster_ip}:{SERVICE_PORT}/", timeout=3) as page:
            return str(page.read().decode())

    page = wait_until(fetch, timeout_s=30, what=f"http://{cluster_ip}/ from this process")
    assert page.strip() == TOKEN
