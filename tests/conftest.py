"""Suite-wide isolation: tests never read the developer's home directory.

Ray 2.60 turns token authentication on when ``~/.ray/auth_token`` exists, and the kubernetes
client reads ``~/.kube/config``: a test run must not depend on what the machine's home holds, so
HOME points at a fresh directory and Ray's auth variables are cleared before anything imports Ray.
Tests that want auth on set it explicitly for the processes they start.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

# e2e/build.sh (run by the real-control-plane test when make did not) keeps Go's caches and its
# build cache under the real home.
os.environ.setdefault("KRS_REAL_HOME", os.environ.get("HOME", ""))
_HOME = tempfile.mkdtemp(prefix="krs-home-")
os.environ["HOME"] = _HOME
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)  # each run's home goes with the run
for _var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS", "KUBECONFIG"):
    os.environ.pop(_var, None)


#: module -> the processes it left running (see tests/leftovers.py); printed in the summary
LEFTOVERS: dict[str, list[str]] = {}


@pytest.fixture(autouse=True, scope="module")
def _leftover_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Note the processes a test module started and left running (reported, not failed)."""
    import leftovers

    before = leftovers.ticks_now()
    yield
    left = leftovers.started_since(before, exclude=frozenset({os.getpid()}))
    if left:
        LEFTOVERS[request.module.__name__] = [f"{p.pid} {p.cmd[:160]}" for p in left]


@pytest.fixture(autouse=True)
def _asyncio_tasks_checked(request: pytest.FixtureRequest) -> None:
    """Every ``async def`` test fails when it leaves an asyncio task running (task_leaks.py)."""
    if inspect.iscoroutinefunction(getattr(request.node, "function", None)):
        request.getfixturevalue("_no_task_left")


@pytest_asyncio.fixture
async def _no_task_left() -> AsyncIterator[None]:
    """Set up before the test's own fixtures, so checked after they have cleaned up."""
    import task_leaks

    before = set(asyncio.all_tasks())
    yield
    left = await task_leaks.left_running(exclude=before)
    assert not left, f"asyncio tasks left running by the test: {left}"


def pytest_runtest_makereport(item: object, call: object) -> None:
    """A failing test on a real node gets the last log lines of every container that died
    there (``kubectl logs --previous``) as a report section."""
    import sys

    node_module = sys.modules.get("real_node")
    if node_module is None or getattr(call, "excinfo", None) is None:
        return
    for node in list(getattr(node_module, "ACTIVE", ())):
        try:
            logs = node.dead_container_logs()
        except Exception as exc:  # the control plane may be what failed
            logs = f"(container logs unavailable: {exc})"
        if logs:
            item.add_report_section(  # type: ignore[attr-defined]
                call.when,  # type: ignore[attr-defined]
                f"dead containers on {node.name}",
                logs,
            )


def _figures(figures: dict[str, object]) -> str:
    """``key value; ...``; the kind of node that ran the workers as ``node=real``."""
    return "; ".join(f"{k}={v}" if k == "node" else f"{k} {v}" for k, v in figures.items())


#: (module, its figures' name, the summary line's prefix), in the order the lines are printed
_SUMMARY_LINES = (
    ("real_loop", "FIGURES", "e2e-local"),  # the real-control-plane test (Deployment mode)
    ("real_node", "FIGURES", "e2e-node"),  # the real node's own tests
    ("real_kuberay", "FIGURES", "e2e-kuberay"),  # KubeRay mode's test
    ("test_real_faults", "FAULT_FIGURES", "e2e-faults"),  # the fault matrix
)


def pytest_terminal_summary(terminalreporter: object) -> None:
    """Each real-node module's figures as one line (``e2e-local:``, ``e2e-node:`` ...)."""
    import sys

    for module, name, prefix in _SUMMARY_LINES:
        figures = getattr(sys.modules.get(module), name, None)
        if figures:
            line = f"{prefix}: " + _figures(figures)
            terminalreporter.write_line(line)  # type: ignore[attr-defined]
    for module, left in LEFTOVERS.items():
        terminalreporter.write_line(  # type: ignore[attr-defined]
            f"leftover processes after {module}: {len(left)}: " + " | ".join(left[:8])
        )
