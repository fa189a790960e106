"""TLS for the scaler's gRPC port: the PEM files, re-read when cert-manager rotates them.

Why a module of its own: reloading certificates is file watching and gRPC credential plumbing,
a concern apart from wiring the server; :mod:`keda_ray_scaler.rpc.server` only asks it for
credentials.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import grpc
import structlog

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """PEM files for TLS; with ``client_ca_file`` clients must present a certificate (mTLS).

    The files are re-read when their size or modification time changes, checked at every new
    TLS handshake (cert-manager rotates them in place), so rotation needs no restart.
    """

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None


class CertificateReloader:
    """``cert_config_fetcher`` for :func:`grpc.dynamic_ssl_server_credentials`.

    Called by gRPC before each handshake: returns ``None`` while the files are unchanged, a new
    configuration when they changed, and keeps the previous one (logging) when the new files
    cannot be read, e.g. half-way through a rotation.
    """

    def __init__(self, files: TlsFiles) -> None:
        self._files = files
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self.initial = self._load()
        self.reloads = 0

    def credentials(self) -> grpc.ServerCredentials:
        """Server credentials that use this reloader."""
        return grpc.dynamic_ssl_server_credentials(
            self.initial,
            self,
            require_client_authentication=self._files.client_ca_file is not None,
        )

    def __call__(self) -> grpc.ServerCertificateConfiguration | None:
        with self._lock:
            try:
                stamp = self._stat()
                if stamp == self._stamp:
                    return None
                config = self._load()
            except (OSError, ValueError) as exc:
                _log.warning("tls files unreadable, keeping the previous ones", error=str(exc))
                return None
            self._stamp = stamp
            self.reloads += 1
            _log.info("tls certificate reloaded", cert_file=str(self._files.cert_file))
            return config

    def _paths(self) -> list[Path]:
        f = self._files
        return [f.cert_file, f.key_file] + ([f.client_ca_file] if f.client_ca_file else [])

    def _stat(self) -> tuple[tuple[int, int, int], ...]:
        out = []
        for p in self._paths():
            st = os.stat(p)
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(out)

    def _load(self) -> grpc.ServerCertificateConfiguration:
        f = self._files
        cert, key = f.cert_file.read_bytes(), f.key_file.read_bytes()
        if b"-----BEGIN" not in cert or b"-----BEGIN" not in key:
            raise ValueError(f"{f.cert_file} or {f.key_file} is not PEM")
        ca = f.client_ca_file.read_bytes() if f.client_ca_file else None
        return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=ca)
