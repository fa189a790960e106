"""KEDA's proto and CRDs for the compatibility tests: skip where absent, fail in CI.

They are read from ``../shared/keda`` when that reference copy exists, else from
``keda-reference/`` of the real-control-plane build (``e2e/build.sh``: the same files from the
pinned KEDA module), whose directory ``make test`` passes as ``KRS_E2E_BIN``. Where neither is
there the tests skip with a reason (shown by ``-rs``). CI sets ``KRS_REQUIRE_SHARED=1``
(``.ci/run``): a missing copy fails there, so the checks can never pass by being skipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

SHARED = Path(__file__).resolve().parents[3] / "shared"
REQUIRE_ENV = "KRS_REQUIRE_SHARED"


def _keda_reference() -> Path:
    """``../shared/keda`` if present, else the build's copy from the KEDA module, if any."""
    shared = SHARED / "keda"
    built = Path(os.environ.get("KRS_E2E_BIN", "/nonexistent")) / "keda-reference"
    return built if not shared.is_dir() and built.is_dir() else shared


KEDA = _keda_reference()


def missing(what: str, path: Path) -> NoReturn:
    """Skip (or, with KRS_REQUIRE_SHARED=1, fail) because ``path`` is absent."""
    reason = f"{what} not found at {path} (the shared reference copy)"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires it", pytrace=False)
    pytest.skip(reason)
