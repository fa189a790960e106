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
from pathlib import Path

import pytest
import pytest_asyncio
from hypothesis import settings as hypothesis_settings

# e2e/build.sh (run by the real-control-plane test when make did not) keeps Go's caches and its
# build cache under the real home.
os.environ.setdefault("KRS_REAL_HOME", os.environ.get("HOME", ""))
_HOME = tempfile.mkdtemp(prefix="krs-home-")
os.environ["HOME"] = _HOME
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)  # each run's home goes with the run
for _var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS", "KUBECONFIG"):
    os.environ.pop(_var, None)

# CI (.ci/run sets KRS_CI) runs Hypothesis's own "ci" profile: derandomized, the same examples
# every run, so a landing is not decided by a property's random draw (one found a new
# counterexample in CI on 2026-11-26). `make test` elsewhere draws new examples every run: that
# is where a new counterexample shows, to become a case of its own.
if os.environ.get("KRS_CI"):
    hypothesis_settings.load_profile("ci")


def _own_network() -> None:
    """An xdist worker in the real-node bed takes a network namespace of its own
    (tests/harness/worker_netns.py), before any test module is imported or thread started. Outside
    xdist nothing is imported here (real_node pulls in the control plane's helpers)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import worker_netns
    from real_node import NODE_IP

    if worker_netns.wanted():
        worker_netns.enter(NODE_IP)


_own_network()


#: directories of the shared beds up now (tests/harness/bed.py): their processes outlive every
#: module
SHARED_BEDS: set[str] = set()


@pytest.fixture(scope="session")
def bed() -> Iterator[object]:
    """The real-node bed (tests/harness/bed.py), started once for the session by the first module
    that
    runs a Ray cluster on it, stopped at the session's end; skips outside the bed's network."""
    from bed import bin_dir, images_json, start_bed
    from ray_on_node import require_bed

    require_bed()
    with start_bed(bin_dir(), images_json()) as started:
        SHARED_BEDS.add(str(started.workdir))  # its processes are no module's leftovers
        yield started


#: The modules that start a real node, in the order they run, one after another on one worker
#: (tests/harness/xdist_modules.py): ``test_real_node`` (a node of its own) first, then those on the
#: session's shared bed (tests/harness/bed.py, the fixture ``bed``), which stays up until the
#: session
#: ends: two real nodes at once would share the node IP and the kubelet's ports. (Two chains on
#: two beds side by side, three workers, starved the machine's 2 CPUs: docs/testing.md.)
REAL_NODE_ORDER = (
    "test_real_node.py",
    "test_bed_networking.py",
    "test_vs_ray.py",
    "test_real_control_plane.py",
    "test_real_kuberay.py",
    "test_real_labels.py",
    "test_real_rayjob.py",
    "test_real_rayservice.py",
    "test_real_rayservice_upgrade.py",
    "test_real_faults.py",
    # not a real node, but it starts three Ray workers at once, each of which Ray 2.60 gives a
    # fixed 30 s to register (ray/_private/node.py): beside a bed's pods they missed it in two
    # CI runs of 2026-11-28; on the bed's worker it runs before or after a bed, never beside one
    "test_exact_demand_ray.py",
    # the same for two more that start raylets: CI of stop 47 and the fresh clone of 2739726 lost
    # test_labels_ray's module (its worker past Ray's 30 s, its GCS not asked in 30 s) and a
    # test_agent_drain node beside the bed's KubeRay seed
    "test_labels_ray.py",
    "test_agent_drain.py",
)
REAL_NODE_MODULES = frozenset(REAL_NODE_ORDER)
#: Under pytest-xdist, the longest modules (minutes each: a real node, a control plane, Ray)
#: run first, so that the short ones fill the other workers around them; a long module picked
#: last would make the run that much longer.
LONG_FIRST = (*REAL_NODE_ORDER, "test_e2e_local.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``make test``'s scheduler (tests/harness/xdist_modules.py): each module one unit of work, the
    real-node modules together one."""
    from xdist_modules import ModuleScheduling

    scheduling = ModuleScheduling(config, log)
    scheduling.real_node_modules = REAL_NODE_MODULES
    return scheduling


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the modules of :data:`LONG_FIRST` first, in that order; in one
    process, the real-node modules last, in :data:`REAL_NODE_ORDER` (so the shared bed comes up
    last and no module runs beside it); the others as collected."""
    order = LONG_FIRST if os.environ.get("PYTEST_XDIST_WORKER") else REAL_NODE_ORDER
    last = len(order) if os.environ.get("PYTEST_XDIST_WORKER") else -1

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return order.index(name) if name in order else last

    items.sort(key=rank)  # stable: each module's tests keep their order


#: module -> the processes it left running (see tests/harness/leftovers.py); printed in the summary
LEFTOVERS: dict[str, list[str]] = {}


@pytest.fixture(autouse=True, scope="module")
def _leftover_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Note the processes a test module started and left running (reported, not failed)."""
    import leftovers

    before = leftovers.ticks_now()
    yield
    left = leftovers.started_since(before, exclude=frozenset({os.getpid()}))
    left = leftovers.outside(left, frozenset(SHARED_BEDS))
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
    ("real_labels", "FIGURES", "e2e-labels"),  # label selectors and priority on KubeRay
    ("real_optin", "FIGURES", "e2e-rayjob"),  # a RayJob opted in by its label
    ("real_serve", "FIGURES", "e2e-rayservice"),  # a RayService opted in by its label
    ("real_serve", "UPGRADE_FIGURES", "e2e-rayservice-upgrade"),  # its upgrade under load
    ("test_real_faults", "FAULT_FIGURES", "e2e-faults"),  # the fault matrix
)


#: the summary lines of pytest-xdist's workers (pytest_testnodedown), printed by the controller
_FROM_WORKERS: list[str] = []


def _summary_lines() -> list[str]:
    """This process's figure lines (``e2e-local: ...``) and leftover reports."""
    import sys

    lines = []
    for module, name, prefix in _SUMMARY_LINES:
        figures = getattr(sys.modules.get(module), name, None)
        if figures:
            lines.append(f"{prefix}: " + _figures(figures))
    for module, left in LEFTOVERS.items():
        lines.append(f"leftover processes after {module}: {len(left)}: " + " | ".join(left[:8]))
    return lines


def _line_order(line: str) -> int:
    prefixes = [prefix for _, _, prefix in _SUMMARY_LINES]
    head = line.split(":", 1)[0]
    return prefixes.index(head) if head in prefixes else len(prefixes)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker sends its summary lines to the controller with its results."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["krs_summary"] = _summary_lines()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller keeps what each worker sent (pytest-xdist's hook)."""
    _FROM_WORKERS.extend(getattr(node, "workeroutput", {}).get("krs_summary", []))


def module_seconds(stats: dict[str, list[object]], top: int = 15) -> str:
    """``module-seconds: a.py 512, b.py 301, ... (N modules, T s)``: setup, call and teardown
    summed by test file (as pytest's ``--durations`` reads them), the slowest first: where the
    suite's time goes, in every CI log."""
    per_module: dict[str, float] = {}
    for reports in stats.values():
        for report in reports:
            duration, nodeid = getattr(report, "duration", None), getattr(report, "nodeid", "")
            if duration is not None and nodeid:
                module = nodeid.split("::", 1)[0]
                per_module[module] = per_module.get(module, 0.0) + float(duration)
    slowest = sorted(per_module.items(), key=lambda kv: -kv[1])[:top]
    parts = ", ".join(f"{Path(m).name} {s:.0f}" for m, s in slowest)
    total = sum(per_module.values())
    return f"module-seconds: {parts} ({len(per_module)} modules, {total:.0f} s)"


def pytest_terminal_summary(terminalreporter: object) -> None:
    """Each real-node module's figures as one line (``e2e-local:``, ``e2e-node:`` ...), from this
    process and from every xdist worker, then the leftover processes, then the seconds each test
    module took."""
    for line in sorted(_FROM_WORKERS + _summary_lines(), key=_line_order):
        terminalreporter.write_line(line)  # type: ignore[attr-defined]
    terminalreporter.write_line(module_seconds(terminalreporter.stats))  # type: ignore[attr-defined]
