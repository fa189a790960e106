"""Small things a newcomer trips over: bench's --help and quick mode, install, the license."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from bench.__main__ import QUICK, bench_modules, build_parser

ROOT = Path(__file__).resolve().parents[2]


def bench(*argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m bench ARGV`` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "bench", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_bench_help_prints_usage_and_exits_0() -> None:
    """``python -m bench --help`` prints the usage with --quick (it used to be a filter)."""
    done = bench("--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: python -m bench [-h] [--quick] [FILTER ...]")


def test_bench_filter_matching_nothing_exits_2() -> None:
    """A filter that selects no benchmark is bad input: exit 2 and one line."""
    done = bench("nosuchbench")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["python -m bench: no benchmark matches ['nosuchbench']"]


def test_quick_mode_runs_existing_modules_and_lowers_known_constants() -> None:
    """Every module --quick names exists, and every constant it lowers exists in it."""
    import importlib

    assert set(QUICK) <= set(bench_modules([]))
    assert "scaler_bench" not in QUICK  # the 20 s load phases are not quick
    for name, constants in QUICK.items():
        module = importlib.import_module(f"bench.{name}")
        for constant, value in constants.items():
            assert isinstance(getattr(module, constant), int)
            assert value < getattr(module, constant)
    assert build_parser().parse_args(["--quick", "planner"]).filters == ["planner"]


def test_make_bench_quick_runs_the_quick_mode() -> None:
    """``make bench-quick`` runs ``python -m bench --quick``."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", "install", "bench-quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("python -m bench --quick")


def test_debian_install_brings_no_recommends_and_starts_no_service() -> None:
    """The Debian step: no recommends; service starts refused; the unit disabled under systemd."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "deps-debian"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    recipe = done.stdout
    assert "apt-get install -y -qq --no-install-recommends prometheus shellcheck" in recipe
    assert "exit 101" in recipe and "/usr/sbin/policy-rc.d" in recipe
    assert "systemctl disable --now prometheus" in recipe


def test_license_is_an_spdx_string_with_its_file() -> None:
    """project.license is the SPDX id (not the deprecated table) and LICENSE is Apache-2.0."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_make_install_includes_the_demo_extra() -> None:
    """The venv ``make install`` builds has the demo's PNG dependency (matplotlib)."""
    assert "-e '.[agent,bench,dev,demo]'" in (ROOT / "Makefile").read_text()


def test_the_module_seconds_line_sums_each_files_phases_slowest_first() -> None:
    """CI's log says where the suite's time goes: setup, call and teardown by test file."""
    from types import SimpleNamespace as Report

    from conftest import module_seconds

    stats = {
        "passed": [
            Report(nodeid="tests/test_a.py::t1", duration=2.0),
            Report(nodeid="tests/test_b.py::t[x]", duration=5.0),
        ],
        "": [Report(nodeid="tests/test_a.py::t1", duration=4.4)],  # a setup's report
        "warnings": [Report(message="no duration, no nodeid")],
    }
    assert module_seconds(stats, top=1) == "module-seconds: test_a.py 6 (2 modules, 11 s)"


def _e2e_local_only() -> list[str]:
    """The Makefile's E2E_LOCAL_ONLY, as make expands it."""
    shown = subprocess.run(
        [
            "make",
            "-s",
            "--no-print-directory",
            "--eval",
            "krs-show: ; @echo $(E2E_LOCAL_ONLY)",
            "krs-show",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return shown.stdout.split()


def test_every_module_that_starts_a_real_node_runs_in_e2e_local_only() -> None:
    """A module that imports the real node or the real loop is in E2E_LOCAL_ONLY (``make test``,
    CI, ignores it; ``make e2e-local`` runs it), and every path the list names exists: a typo
    there would run a real node in CI and leave it out of e2e-local."""
    listed = _e2e_local_only()
    missing = [path for path in listed if not (ROOT / path).is_file()]
    assert not missing, f"E2E_LOCAL_ONLY names files that do not exist: {missing}"
    starts_a_node = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests" / "real").rglob("test_*.py")
        if any(
            line.startswith(("from real_loop import", "from real_node import", "import real_loop"))
            for line in path.read_text().splitlines()
        )
    )
    assert len(starts_a_node) >= 10  # the detection itself still finds the real-node modules
    assert sorted(set(starts_a_node) - set(listed)) == []
