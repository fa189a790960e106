"""The test bed both sides of the side-by-side benchmark share (issue 16).

:func:`bed` starts, inside the bed's network namespace (``e2e/netns.sh``), what
``tests/harness/real_kuberay.py``'s ``kuberay_loop`` starts, at a
:class:`~bench.vs_ray_profile.Profile`'s
timings, but **no Ray cluster**: the control plane and KEDA (HPA sync ``hpa_sync_s``), one real
node, KubeRay's CRDs and the real KubeRay 1.5.1 operator, Prometheus scraping the agent every
``scrape_s``, the scaler from the Helm chart (``refreshIntervalSeconds``), KEDA's client
certificate, and a watch of the worker pods. Each side's RayCluster is applied and deleted by
:mod:`bench.vs_ray_clusters`, so both start from the same empty namespace.

The bed is ``tests/harness/bed.py``'s (its modules are imported from here): the benchmark runs
exactly
the bed the tests run.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "tests" / "harness") not in sys.path:
    sys.path.insert(0, str(REPO / "tests" / "harness"))

from bed import NAMESPACE, bin_dir, images_json, ray_namespace, start_bed  # noqa: E402
from bed import Bed as TestBed  # noqa: E402
from control_plane import ControlPlane, Process  # noqa: E402
from kubernetes import client  # noqa: E402
from pod_watch import PodWatch  # noqa: E402
from prometheus_server import PrometheusServer  # noqa: E402
from ray_on_node import make_share  # noqa: E402
from real_kuberay import CLUSTER  # noqa: E402
from real_node import RealNode  # noqa: E402

from bench.vs_ray_profile import Profile  # noqa: E402


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
    test_bed: TestBed  # the tests' bed itself (the RayJob and RayService workloads use it)


@contextlib.contextmanager
def bed(profile: Profile) -> Iterator[Bed]:
    """Start the shared bed at ``profile``'s timings (``tests/harness/bed.py``, no kwok node), the
    namespace ``ray`` on it; stop everything by PID on exit."""
    with start_bed(
        bin_dir(),
        images_json(),
        hpa_sync_s=profile.hpa_sync_s,
        scrape_s=profile.scrape_s,
        refresh_s=profile.refresh_s,
        kwok=False,
        prefix="krs-vs-ray-",
    ) as started, on_bed(started, profile) as ready:  # fmt: skip
        yield ready


@contextlib.contextmanager
def on_bed(started: TestBed, profile: Profile) -> Iterator[Bed]:
    """The benchmark on a bed already up (the tests' session bed:
    ``tests/real/node/test_vs_ray.py``),
    whose timings must be ``profile``'s: the namespace ``ray`` made for the run and deleted
    after it, the share and the pod watch."""
    timings = (started.hpa_sync_s, started.scrape_s, started.refresh_s)
    wanted = (profile.hpa_sync_s, profile.scrape_s, profile.refresh_s)
    if timings != wanted:
        raise ValueError(f"the bed's HPA sync, scrape and refresh {timings} are not {wanted}")
    with contextlib.ExitStack() as stack:
        stack.enter_context(ray_namespace(started.cp))
        share = make_share(Path(tempfile.mkdtemp(prefix="vs-ray-", dir=started.workdir)) / "share")
        core = started.core
        pods = stack.enter_context(
            PodWatch(core, NAMESPACE, f"ray.io/cluster={CLUSTER},ray.io/node-type=worker")
        )
        stack.callback(pods.request_stop)  # first on the way out
        yield Bed(
            profile, started.workdir, share, started.refs, started.cp, started.node,
            started.operator, started.prometheus, pods, core, client.CustomObjectsApi(started.api),
            started,
        )  # fmt: skip
