"""How a source reaches its endpoint and how it retries: HTTP(S) and retry settings.

Values only: credential and certificate files are named here and read at request time by
:mod:`~keda_ray_scaler.sources.session`; :mod:`~keda_ray_scaler.sources.transport` runs the
retries these settings describe.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import tenacity

#: KEDA gives an external scaler 3 s per call; a fetch (all attempts) must end well before.
DEFAULT_DEADLINE_S: Final = 2.5


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """How to reach an HTTP(S) endpoint. Paths are read at request time, never stored inline.

    ``ca_file``: PEM bundle that verifies the server (default: the system store).
    ``cert_file``/``key_file``: client certificate for mTLS.
    ``bearer_token_file``: sent as ``Authorization: Bearer``; re-read when the file changes.
    ``basic_auth_user`` with ``basic_auth_password_file``: HTTP basic auth.
    ``insecure_skip_verify``: do not verify the server certificate (tests and labs only).
    """

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    bearer_token_file: Path | None = None
    basic_auth_user: str | None = None
    basic_auth_password_file: Path | None = None
    insecure_skip_verify: bool = False

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if (self.basic_auth_user is None) != (self.basic_auth_password_file is None):
            raise ValueError("basic_auth_user and basic_auth_password_file go together")
        if self.bearer_token_file is not None and self.basic_auth_user is not None:
            raise ValueError("choose bearer_token_file or basic auth, not both")


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """Retries of one fetch, all inside ``deadline_s``.

    ``attempts``: tries per fetch (1 = no retry). Backoff doubles from ``initial_backoff_s`` up
    to ``max_backoff_s``, with jitter of up to ``initial_backoff_s``: a refresh interval is a few
    seconds, so waits stay short and bounded. ``deadline_s`` bounds the whole fetch, retries
    included; each attempt's HTTP timeout is what is left of it.
    """

    attempts: int = 3
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 0.5
    deadline_s: float = DEFAULT_DEADLINE_S

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if not 0 < self.deadline_s <= 60:
            raise ValueError(f"deadline_s must be in (0, 60], got {self.deadline_s}")
        if self.initial_backoff_s < 0 or self.max_backoff_s < self.initial_backoff_s:
            raise ValueError("need 0 <= initial_backoff_s <= max_backoff_s")

    def wait(self) -> tenacity.wait.wait_base:
        """The tenacity wait strategy these settings describe."""
        return tenacity.wait_exponential_jitter(
            multiplier=self.initial_backoff_s,
            max=self.max_backoff_s,
            jitter=self.initial_backoff_s,
        )
