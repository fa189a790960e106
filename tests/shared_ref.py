"""The reference copies in ``../shared`` (KEDA's proto and CRDs): skip where absent, fail in CI.

A developer's checkout may lack ``../shared``; there the tests that read it skip with a reason
(shown by ``-rs``). CI sets ``KRS_REQUIRE_SHARED=1`` (``.ci/run``): a missing copy fails there,
so the KEDA-compatibility checks can never pass by being skipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
KEDA = SHARED / "keda"
REQUIRE_ENV = "KRS_REQUIRE_SHARED"


def missing(what: str, path: Path) -> NoReturn:
    """Skip (or, with KRS_REQUIRE_SHARED=1, fail) because ``path`` is absent."""
    reason = f"{what} not found at {path} (the shared reference copy)"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires it", pytrace=False)
    pytest.skip(reason)
