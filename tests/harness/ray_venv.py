"""Another Ray version's venv for a real-Ray test, or a skip naming the make target.

The venvs are ``tools/ray_venvs.py``'s (PyPI, outside the repository); the suite's network
namespace cannot reach PyPI, so a test never makes one: ``make ray-venvs`` does before. A
missing venv skips the case, or fails it under ``KRS_REQUIRE_SHARED=1`` (CI), as the shared
reference copies do (``shared_ref.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.harness.shared_ref import REQUIRE_ENV
from tools import ray_venvs


def venv_or_skip(version: str) -> Path:
    """The venv of ``version``; skip (fail in CI) naming ``make ray-venvs`` when it is missing."""
    if ray_venvs.ready(version):
        return ray_venvs.venv_dir(version)
    reason = (
        f"Ray {version}'s venv is not at {ray_venvs.venv_dir(version)}: run `make ray-venvs` "
        "(the CI versions and the label test's) or `make test-ray-versions` (all) first; it "
        "needs PyPI"
    )
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires it", pytrace=False)
    pytest.skip(reason)
