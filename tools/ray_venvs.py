"""Make (or find) one venv per Ray version for the version matrix, outside the repository.

    python tools/ray_venvs.py [--all] [VERSION...]

Each venv is ``~/.cache/keda-ray-scaler/ray-versions/<version>/`` (``KRS_RAY_VENVS`` moves the
root): ``python3 -m venv`` plus ``pip install ray==<version>`` (plain ``ray``: the tests start
heads with ``--include-dashboard=false``) and the version's constraints, if any. A marker file
``.krs-ready`` (holding what was installed) is written last, so a warm run costs nothing and
a broken install is redone. Without arguments: the versions CI runs (the oldest and the
newest, and the label test's); ``--all`` (or ``KRS_RAY_VERSIONS=all``): the whole matrix. It
needs the network (PyPI), so ``make`` runs it before the suite's network namespace;
``tests/real/ray/test_ray_versions.py`` and ``test_labels_ray.py`` only read the venvs it made.
Prints each venv's path and how long it took.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

#: The oldest Ray whose autoscaler v2 scales the worker group a label selector asks for (with
#: KubeRay 1.5): ``tests/real/ray/test_labels_ray.py`` runs a head of it beside the newest.
LABELS_OLDEST = "2.51.2"
#: Every Ray version the matrix runs, oldest first; the range the agent supports is
#: ``keda_ray_scaler.gcs.versions``'s and these are its edges and points between.
MATRIX = ("2.10.0", "2.30.0", "2.47.1", LABELS_OLDEST, "2.60.0")
#: The versions ``test_ray_versions.py`` runs on every ``make test``: the oldest and the newest.
CI = (MATRIX[0], MATRIX[-1])
#: The venvs ``make ray-venvs`` makes for ``make test``: CI's and the label test's.
NEEDED = (*CI, LABELS_OLDEST)
#: Extra pins a version needs on Python 3.11 (none found so far).
CONSTRAINTS: dict[str, tuple[str, ...]] = {}
MARKER = ".krs-ready"


def root() -> Path:
    """Where the venvs live (outside any work tree): the real home's, also under the test
    suite, whose HOME is a temp dir (``tests/conftest.py`` keeps the real one in
    ``KRS_REAL_HOME``)."""
    home = Path(os.environ.get("KRS_REAL_HOME") or Path.home())
    default = home / ".cache" / "keda-ray-scaler" / "ray-versions"
    return Path(os.environ.get("KRS_RAY_VENVS") or default)


def venv_dir(version: str) -> Path:
    """The venv of Ray ``version``."""
    return root() / version


def _spec(version: str) -> str:
    return " ".join((f"ray=={version}", *CONSTRAINTS.get(version, ())))


def ready(version: str) -> bool:
    """True when the venv of ``version`` is complete (its marker names what it should hold)."""
    marker = venv_dir(version) / MARKER
    return marker.is_file() and marker.read_text().strip() == _spec(version)


def ensure(version: str) -> float:
    """Make the venv of ``version`` unless it is ready; return the seconds it took."""
    if ready(version):
        return 0.0
    start = time.monotonic()
    path = venv_dir(version)
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    pip += ["--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, *_spec(version).split()], check=True)
    (path / MARKER).write_text(_spec(version) + "\n")
    return time.monotonic() - start


def main(argv: list[str]) -> int:
    every = "--all" in argv or os.environ.get("KRS_RAY_VERSIONS") == "all"
    versions = [a for a in argv if not a.startswith("-")] or list(MATRIX if every else NEEDED)
    for version in versions:
        took = ensure(version)
        print(f"ray-venv {version}: {venv_dir(version)} ({took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
