"""Install the scaler from the Helm chart on a test control plane, and run it as a process.

For the real-control-plane test (whose kubelet is a stand-in: the scaler runs as a local
process, not in a pod)::

    install(helm, cp.admin_kubeconfig, E2E_VALUES)             # helm upgrade --install
    argv = local_serve_args(helm, E2E_VALUES, tls_dir=pki, prometheus_url=url, port=port)
    spawn("scaler", [keda_ray_scaler_bin, *argv], ...)

``install`` makes the release's objects (Deployment, Services, PDB, ServiceAccount, KEDA's
ClusterTriggerAuthentication, agent RBAC in the Ray namespace) exactly as a user's ``helm install``
does; ``local_serve_args`` is the chart Deployment's container ``args`` with the mounted paths
replaced by ``tls_dir`` (which holds ``tls.crt``, ``tls.key`` and ``ca.crt``, the Secret's keys)
and the listening flags by loopback ones, so the process runs what the chart runs in a pod.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "charts" / "keda-ray-scaler"
RELEASE = "keda-ray-scaler"
NAMESPACE = "keda-ray-scaler"
KUBE_VERSION = "v1.37.2"  # e2e/versions.env KUBERNETES_VERSION
_MOUNTED_TLS = "/etc/keda-ray-scaler/tls/"

#: Values of the real-control-plane test: one replica, KEDA's ClusterTriggerAuthentication and
#: the Ray namespace's agent RBAC made by the chart; TLS Secrets made by the test (no cert-manager
#: there).
E2E_VALUES: dict[str, str] = {
    "replicas": "1",
    "clusterTriggerAuthentication.create": "true",
    "agent.rbac.create": "true",
    "agent.rbac.namespaces": "{ray}",
    "refreshIntervalSeconds": "1",
}


def set_flags(values: Mapping[str, str]) -> list[str]:
    """``--set KEY=VALUE`` for each value."""
    return [arg for key, value in values.items() for arg in ("--set", f"{key}={value}")]


def install(
    helm: str,
    kubeconfig: Path,
    values: Mapping[str, str],
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
) -> str:
    """``helm upgrade --install`` the chart (namespace created); helm's output (the release's
    NOTES among it); raises with helm's stderr."""
    argv = [helm, "upgrade", "--install", release, str(CHART), f"--kubeconfig={kubeconfig}"]
    argv += ["-n", namespace, "--create-namespace", *set_flags(values)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"helm upgrade --install: {done.stderr.strip()}")
    return done.stdout


def render(helm: str, values: Mapping[str, str], *, release: str = RELEASE) -> list[Any]:
    """``helm template`` of the chart: the objects."""
    argv = [helm, "template", release, str(CHART), "-n", NAMESPACE]
    argv += [f"--kube-version={KUBE_VERSION}", *set_flags(values)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"helm template: {done.stderr.strip()}")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def local_serve_args(
    helm: str,
    values: Mapping[str, str],
    *,
    tls_dir: Path,
    prometheus_url: str,
    port: int,
    host: str = "127.0.0.1",
) -> list[str]:
    """The chart's ``serve`` args for a process on this machine (TLS files from ``tls_dir``)."""
    (deployment,) = [o for o in render(helm, values) if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    local = {
        "--port": str(port),
        "--health-port": "0",
        "--metrics-port": "-1",
        "--prometheus-url": prometheus_url,
    }
    out: list[str] = []
    for arg in container["args"]:
        flag, _, value = arg.partition("=")
        if flag in local:
            value = local[flag]
        elif value.startswith(_MOUNTED_TLS):
            value = str(tls_dir / value.removeprefix(_MOUNTED_TLS))
        out.append(f"{flag}={value}" if value else flag)
    return [*out, f"--host={host}"]
