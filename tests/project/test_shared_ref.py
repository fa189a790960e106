"""Tests that read ../shared skip with a reason on a developer's machine and fail in CI."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_ref import REQUIRE_ENV, missing

ROOT = Path(__file__).resolve().parents[2]


def test_absent_copy_skips_with_the_path_as_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without KRS_REQUIRE_SHARED a missing copy is a skip that names the path."""
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="/nowhere/crds"):
        missing("KEDA's CRDs", Path("/nowhere/crds"))


def test_absent_copy_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    """With KRS_REQUIRE_SHARED=1 (CI) a missing copy fails the test."""
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="KRS_REQUIRE_SHARED=1 requires it"):
        missing("KEDA's proto", Path("/nowhere/externalscaler.proto"))


def test_ci_requires_shared_and_the_summary_shows_skip_reasons() -> None:
    """.ci/run exports KRS_REQUIRE_SHARED=1; pytest's addopts include -rs."""
    assert f"export {REQUIRE_ENV}=1" in (ROOT / ".ci" / "run").read_text()
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "-rs" in config["tool"]["pytest"]["ini_options"]["addopts"].split()


def test_a_test_run_leaves_no_home_directory_behind(tmp_path: Path) -> None:
    """conftest's per-run HOME (krs-home-*) is removed when the run ends."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "skips"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
    assert list(tmp_path.glob("krs-home-*")) == []
