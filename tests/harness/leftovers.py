"""Processes a test module left running: read from ``/proc``, reported in the run's summary.

A test stops what it starts, by PID. A process that outlives its module (a Ray node, a
control-plane binary, a container's shim) takes CPU from every module after it, and on 2 cores
that is enough to turn a later real-control-plane test red far from its cause. The report names
the module and the commands, so such a failure is traced to where it began. It only reports:
other work on the machine (a developer's shell, another run) shows up too, and CI has none.
Only processes in this process's network namespace count: under pytest-xdist each worker has its
own (tests/harness/worker_netns.py), so one worker's modules are not blamed for another's processes
(a
containerd shim, reparented to init, is still in the namespace of the node that started it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class Proc:
    """A process as ``/proc`` shows it."""

    pid: int
    started_ticks: int  # field 22 of /proc/PID/stat: clock ticks after boot
    cmd: str
    ppid: int = 0  # field 4


def processes() -> list[Proc]:
    """Every user-space process now (kernel threads have no command line and are left out)."""
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        if not cmd.strip():
            continue
        # the command name in stat may hold spaces and parentheses: split after the last ")"
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":  # a zombie holds no CPU
            continue
        found.append(Proc(int(entry.name), int(fields[19]), cmd.strip(), int(fields[1])))
    return found


def ticks_now() -> int:
    """Clock ticks since boot, in the unit of :attr:`Proc.started_ticks`."""
    uptime_s = float((_PROC / "uptime").read_text().split()[0])
    return int(uptime_s * os.sysconf("SC_CLK_TCK"))


def started_since(ticks: int, *, exclude: frozenset[int] = frozenset()) -> list[Proc]:
    """Processes of this network namespace alive now that started at or after ``ticks``, but
    those in ``exclude``."""
    ours = _netns("self")
    return [
        p
        for p in processes()
        if p.started_ticks >= ticks and p.pid not in exclude and _netns(str(p.pid)) == ours
    ]


def _netns(pid: str) -> str:
    """The network namespace of ``pid`` (``net:[inode]``), or "" when it is gone."""
    try:
        return os.readlink(_PROC / pid / "ns" / "net")
    except OSError:
        return ""


def outside(procs: list[Proc], markers: frozenset[str]) -> list[Proc]:
    """``procs`` but those whose command line, or an ancestor's, holds one of ``markers`` (the
    session's shared bed's directory: its control plane, node and containers' shims name it)."""
    if not markers:
        return procs
    by_pid = {p.pid: p for p in processes()}

    def marked(proc: Proc | None, depth: int = 0) -> bool:
        if proc is None or depth > 64:
            return False
        if any(m in proc.cmd for m in markers):
            return True
        return proc.ppid > 1 and marked(by_pid.get(proc.ppid), depth + 1)

    return [p for p in procs if not marked(by_pid.get(p.pid, p))]
