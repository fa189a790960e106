"""Each pytest-xdist worker in a network namespace of its own, made like ``e2e/netns.sh``'s.

``make test`` runs the suite on several workers (pytest-xdist, one test module a worker at a
time), inside ``e2e/netns.sh``. Two modules that each start a real node (kubelet on
``10.200.0.1:10250``, a CNI bridge, pods on ``10.201.0.0/24``) or a Ray head cannot share one
network: so each worker, before it imports a test or starts a thread of its own, moves its main
thread into a fresh network namespace with ``lo`` up, ``127.0.0.1`` and the node IP, and no route
out. What the worker starts from then on (processes, threads) is in that namespace; the worker's
channel to the controller is a pipe, not a socket, and is unaffected. Everything else the real
node touches is already per node (its state directory, its cgroups, its IPAM directory).

Python 3.11 has no ``os.unshare`` (3.12 has): ``unshare(2)`` is called through ctypes.
"""

from __future__ import annotations

import ctypes
import os
import subprocess

CLONE_NEWNET = 0x40000000  # <sched.h>


def wanted() -> bool:
    """True in an xdist worker running as root inside ``e2e/netns.sh`` (the real-node bed)."""
    from real_node import in_node_netns

    return bool(os.environ.get("PYTEST_XDIST_WORKER")) and os.geteuid() == 0 and in_node_netns()


def enter(node_ip: str) -> None:
    """Move this thread (and what it starts later) into a new network namespace holding only
    ``lo`` with 127.0.0.1/8 and ``node_ip``/32."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare(CLONE_NEWNET): {os.strerror(errno)}")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "addr", "add", f"{node_ip}/32", "dev", "lo"], check=True)
