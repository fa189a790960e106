"""Service networking on the real node's bed: kube-proxy and CoreDNS, as a cluster has them.

The bed (:mod:`bed`) starts both beside its real node (:mod:`real_node`), as host processes in the
bed's network namespace, from the build set (``e2e/build.sh``):

- **kube-proxy** (the ``controlplane`` binary's ``kube-proxy``, Kubernetes v1.37.2) in iptables
  mode (Debian's iptables, nf_tables backend), the pod bridge's ``POD_SUBNET`` as its cluster
  CIDR: a ClusterIP routes to its endpoints from pods on the bridge and from the namespace's own
  processes (the tests, KEDA, the operators). Two things a node has and the bed's namespace has
  not are added for it: IP forwarding (a pod's packet to a ClusterIP is DNATed to a pod on the
  same bridge and forwarded back out of it; the namespace's own sysctl, nothing global) and a
  route to ``SERVICE_CIDR`` (the namespace has no default route, and a ``connect()`` with no route
  fails before kube-proxy's DNAT sees the packet: the route goes through ``lo`` with the node IP
  as source, and the DNAT re-routes the packet to the bridge). The pods' route to the Service
  range is in the node's CNI configuration.
- **CoreDNS** (``e2e/coredns``: CoreDNS v1.15.0 with the kubernetes, cache, errors, log, health,
  ready and bind plugins only) serving ``cluster.local`` and the reverse zones from the API
  server, on port 53 of the node IP, the kubelet's ``clusterDNS`` (``CLUSTER_DNS``): a pod with
  ``dnsPolicy: ClusterFirst`` (the default) resolves ``<service>.<namespace>.svc.cluster.local``.
  It listens on the node IP itself rather than behind a kube-dns ClusterIP (as NodeLocal DNSCache
  does on a node): DNS needs no kube-proxy rule, and the Service's endpoint would be that host
  address anyway. Other names are REFUSED: no upstream, the namespace has no route out.

Nothing that ran before depends on either: host processes keep the machine's resolver, hostNetwork
pods the kubelet's ``resolvConf`` (``127.0.0.1``, where nothing listens: CoreDNS binds the node IP
only). The ``kubernetes`` Service still has no endpoints (the API server listens on loopback,
``--endpoint-reconciler-type=none``): kube-proxy rejects connections to its ClusterIP.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from control_plane import SERVICE_CIDR, ControlPlane, Process, spawn, wait_until
from real_node import CLUSTER_DNS, CLUSTER_DOMAIN, NODE_IP, POD_SUBNET, RealNode

from keda_ray_scaler.demo.raylets import distinct_free_ports

#: bound to ``system:node-proxier`` by the API server's bootstrap RBAC policy
KUBE_PROXY_USER = "system:kube-proxy"
COREDNS_USER = "coredns"
IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")  # this network namespace's own


@dataclass
class ServiceNetwork:
    """The started kube-proxy and CoreDNS, and the seconds each took to be ready."""

    kube_proxy: Process
    coredns: Process
    figures: dict[str, float] = field(default_factory=dict)


@contextlib.contextmanager
def service_network(cp: ControlPlane, node: RealNode) -> Iterator[ServiceNetwork]:
    """Forwarding and the Service route, kube-proxy, CoreDNS (module docstring); each undone on
    exit (processes stopped by PID, kube-proxy's rules removed, the route and the sysctl
    restored)."""
    state = node.state / "service-network"
    state.mkdir(parents=True, exist_ok=True)
    bin_path, logs = str(node.bin_dir / "bin"), node.state / "logs"
    with contextlib.ExitStack() as stack:
        forward = IP_FORWARD.read_text()
        IP_FORWARD.write_text("1\n")
        stack.callback(IP_FORWARD.write_text, forward)
        _ip("route", "replace", SERVICE_CIDR, "dev", "lo", "src", NODE_IP)
        stack.callback(_ip, "route", "del", SERVICE_CIDR, "dev", "lo")
        started = time.monotonic()
        config, healthz = _kube_proxy_config(cp, node, state)
        binary = f"{bin_path}/controlplane"
        stack.callback(_remove_rules, binary, config, logs)
        kube_proxy = spawn(
            "kube-proxy", [binary, "kube-proxy", f"--config={config}", "--v=2"], logs
        )
        stack.callback(kube_proxy.stop)
        _wait_ok(kube_proxy, f"http://{healthz}/healthz", "kube-proxy healthz (rules synced)")
        proxy_s = time.monotonic() - started
        started = time.monotonic()
        conf, ready = _coredns_config(cp, state)
        coredns = spawn("coredns", [f"{bin_path}/coredns", f"-conf={conf}"], logs)
        stack.callback(coredns.stop)
        _wait_ok(coredns, ready, "CoreDNS ready (the kubernetes plugin synced)")
        figures = {
            "kube_proxy_ready_s": round(proxy_s, 2),
            "coredns_ready_s": round(time.monotonic() - started, 2),
        }
        node.figures.update(figures)
        yield ServiceNetwork(kube_proxy, coredns, figures)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


# ---------------------------------------------------------------------------------------------
# kube-proxy


def _kube_proxy_config(cp: ControlPlane, node: RealNode, state: Path) -> tuple[Path, str]:
    """kube-proxy's configuration file, and its healthz address."""
    healthz, metrics = distinct_free_ports(2)  # ephemeral: outside Ray's worker ports
    config: dict[str, Any] = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(cp.user_kubeconfig(KUBE_PROXY_USER))},
        "hostnameOverride": node.name,
        "mode": "iptables",
        "clusterCIDR": POD_SUBNET,
        "detectLocalMode": "ClusterCIDR",
        "healthzBindAddress": f"127.0.0.1:{healthz}",
        "metricsBindAddress": f"127.0.0.1:{metrics}",
        "nodePortAddresses": ["primary"],  # NodePorts on the node IP only
        # no NodePorts on 127.0.0.1: that needs route_localnet=1, which nothing here wants
        "iptables": {"localhostNodePorts": False},
        # Conntrack as the kernel has it. kube-proxy's defaults raise nf_conntrack_max (writable
        # only from the initial network namespace: a global sysctl) and the module's hashsize
        # (a module parameter), and set TCP timeouts; 0 leaves each alone, and the bed's few
        # connections need none of them.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        # its default, -999, needs CAP_SYS_RESOURCE, which this machine's root lacks
        "oomScoreAdj": 0,
    }
    path = state / "kube-proxy.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, config["healthzBindAddress"]


def _remove_rules(binary: str, config: Path, logs: Path) -> None:
    """``kube-proxy --cleanup``: its iptables chains go (best effort: the namespace goes with the
    run anyway)."""
    with (logs / "kube-proxy-cleanup.log").open("ab") as out:
        subprocess.run(
            [binary, "kube-proxy", f"--config={config}", "--cleanup"],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=60,
            check=False,
        )


# ---------------------------------------------------------------------------------------------
# CoreDNS


def _coredns_rbac() -> list[dict[str, Any]]:
    """What CoreDNS's kubernetes plugin reads (CoreDNS's own ClusterRole), for its user."""
    watch = ["list", "watch"]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:coredns"},
        "rules": [
            {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
             "verbs": watch},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": watch},
        ],
    }  # fmt: skip
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "system:coredns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "system:coredns"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": COREDNS_USER}],
    }  # fmt: skip
    return [role, binding]


def corefile(kubeconfig: Path, health_port: int, ready_port: int) -> str:
    """The cluster zone and the reverse zones from the API server, on the node IP's port 53."""
    return f"""\
{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {CLUSTER_DNS}
    errors
    log
    health 127.0.0.1:{health_port}
    ready 127.0.0.1:{ready_port}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
    }}
    cache 30
}}
"""


def _coredns_config(cp: ControlPlane, state: Path) -> tuple[Path, str]:
    """CoreDNS's RBAC applied, its Corefile written; the Corefile and the URL of its /ready."""
    cp.apply_docs(_coredns_rbac())
    health, ready = distinct_free_ports(2)
    conf = state / "Corefile"
    conf.write_text(corefile(cp.user_kubeconfig(COREDNS_USER), health, ready))
    return conf, f"http://127.0.0.1:{ready}/ready"


def _wait_ok(process: Process, url: str, what: str) -> None:
    """Wait until ``url`` answers 200 (fail at once if ``process`` exits)."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def ok() -> bool:
        with direct.open(url, timeout=2) as answer:
            return bool(answer.status == 200)

    wait_until(ok, timeout_s=60, what=what, interval_s=0.2, alive=[process])
