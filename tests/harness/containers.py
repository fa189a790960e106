"""A running container of a pod on the real node, seen from this machine (the test runs as root
beside the kubelet): its processes, a file in its root filesystem, a signal to it.

The kubelet's cgroupfs driver puts every process of a container in cgroups whose path ends with
the container's ID (``.../kubepods/<qos>/pod<uid>/<container id>``), so ``/proc/*/cgroup`` names
the container's processes without asking containerd.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any


def container_id(pod: Any, container: str) -> str:
    """The running container's ID (from the pod's status); raises if it does not run."""
    for status in (pod.status and pod.status.container_statuses) or []:
        if status.name == container and status.container_id and status.state.running:
            return str(status.container_id).split("://", 1)[-1]
    raise LookupError(f"{pod.metadata.name}/{container} is not running")


def container_pids(cid: str) -> list[int]:
    """Every process of container ``cid``, its init process first."""
    pids: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if f"/{cid}\n" in (entry / "cgroup").read_text() + "\n":
                pids.append(int(entry.name))
    inside = set(pids)

    def parent(pid: int) -> int:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("PPid:"):
                    return int(line.split()[1])
        return 0

    return sorted(pids, key=lambda pid: (parent(pid) in inside, pid))


def signal_container(
    pod: Any, container: str, sig: signal.Signals, *, main_only: bool = False
) -> None:
    """Send ``sig`` to the container's processes (or its init process only)."""
    pids = container_pids(container_id(pod, container))
    if not pids:
        raise LookupError(f"no process of {pod.metadata.name}/{container}")
    for pid in pids[:1] if main_only else pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def container_file(pod: Any, container: str, path: str) -> str | None:
    """A text file as the container sees it (through its init process's root), or None."""
    pids = container_pids(container_id(pod, container))
    if not pids:
        return None
    try:
        return Path(f"/proc/{pids[0]}/root{path}").read_text()
    except OSError:
        return None
