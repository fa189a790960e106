"""The parts of e2e/docker/ that need no Docker Engine: the runtime wrapper's edits, the wheel
index, the build context's copy, the build log's counts, the base image's name."""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from e2e import images
from e2e.docker import build

ROOT = Path(__file__).resolve().parents[3]
WRAPPER = ROOT / "e2e" / "docker" / "krs-runc"


def bounding_caps() -> set[str]:
    """``CAP_*`` names in this process's bounding set."""
    status = Path("/proc/self/status").read_text()
    bounding = int(re.search(r"^CapBnd:\s*(\w+)", status, re.M)[1], 16)  # type: ignore[index]
    return {f"CAP_{name}" for bit, name in enumerate(CAPS) if bounding >> bit & 1}


CAPS = re.findall(r'"(\w+)"', WRAPPER.read_text().split("CAPS = [")[1].split("]")[0])


@pytest.fixture
def fake_runc(tmp_path: Path) -> Path:
    """A ``runc`` first on PATH that records its argv and the bundle's config.json."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    runc = bin_dir / "runc"
    runc.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"json.dump({{'argv': sys.argv[1:]}}, open({str(tmp_path / 'seen.json')!r}, 'w'))\n"
    )
    runc.chmod(0o755)
    return bin_dir


def run_wrapper(bin_dir: Path, *argv: str) -> dict[str, Any]:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run([str(WRAPPER), *argv], env=env, check=True)
    seen: dict[str, Any] = json.loads((bin_dir.parent / "seen.json").read_text())
    return seen


def test_the_capability_table_is_linuxs_numbering() -> None:
    """CAP_SYS_RESOURCE is bit 24 and CAP_CHECKPOINT_RESTORE bit 40, as in linux/capability.h."""
    assert CAPS.index("SYS_RESOURCE") == 24 and CAPS.index("CHECKPOINT_RESTORE") == 40


def test_create_keeps_what_root_can_grant_and_runs_runc_with_the_same_argv(
    tmp_path: Path, fake_runc: Path
) -> None:
    """Every capability asked for, an rlimit past root's hard limit and an OOM score of -1000
    become what this process may grant; runc then gets the arguments unchanged."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    every = [f"CAP_{name}" for name in CAPS]
    process = {
        "capabilities": {s: every for s in ("bounding", "effective", "permitted")},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 2**40, "soft": 2**40}],
        "oomScoreAdj": -1000,
    }
    (bundle / "config.json").write_text(json.dumps({"ociVersion": "1.0.2", "process": process}))
    argv = ["--root", "/run/x", "create", "--bundle", str(bundle), "--pid-file", "p", "ctr-1"]
    assert run_wrapper(fake_runc, *argv) == {"argv": argv}
    fitted = json.loads((bundle / "config.json").read_text())["process"]
    assert {s: set(c) for s, c in fitted["capabilities"].items()} == dict.fromkeys(
        ("bounding", "effective", "permitted"), bounding_caps()
    )
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert fitted["rlimits"] == [{"type": "RLIMIT_NOFILE", "hard": hard, "soft": hard}]
    assert fitted["oomScoreAdj"] == max(-1000, int(Path("/proc/self/oom_score_adj").read_text()))


def test_exec_fits_its_process_file_and_other_commands_pass_through(
    tmp_path: Path, fake_runc: Path
) -> None:
    """``runc exec --process FILE`` (``docker exec --privileged``) is fitted the same way;
    ``state`` and the rest are runc's alone."""
    process = tmp_path / "process.json"
    process.write_text(json.dumps({"capabilities": {"bounding": ["CAP_SYS_RESOURCE"]}}))
    run_wrapper(fake_runc, "exec", "--process", str(process), "ctr-1")
    expected = ["CAP_SYS_RESOURCE"] if "CAP_SYS_RESOURCE" in bounding_caps() else []
    assert json.loads(process.read_text()) == {"capabilities": {"bounding": expected}}
    assert run_wrapper(fake_runc, "state", "ctr-1") == {"argv": ["state", "ctr-1"]}


def test_the_index_links_each_wheel_under_its_normalized_name_with_its_hash(
    tmp_path: Path,
) -> None:
    """PEP 503: ``simple/<normalized>/`` links ``files/<wheel>#sha256=<hex>``, served over HTTP."""
    cache = images.Cache(tmp_path / "cache")
    wheels = {"Typing_Extensions-4.16.0-py3-none-any.whl": b"a", "grpcio-1.85.3-cp311.whl": b"b"}

    def fill(out: Path) -> None:
        (out / "wheels").mkdir()
        for name, data in wheels.items():
            (out / "wheels" / name).write_bytes(data)

    step = images.Step("wheels-lock-x", "0" * 16, fill)
    index = cache.get(build.index_step(cache, [step]))
    with build.serve_index(index) as url:
        assert url.startswith("http://127.0.0.1:")
        page = urllib.request.urlopen(f"{url}/typing-extensions/", timeout=5).read().decode()
    digest = hashlib.sha256(b"a").hexdigest()
    wheel = "Typing_Extensions-4.16.0-py3-none-any.whl"
    assert f'href="../../files/{wheel}#sha256={digest}"' in page
    assert sorted(p.name for p in (index / "simple").iterdir()) == [
        "grpcio",
        "index.html",
        "typing-extensions",
    ]


def test_the_context_copy_holds_what_dockerignore_admits(tmp_path: Path) -> None:
    """The Dockerfile, .dockerignore and each ``!PATH``, without __pycache__; nothing else."""
    repo = tmp_path / "repo"
    (repo / "pkg" / "__pycache__").mkdir(parents=True)
    (repo / "pkg" / "__pycache__" / "m.pyc").write_text("x")
    (repo / "pkg" / "m.py").write_text("x")
    (repo / ".venv").mkdir()
    for name in ("Dockerfile", "README.md", "notes.txt"):
        (repo / name).write_text(name)
    (repo / ".dockerignore").write_text("*\n!README.md\n!pkg/\npkg/**/__pycache__\n")
    out = build.snapshot(repo, tmp_path / "context")
    found = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert found == [".dockerignore", "Dockerfile", "README.md", "pkg", "pkg/m.py"]


def test_the_build_log_counts_cached_and_run_steps(tmp_path: Path) -> None:
    """``---> Using cache`` of ``Step N/M``, and ``---> Running in`` containers."""
    log = tmp_path / "build.log"
    log.write_text(
        "Step 1/3 : FROM x\nStep 2/3 : ENV A=1\n ---> Using cache\n"
        "Step 3/3 : RUN true\n ---> Running in 0123\n"
    )
    assert build.step_counts(log) == ("1/3", 1)


def test_the_base_image_is_the_dockerfiles_default_without_its_digest() -> None:
    """``python:3.11-slim-bookworm``: the name ``docker import`` gives the stand-in."""
    assert build.base_tag(ROOT / "Dockerfile") == "python:3.11-slim-bookworm"
