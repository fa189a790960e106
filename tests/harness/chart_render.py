"""The Helm chart rendered with ``helm template``, and the values combinations the chart tests
render: for the chart's tests and the least-privilege checks.

Helm is the pinned ``helm.sh/helm/v3/cmd/helm`` that ``e2e/build.sh`` builds into the set dir
(``$KRS_E2E_BIN/bin/helm``), or ``$KRS_HELM``, or a ``helm`` on PATH; the fixture ``helm``
(module-scoped, skips without one) works in a test module that imports it by name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_install import CHART, KUBE_VERSION, NAMESPACE, RELEASE

SIDECAR = CHART / "examples" / "agent-sidecar.yaml"
NO_CRDS_HERE = ("cert-manager.io/", "monitoring.coreos.com/")

Obj = dict[str, Any]

#: Values combinations rendered and validated, by name.
VALUES: dict[str, list[str]] = {
    "defaults": [],
    "keda-side": [
        "certManager.enabled=true",
        "clusterTriggerAuthentication.create=true",
        "networkPolicy.enabled=true",
    ],
    "cert-manager-self-signed": [
        "certManager.enabled=true",
        "clusterTriggerAuthentication.create=true",
        "agent.rbac.create=true",
        "agent.rbac.namespaces={ray,ray-b}",
    ],
    "cert-manager-existing-issuer": [
        "certManager.enabled=true",
        "certManager.issuerRef.name=corp-ca",
    ],
    "prometheus-auth": [
        "prometheus.url=https://prometheus.example:9090",
        "prometheus.bearerToken.secretName=prom-token",
        "prometheus.basicAuth.user=scaler",
        "prometheus.basicAuth.passwordSecretName=prom-basic",
        "prometheus.ca.configMapName=prom-ca",
        "prometheus.sealMasterKey.secretName=seal-master",
    ],
    "kuberay": [
        "agent.rbac.namespaces={ray}",
        "agent.rbac.create=true",
        "agent.rbac.mode=kuberay",
        "agent.rbac.rayClusters={demo}",
        "agent.rbac.rayWorkerGroups={ray-demo-cpu,ray-demo-gpu}",
        "agent.sidecar.configMap=true",
        "agent.sidecar.rayCluster=demo",
        "agent.sidecar.authToken.secretName=demo",
        "rayWorkerGroupCRD.create=true",
    ],
    "controller": [
        "controller.enabled=true",
        "controller.namespaces={ray,ray-b}",
        "certManager.enabled=true",
        "clusterTriggerAuthentication.create=true",
        "rayWorkerGroupCRD.create=true",
    ],
    "monitoring-sized": [
        "serviceMonitor.enabled=true",
        "podMonitor.enabled=true",
        "podMonitor.agent=true",
        "replicas=3",
        "resources.requests.cpu=500m",
        "podDisruptionBudget.enabled=false",
        "image.tag=0.2.0",
        "limits.maxSeries=1000",
        "limits.unknownRechecksPerSecond=2.5",
        "crossNamespaceReaders={team-a=ray}",
    ],
}


def find_helm() -> str | None:
    """The helm binary: $KRS_HELM, the e2e build set's, or one on PATH."""
    if os.environ.get("KRS_HELM"):
        return os.environ["KRS_HELM"]
    built = Path(os.environ.get("KRS_E2E_BIN", "/nonexistent")) / "bin" / "helm"
    return str(built) if built.exists() else shutil.which("helm")


@pytest.fixture(scope="module")
def helm() -> str:
    """The helm binary (skips without one)."""
    found = find_helm()
    if found is None:
        pytest.skip("no helm: `make e2e-build` builds it (e2e/build.sh), or set KRS_HELM")
    return found


#: KEDA's namespace, the chart's default ``clusterTriggerAuthentication.kedaNamespace``.
KEDA_NAMESPACE = "keda"


def release_namespace(sets: tuple[str, ...]) -> str:
    """Where a release with ``sets`` is installed: KEDA's namespace when the chart makes its own
    CA (cert-manager on, no issuerRef: its namespaced Issuer must be usable from KEDA's namespace
    only, so the render refuses any other), else the bed's namespace."""
    generated_ca = "certManager.enabled=true" in sets and not any("issuerRef" in s for s in sets)
    if not generated_ca:
        return NAMESPACE
    named = [
        s.split("=", 1)[1]
        for s in sets
        if s.startswith("clusterTriggerAuthentication.kedaNamespace=")
    ]
    return named[-1] if named else KEDA_NAMESPACE


def template(
    helm: str, *sets: str, release: str = RELEASE, namespace: str | None = None
) -> list[Obj]:
    """``helm template`` with ``--set`` values into ``namespace`` (default: where the README
    installs such a release, :func:`release_namespace`); the rendered objects."""
    ns = namespace or release_namespace(sets)
    out = run_helm(helm, "template", release, str(CHART), *sets, "-n", ns)
    return [d for d in yaml.safe_load_all(out) if d]


def run_helm(helm: str, command: str, *args: str) -> str:
    argv = [helm, command, *args]
    if command == "template":
        argv = [a for s in args for a in (("--set", s) if "=" in s else (s,))]
        if "-n" not in argv:
            argv = [*argv, "-n", NAMESPACE]
        argv = [helm, command, *argv, f"--kube-version={KUBE_VERSION}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"helm {command} failed: {done.stderr.strip()}")
    return done.stdout
