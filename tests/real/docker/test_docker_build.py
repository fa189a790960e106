"""The shipped Dockerfile built by ``docker build`` as a user runs it, and the image run.

``e2e/docker/build.py`` does it on the bed's own Docker Engine (``e2e/docker/engine.sh``: Debian's
dockerd in a network namespace of its own), with the sandbox's adaptations it lists (base image
imported, wheels from a local index, the legacy builder, the runtime wrapper). Opt-in, not yet in
CI (issue 38): needs root, Debian's docker.io (``e2e/docker/engine.sh install``) and either the
network (from the host: the inputs are prepared, then the build runs under ``e2e/netns.sh``) or
the inputs cached (inside a namespace)::

    KRS_DOCKER_BUILD=1 .venv/bin/pytest -q -p no:cacheprovider -n 0 tests/real/docker

About 2 minutes with the inputs cached (three builds, three runs of each start-up). The scripts'
parts that need no engine are tested in ``test_docker_scripts.py``, everywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "e2e" / "docker" / "build.py"


def skip_reason() -> str | None:
    """Why the build cannot run here, or None."""
    if os.environ.get("KRS_DOCKER_BUILD") != "1":
        return "opt-in (KRS_DOCKER_BUILD=1); make e2e (in e2e-local) builds the same Dockerfile"
    if os.geteuid() != 0:
        return "dockerd needs root"
    if shutil.which("dockerd") is None or not Path("/usr/bin/docker").exists():
        return "Debian's docker.io is not installed: e2e/docker/engine.sh install"
    return None


_SKIP = skip_reason()
pytestmark = [
    pytest.mark.docker,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(_SKIP is not None, reason=_SKIP or ""),
]


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the script: its figures, and its last line of stdout."""
    out = tmp_path_factory.mktemp("docker") / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--figures", str(out)],
        check=False,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    found: dict[str, Any] = json.loads(out.read_text())
    found["line"] = proc.stdout.strip().splitlines()[-1]
    print(found["line"])
    return found


def test_the_dockerfile_builds_cold_and_the_second_build_is_all_cache(
    figures: dict[str, Any],
) -> None:
    """``--no-cache`` runs every step; the same context again runs none."""
    assert figures["docker_version"].startswith("20.10")
    cold_hits, steps = map(int, figures["build_cold_cached"].split("/"))
    assert cold_hits == 0 and steps > 0
    assert figures["build_warm_ran"] == 0
    assert figures["build_edit_ran"] > 0  # an edit of the package runs the pip steps again


def test_the_image_is_the_dockerfiles(figures: dict[str, Any]) -> None:
    """Non-root 65532, and bigger than its base by the locked packages and the package."""
    assert figures["user"] == "65532:65532"
    assert figures["image_bytes"] > figures["base_bytes"] > 0


def test_the_image_answers_help_and_serves_health(figures: dict[str, Any]) -> None:
    """``--help`` exits 0, ``agent --help`` names the agent, and ``serve`` on a read-only root
    answers SERVING on its plaintext health port, each time within seconds."""
    assert len(figures["help_s"]) == len(figures["serve_ready_s"]) == 3
    assert max(figures["help_s"]) < 30
    assert max(figures["serve_ready_s"]) < 30
    assert figures["line"].startswith("docker-build: image ")
