"""Ray's token authentication, as a GCS client sends it: which token, and in what header.

The token is found where Ray 2.60's own clients look (``AuthenticationTokenLoader::
TryLoadTokenFromSources`` in ``src/ray/rpc/authentication/authentication_token_loader.cc``), in
this order, whitespace trimmed:

1. ``RAY_AUTH_TOKEN``;
2. the first line of the file ``RAY_AUTH_TOKEN_PATH`` names (set but unreadable or empty: an
   error, as in Ray);
3. the first line of ``$HOME/.ray/auth_token`` (``ray get-auth-token --generate`` writes it).

It goes in every call's metadata as ``authorization: Bearer <token>`` (Ray's
``AUTHORIZATION_HEADER_NAME`` and ``AUTHORIZATION_BEARER_PREFIX``,
``ray/_private/authentication/authentication_constants.py``). A GCS with token authentication
answers UNAUTHENTICATED without it.

One difference: Ray's clients send the token only when ``RAY_AUTH_MODE=token``; this one sends
a token it finds unless ``RAY_AUTH_MODE=disabled`` (a GCS without token authentication ignores
the header), so an agent given only the token works. ``RAY_AUTH_MODE=token`` without any token
is an error. Ray's Kubernetes service-account mode (``ENABLE_K8S_TOKEN_AUTH``) is not read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from keda_ray_scaler.errors import RayError

HEADER: Final = "authorization"
BEARER: Final = "Bearer "
#: The default token file, relative to ``$HOME``.
DEFAULT_TOKEN_FILE: Final = Path(".ray") / "auth_token"


def _first_line(path: Path) -> str:
    """The file's first line, trimmed; "" when it cannot be read."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return f.readline().strip()
    except OSError:
        return ""


def load_token(environ: Mapping[str, str] | None = None) -> str | None:
    """The token to send, or None; :class:`RayError` when the configuration is unusable."""
    env = os.environ if environ is None else environ
    mode = env.get("RAY_AUTH_MODE", "").strip().lower()
    if mode == "disabled":
        return None
    token = env.get("RAY_AUTH_TOKEN", "").strip()
    path = env.get("RAY_AUTH_TOKEN_PATH", "")
    if not token and path:
        token = _first_line(Path(path))
        if not token:
            raise RayError(f"RAY_AUTH_TOKEN_PATH is set but {path} cannot be read or is empty")
    if not token:
        token = _first_line(Path(env.get("HOME", ".")) / DEFAULT_TOKEN_FILE)
    if not token and mode == "token":
        raise RayError(
            "RAY_AUTH_MODE=token but no token: set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to a "
            "file holding it, or write it to ~/.ray/auth_token"
        )
    return token or None


def metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    """The gRPC metadata carrying ``token`` (none without one)."""
    return ((HEADER, BEARER + token),) if token else ()
