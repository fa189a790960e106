"""A ``requests`` session for a source, configured from its settings: TLS and credentials.

Credentials come from files named in settings (the CLI's flags), never from trigger metadata:
a bearer token file is re-read whenever it changes (a projected service-account token is rotated
in place), so is a basic-auth password file. Client certificate and key are read by the TLS
layer for every new connection, so rotated files are picked up without a restart.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import requests
import requests.auth

from keda_ray_scaler.sources.source_settings import HttpSettings


class _FileSecret:
    """The stripped content of a file, re-read when its inode, size or mtime changes."""

    def __init__(self, path: Path, what: str) -> None:
        self._path = path
        self._what = what
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._value = ""

    def read(self) -> str:
        st = os.stat(self._path)  # follows the ..data symlink of a projected volume
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if stamp != self._stamp:
                value = self._path.read_text().strip()
                if not value:
                    raise OSError(f"{self._what} file {self._path} is empty")
                self._value, self._stamp = value, stamp
            return self._value


class BearerTokenFileAuth(requests.auth.AuthBase):
    """``Authorization: Bearer <token>`` with the token read from a file, re-read on change."""

    def __init__(self, path: Path) -> None:
        self._token = _FileSecret(path, "bearer token")

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self._token.read()}"
        return r


class BasicAuthFile(requests.auth.AuthBase):
    """HTTP basic auth with the password read from a file, re-read on change."""

    def __init__(self, user: str, password_file: Path) -> None:
        self._user = user
        self._password = _FileSecret(password_file, "basic-auth password")

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        return requests.auth.HTTPBasicAuth(self._user, self._password.read())(r)


def build_session(settings: HttpSettings) -> requests.Session:
    """A ``requests`` session configured from ``settings`` and nothing else.

    ``trust_env`` is off: proxies, ``.netrc`` and CA bundles from the environment are not
    hidden inputs of the scaler.
    """
    session = requests.Session()
    session.trust_env = False
    if settings.insecure_skip_verify:
        session.verify = False
    elif settings.ca_file is not None:
        session.verify = str(settings.ca_file)
    if settings.cert_file is not None and settings.key_file is not None:
        session.cert = (str(settings.cert_file), str(settings.key_file))
    if settings.bearer_token_file is not None:
        session.auth = BearerTokenFileAuth(settings.bearer_token_file)
    elif settings.basic_auth_user is not None and settings.basic_auth_password_file is not None:
        session.auth = BasicAuthFile(settings.basic_auth_user, settings.basic_auth_password_file)
    return session
