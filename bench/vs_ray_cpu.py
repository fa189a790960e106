"""CPU seconds of the autoscaling components, per side (issue 16's last figure).

Containers on the real node are read from their cgroup (``cpuacct.usage`` on cgroup v1,
``cpu.stat`` ``usage_usec`` on v2): it counts every process of the container, exited children
too (Ray's sidecar runs ``ray health-check`` at start). Processes on the host (KEDA, Prometheus,
the controller-manager, KubeRay's operator) are read from ``/proc/<pid>/stat`` (user + system,
with their waited-for children). A reading is taken when the cluster is ready and again at the
end of the run; the figure is the difference.

- ours: the agent container, the scaler pod (its pod cgroup), KEDA's operator and metrics
  adapter, Prometheus;
- Ray's: the ``autoscaler`` container of the head pod;
- both (reported apart): the controller-manager (the HPA is inside it) and KubeRay's operator.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from bench.vs_ray_bed import Bed
from bench.vs_ray_clusters import AUTOSCALER, OURS, Cluster

import chart_install  # isort: skip  (tests/, on sys.path through bench.vs_ray_bed)

CGROUP_ROOT = Path("/sys/fs/cgroup")
TICKS = os.sysconf("SC_CLK_TCK")
#: components of each side, and of both
OUR_COMPONENTS = ("agent", "scaler", "keda", "prometheus")
RAY_COMPONENTS = ("autoscaler",)
SHARED_COMPONENTS = ("controller-manager", "kuberay-operator")


@dataclass(frozen=True)
class CpuReading:
    """CPU seconds so far per component (NaN when it could not be read)."""

    seconds: dict[str, float]

    def since(self, before: CpuReading) -> dict[str, float]:
        """Seconds used between ``before`` and this reading."""
        return {k: v - before.seconds.get(k, float("nan")) for k, v in self.seconds.items()}


def cgroup_of(pid: int) -> tuple[Path, str]:
    """The CPU-accounting cgroup directory of ``pid`` and its kind ("v1" or "v2")."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return CGROUP_ROOT / "cpuacct" / path.lstrip("/"), "v1"
        if controllers == "":
            return CGROUP_ROOT / path.lstrip("/"), "v2"
    raise LookupError(f"no cpuacct cgroup for {pid}")


def cgroup_seconds(directory: Path, kind: str) -> float:
    """CPU seconds a cgroup used."""
    if kind == "v1":
        return int((directory / "cpuacct.usage").read_text()) / 1e9
    stat = dict(line.split() for line in (directory / "cpu.stat").read_text().splitlines())
    return int(stat["usage_usec"]) / 1e6


def process_seconds(pid: int) -> float:
    """CPU seconds of a host process and its waited-for children (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime + cutime + cstime) / TICKS


def container_seconds(
    bed: Bed, namespace: str, pod: str, container: str, *, pod_level: bool = False
) -> float:
    """CPU seconds of a container (or, ``pod_level``, of its whole pod)."""
    directory, kind = cgroup_of(bed.node.container_pid(namespace, pod, container))
    return cgroup_seconds(directory.parent if pod_level else directory, kind)


def scaler_pod(bed: Bed) -> str:
    """The scaler's pod: the chart's pod with a ``scaler`` container, not being deleted (the
    chart's controller runs beside it for (f) and (g))."""
    pods = bed.core.list_namespaced_pod(chart_install.NAMESPACE).items
    (pod,) = [
        p.metadata.name
        for p in pods
        if p.metadata.deletion_timestamp is None
        and any(c.name == "scaler" for c in p.spec.containers)
    ]
    return str(pod)


def safe(read: object) -> float:
    """``read()`` as a float; NaN when it raises (a component not there, or gone)."""
    with contextlib.suppress(Exception):
        return float(read())  # type: ignore[operator]
    return float("nan")


def host_seconds(bed: Bed, side: str) -> dict[str, float]:
    """The host processes of ``side`` and of both: the controller-manager and KubeRay's
    operator; ours adds KEDA (operator and metrics adapter) and Prometheus."""
    procs = bed.cp.processes
    seconds = {
        "controller-manager": safe(
            lambda: process_seconds(procs["kube-controller-manager"].popen.pid)
        ),
        "kuberay-operator": safe(lambda: process_seconds(bed.operator.popen.pid)),
    }
    if side == OURS:
        keda = ("keda-operator", "keda-adapter")
        seconds["keda"] = safe(lambda: sum(process_seconds(procs[n].popen.pid) for n in keda))
        prometheus = bed.prometheus.process
        seconds["prometheus"] = safe(lambda: process_seconds(prometheus.pid) if prometheus else 0)
    return seconds


def read(bed: Bed, cluster: Cluster) -> CpuReading:
    """Every component of ``cluster``'s side and of both, now."""
    seconds = host_seconds(bed, cluster.side)
    ns = "ray"
    if cluster.side == OURS:
        seconds["agent"] = safe(lambda: container_seconds(bed, ns, cluster.head_pod, "agent"))
        seconds["scaler"] = safe(
            lambda: container_seconds(
                bed, chart_install.NAMESPACE, scaler_pod(bed), "scaler", pod_level=True
            )
        )
    else:
        seconds["autoscaler"] = safe(
            lambda: container_seconds(bed, ns, cluster.head_pod, AUTOSCALER)
        )
    return CpuReading(seconds)
