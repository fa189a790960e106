"""One real-node test bed for a whole session, shared by the modules that run a Ray cluster on it.

:func:`start_bed` starts, in one temporary directory (``krs-cp-*``), inside the bed's network
namespace (``e2e/netns.sh``; every listener on its loopback or the node IP, nothing routes out):

- the control plane and KEDA (:mod:`control_plane`; HPA sync ``hpa_sync_s``), one kwok node
  beside the real one for the deletion-cost race (``tests/harness/race.py``: its pods never run),
  and
  **one real node** (:mod:`real_node`: the kubelet, containerd and runc) that runs every pod
  from images built here (``e2e/images.py``), with kube-proxy and CoreDNS beside it
  (:mod:`service_network`): ClusterIPs route and Service names resolve, as on a cluster;
- KubeRay's CRDs, the project's RayWorkerGroup CRD and the real KubeRay operator (leader
  election off, out of cluster, its init-container and probe injection off: both call the
  head's Service DNS name or ``wget``: the image has no wget; see OPERATOR_ENV);
- a real Prometheus scraping the agent (every Ray head's agent listens on the node's network);
- the scaler installed from the Helm chart (``helm upgrade --install``) with its real image: its
  gRPC probes, securityContext, limits and mTLS Secret enforced by the kubelet; KEDA's client
  certificate in KEDA's namespace, where the chart's ClusterTriggerAuthentication reads it.

The Ray clusters come and go on it: :func:`ray_namespace` makes the namespace ``ray`` for one
cluster and deletes it (and with it every pod, Secret and KEDA object of that cluster) when the
cluster's module ends, so the next one starts on an empty namespace. The modules that run a Ray
cluster (``test_vs_ray``, ``test_real_control_plane``, ``test_real_kuberay``, ``test_real_faults``)
get the bed from the session fixture ``bed`` (``tests/conftest.py``), started once per pytest
process for those of its chain (they run one after another on one worker:
``tests/harness/xdist_modules.py``); the side-by-side benchmark (``bench/vs_ray_bed.py``) starts
one at
its profile's timings when run alone, and runs on the session's bed in ``test_vs_ray``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import chart_install
from control_plane import (
    REPO,
    Authority,
    ControlPlane,
    Process,
    build_binaries,
    spawn,
    wait_until,
)
from kubernetes import client, config
from prometheus_server import PrometheusServer
from ray_on_node import AGENT_PORT, NODE_IP, NODE_SELECTOR, TOLERATIONS, load_images
from real_node import RealNode, build_images, real_node
from service_network import service_network

from keda_ray_scaler.demo.raylets import free_port

NAMESPACE = "ray"
KEDA_NAMESPACE = "keda"  # the control plane's KEDA_CLUSTER_OBJECT_NAMESPACE
CRD = REPO / "manifests" / "kuberay" / "crd"
#: KubeRay's operator: no init container (``ray health-check`` on the head's Service DNS name)
#: and no probes (``wget`` on 52365) injected: the image has no wget, and the init container's
#: name did not resolve before the bed had CoreDNS (:mod:`service_network`). A user's cluster
#: has both.
OPERATOR_ENV = {"ENABLE_INIT_CONTAINER_INJECTION": "false", "ENABLE_PROBES_INJECTION": "false"}
#: How long a Ray cluster's namespace may take to go (its pods' graceful stop included; 19-33 s
#: measured): under ``ControlPlane.kubectl``'s own 120 s, so kubectl's message says what is left.
NAMESPACE_GONE_S = 110


@dataclass
class Bed:
    """What :func:`start_bed` started."""

    workdir: Path
    bin_dir: Path
    images: Path
    refs: dict[str, str]  # image name -> reference, as the kubelet knows them
    cp: ControlPlane
    node: RealNode
    operator: Process  # KubeRay's
    prometheus: PrometheusServer
    api: client.ApiClient
    hpa_sync_s: float  # the timings it was started with
    scrape_s: float
    refresh_s: int

    @property
    def core(self) -> client.CoreV1Api:
        """An admin CoreV1Api."""
        return client.CoreV1Api(self.api)


@contextlib.contextmanager
def start_bed(
    bin_dir: Path,
    images: Path,
    *,
    hpa_sync_s: float = 2.0,
    scrape_s: float = 1.0,
    refresh_s: int = 1,
    kwok: bool = True,
    prefix: str = "krs-cp-",
) -> Iterator[Bed]:
    """Start the bed (module docstring); stop every process by its PID on exit."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    refs = load_images(images)
    with contextlib.ExitStack() as stack:
        cp = stack.enter_context(
            ControlPlane.start(
                workdir / "cp", bin_dir, hpa_sync_s=hpa_sync_s, kwok=kwok, node_ip=NODE_IP
            )
        )
        if kwok:  # only for the deletion-cost race (tests/harness/race.py): its pods never run
            cp.add_nodes(1, prefix="fake-node", cpu="16", memory="64Gi")
        node = stack.enter_context(real_node(cp, bin_dir, images))
        stack.enter_context(service_network(cp, node))
        install_crds(cp, bin_dir)
        (workdir / "logs").mkdir()
        operator = start_operator(cp, bin_dir, workdir / "logs")
        stack.callback(operator.stop)
        (workdir / "prom").mkdir()
        prometheus = stack.enter_context(
            PrometheusServer(
                workdir / "prom", [f"127.0.0.1:{AGENT_PORT}"], scrape_interval_s=scrape_s
            )
        )
        scaler_pki(workdir)
        values = chart_values(refs, prometheus.url)
        values["refreshIntervalSeconds"] = str(refresh_s)
        install_scaler(cp, workdir, bin_dir, values)
        keda_client_tls(cp, workdir)
        api = config.new_client_from_config(config_file=str(cp.admin_kubeconfig))
        core = client.CoreV1Api(api)
        wait_until(lambda: scaler_pods(core) == 1, timeout_s=180, what="the scaler pod Ready")
        yield Bed(
            workdir, bin_dir, images, refs, cp, node, operator, prometheus, api,
            hpa_sync_s, scrape_s, refresh_s,
        )  # fmt: skip


def images_json() -> Path:
    """The locally built images' index (``e2e/images.py``; ``KRS_E2E_IMAGES`` is its directory
    when make built them)."""
    if os.environ.get("KRS_E2E_IMAGES"):
        return Path(os.environ["KRS_E2E_IMAGES"]) / "images.json"
    return build_images()


def bin_dir() -> Path:
    """The bed's binaries: ``KRS_E2E_BIN`` when make built them, else built (or found) now."""
    if os.environ.get("KRS_E2E_BIN"):
        return Path(os.environ["KRS_E2E_BIN"])
    return build_binaries()


@contextlib.contextmanager
def ray_namespace(cp: ControlPlane, logs: Path | None = None) -> Iterator[None]:
    """The namespace of one Ray cluster on the bed, made now and deleted on exit, waited until
    it is gone (every pod stopped, every Secret, ConfigMap and KEDA object with it). With
    ``logs``, the head pod's containers' logs (Ray's head, the agent) are kept there first, as
    ``head-pod.log``: the pods' own logs go with the namespace."""
    cp.kubectl("create", "namespace", NAMESPACE)
    try:
        yield
    finally:
        if logs is not None:
            _keep_head_logs(cp, logs)
        cp.kubectl(
            "delete", "namespace", NAMESPACE, "--wait=true", f"--timeout={NAMESPACE_GONE_S}s"
        )


def _keep_head_logs(cp: ControlPlane, logs: Path) -> None:
    """The head pod's containers' logs into ``logs/head-pod.log`` (best effort: a post-mortem
    aid never fails the teardown)."""
    try:
        kept = cp.kubectl(
            "logs", f"--namespace={NAMESPACE}", "--selector=ray.io/node-type=head",
            "--all-containers", "--prefix", "--tail=-1", check=False,
        )  # fmt: skip
    except subprocess.SubprocessError as exc:
        (logs / "head-pod.log").write_text(f"kubectl logs failed: {exc}\n")
        return
    (logs / "head-pod.log").write_text(kept.stdout + kept.stderr)


def install_crds(cp: ControlPlane, bin_dir: Path) -> None:
    """KubeRay's CRDs (server-side: RayCluster's is too large for the last-applied annotation)
    and the RayWorkerGroup CRD, waited until established."""
    cp.kubectl("apply", "--server-side", "-f", str((bin_dir / "kuberay-crds").resolve()))
    cp.kubectl("apply", "-k", str(CRD))
    cp.wait_crds_established()


def start_operator(cp: ControlPlane, bin_dir: Path, logs: Path) -> Process:
    """KubeRay's operator out of cluster (module docstring); its log in ``logs``."""
    return spawn(
        "kuberay-operator",
        [
            str(bin_dir / "bin" / "kuberay-operator"),
            f"--kubeconfig={cp.admin_kubeconfig}",
            "--enable-leader-election=false",
            f"--metrics-addr=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            "--log-stdout-encoder=console",
            # A RayJob's and a RayService's dashboard and Serve proxy through the API server
            # (services/proxy, pods/proxy): the operator runs on this machine, whose resolver
            # does not know the cluster's names (CoreDNS serves pods only, service_network).
            "--use-kubernetes-proxy",
        ],
        logs,
        OPERATOR_ENV,
    )


def keda_client_tls(cp: ControlPlane, workdir: Path) -> Path:
    """The Secret with KEDA's client certificate from :func:`scaler_pki` in KEDA's namespace
    (what the ClusterTriggerAuthentication reads: KEDA_CLUSTER_OBJECT_NAMESPACE, nothing of it
    in the Ray namespace); the PKI directory."""
    pki = workdir / "scaler-pki"
    cp.kubectl(
        "create",
        "secret",
        "generic",
        "keda-ray-scaler-client-tls",
        f"--namespace={KEDA_NAMESPACE}",
        f"--from-file=ca.crt={pki / 'ca.crt'}",
        f"--from-file=tls.crt={pki / 'client.crt'}",
        f"--from-file=tls.key={pki / 'client.key'}",
    )
    return pki


def scaler_pki(workdir: Path) -> Authority:
    """The scaler's server certificate and KEDA's client certificate, from one CA made here;
    ``scaler-tls/`` holds the server's as its Secret's keys (tls.crt, tls.key, ca.crt). The
    server's names: the node IP (the scaler pod is on the node's network, see SCALER_ADDRESS)
    and loopback."""
    pki = workdir / "scaler-pki"
    pki.mkdir()
    ca = Authority.create("keda-ray-scaler-e2e-scaler-ca")
    ca.pair.write(pki, "ca")
    server = ca.issue("keda-ray-scaler", server=True, hosts=[NODE_IP, "127.0.0.1", "localhost"])
    server.write(pki, "server")
    ca.issue("keda", client=True).write(pki, "client")  # the name serve's --client-identity serves
    tls = workdir / "scaler-tls"
    tls.mkdir()
    server.write(tls, "tls")
    (tls / "ca.crt").write_bytes(ca.pair.cert)
    return ca


#: The scaler pod listens on the node's network, as it did before the bed had kube-proxy
#: (:mod:`service_network`): its certificate names the node IP, and a pod IP would change with
#: every restart of the pod. A user's ScaledObject names the Service
#: (``keda-ray-scaler.keda-ray-scaler.svc:9090``).
SCALER_ADDRESS = f"{NODE_IP}:9090"


def chart_values(images: dict[str, str], prometheus_url: str) -> dict[str, str]:
    """The chart's values on the real node: one replica of the locally built image pinned to
    the node, a fast refresh, KEDA's ClusterTriggerAuthentication; the Ray cluster's agent RBAC
    comes from its own kustomization."""
    repository, _, tag = images["keda-ray-scaler"].rpartition(":")
    return {
        "replicas": "1",
        "refreshIntervalSeconds": "1",
        "image.repository": repository,
        "image.tag": tag,
        "image.pullPolicy": "Never",
        "prometheus.url": prometheus_url,
        "clusterTriggerAuthentication.create": "true",
        **{f"nodeSelector.{_escape(k)}": v for k, v in NODE_SELECTOR.items()},
        **{f"tolerations[0].{k}": v for k, v in TOLERATIONS[0].items()},
    }


def _escape(key: str) -> str:
    """A key for ``helm --set`` (dots in label keys escaped)."""
    return key.replace(".", "\\.")


def install_scaler(cp: ControlPlane, workdir: Path, bin_dir: Path, values: dict[str, str]) -> None:
    """``helm upgrade --install`` the scaler's chart with its real image; the server Secret made
    by hand (no cert-manager here), as docs/getting-started.md says. Then the one change the
    bed makes: the pod on the node's network (see SCALER_ADDRESS)."""
    tls = workdir / "scaler-tls"
    cp.kubectl("create", "namespace", chart_install.NAMESPACE)
    cp.kubectl(
        "create",
        "secret",
        "generic",
        "keda-ray-scaler-tls",
        f"--namespace={chart_install.NAMESPACE}",
        *[f"--from-file={tls / name}" for name in ("tls.crt", "tls.key", "ca.crt")],
    )
    chart_install.install(str(bin_dir / "bin" / "helm"), cp.admin_kubeconfig, values)
    host_network = {"spec": {"template": {"spec": {"hostNetwork": True}}}}
    cp.kubectl(
        "patch",
        "deployment",
        chart_install.RELEASE,
        f"--namespace={chart_install.NAMESPACE}",
        "--type=strategic",
        f"--patch={json.dumps(host_network)}",
    )


def scaler_pods(core: client.CoreV1Api) -> int:
    """Ready scaler pods (none being deleted), or -1 while a deleted one still exists."""
    pods = core.list_namespaced_pod(chart_install.NAMESPACE).items
    if any(p.metadata.deletion_timestamp is not None for p in pods):
        return -1
    return sum(
        1
        for p in pods
        if any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))
    )
