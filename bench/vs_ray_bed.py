"""The test bed both sides of the side-by-side benchmark share (issue 16).

:func:`bed` starts, inside the bed's network namespace (``e2e/netns.sh``), what
``tests/real_kuberay.py``'s ``kuberay_loop`` starts, at a :class:`~bench.vs_ray_profile.Profile`'s
timings, but **no Ray cluster**: the control plane and KEDA (HPA sync ``hpa_sync_s``), one real
node, KubeRay's CRDs and the real KubeRay 1.5.1 operator, Prometheus scraping the agent every
``scrape_s``, the scaler from the Helm chart (``refreshIntervalSeconds``), KEDA's client
certificate, and a watch of the worker pods. Each side's RayCluster is applied and deleted by
:mod:`bench.vs_ray_clusters`, so both start from the same empty namespace.

The tests' modules (``tests/``) are imported from here: the benchmark runs exactly the bed the
tests run.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))

from control_plane import ControlPlane, Process, spawn, wait_until  # noqa: E402
from kubernetes import client, config  # noqa: E402
from pod_watch import PodWatch  # noqa: E402
from prometheus_server import PrometheusServer  # noqa: E402
from ray_on_node import AGENT_PORT, load_images, make_share  # noqa: E402
from real_kuberay import CLUSTER, OPERATOR_ENV, install_crds  # noqa: E402
from real_loop import (  # noqa: E402
    NAMESPACE,
    _client_tls_secret,
    _scaler_pki,
    chart_values,
    install_scaler,
    scaler_pods,
)
from real_node import RealNode, real_node  # noqa: E402

from bench.vs_ray_profile import Profile  # noqa: E402
from keda_ray_scaler.demo.raylets import free_port  # noqa: E402


@dataclass
class Bed:
    """What :func:`bed` started."""

    profile: Profile
    workdir: Path
    share: Path
    images: dict[str, str]
    cp: ControlPlane
    node: RealNode
    operator: Process
    prometheus: PrometheusServer
    pods: PodWatch  # every worker pod of the cluster "demo", both sides
    core: client.CoreV1Api
    custom: client.CustomObjectsApi


def bin_dir() -> Path:
    """The bed's binaries (``KRS_E2E_BIN``, set by the Makefile's ``BED``)."""
    return Path(os.environ["KRS_E2E_BIN"])


def images_json() -> Path:
    """The bed's images' index (``KRS_E2E_IMAGES``, set by the Makefile's ``BED``)."""
    return Path(os.environ["KRS_E2E_IMAGES"]) / "images.json"


def _start_operator(cp: ControlPlane, binaries: Path, logs: Path) -> Process:
    """KubeRay's operator out of cluster, as ``kuberay_loop`` runs it."""
    return spawn(
        "kuberay-operator",
        [
            str(binaries / "bin" / "kuberay-operator"),
            f"--kubeconfig={cp.admin_kubeconfig}",
            "--enable-leader-election=false",
            f"--metrics-addr=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            "--log-stdout-encoder=console",
        ],
        logs,
        OPERATOR_ENV,
    )


@contextlib.contextmanager
def bed(profile: Profile) -> Iterator[Bed]:
    """Start the shared bed at ``profile``'s timings; stop everything by PID on exit."""
    workdir = Path(tempfile.mkdtemp(prefix="krs-vs-ray-"))
    binaries, images = bin_dir(), images_json()
    refs = load_images(images)
    with contextlib.ExitStack() as stack:
        cp = stack.enter_context(
            ControlPlane.start(workdir / "cp", binaries, hpa_sync_s=profile.hpa_sync_s, kwok=False)
        )
        node = stack.enter_context(real_node(cp, binaries, images))
        install_crds(cp, binaries)
        (workdir / "logs").mkdir()
        operator = _start_operator(cp, binaries, workdir / "logs")
        stack.callback(operator.stop)
        share = make_share(workdir / "share")
        api = config.new_client_from_config(config_file=str(cp.admin_kubeconfig))
        core = client.CoreV1Api(api)
        (workdir / "prom").mkdir()
        prometheus = stack.enter_context(
            PrometheusServer(
                workdir / "prom", [f"127.0.0.1:{AGENT_PORT}"], scrape_interval_s=profile.scrape_s
            )
        )
        _scaler_pki(workdir)
        values = chart_values(refs, prometheus.url)
        values["refreshIntervalSeconds"] = str(profile.refresh_s)
        install_scaler(cp, workdir, binaries, values)
        _client_tls_secret(cp, workdir)  # also makes the namespace "ray"
        wait_until(lambda: scaler_pods(core) == 1, timeout_s=180, what="the scaler pod Ready")
        pods = stack.enter_context(
            PodWatch(core, NAMESPACE, f"ray.io/cluster={CLUSTER},ray.io/node-type=worker")
        )
        stack.callback(pods.request_stop)  # first on the way out
        yield Bed(
            profile, workdir, share, refs, cp, node, operator, prometheus, pods, core,
            client.CustomObjectsApi(api),
        )  # fmt: skip
