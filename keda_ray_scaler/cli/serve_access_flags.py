"""The flags of ``keda-ray-scaler serve`` that say who may call its gRPC port, each checked.

TLS (``--tls-cert``, ``--tls-key``), client authentication (``--tls-client-ca``), the one client
served under it (``--client-identity``) and server reflection (``--reflection``). Their defaults
are :class:`~keda_ray_scaler.rpc.server_settings.ServerSettings`'s, read here; the rest of
``serve``'s flags are :mod:`keda_ray_scaler.cli.serve_flags`, which registers this group and
builds the settings.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.rpc.server_settings import ServerSettings
from keda_ray_scaler.rpc.tls import TlsFiles

#: The ``where`` of these flags' ConfigErrors (``serve_flags.WHERE``).
WHERE: Final = "serve"


def add_access_flags(p: argparse.ArgumentParser) -> None:
    """TLS, client authentication and what the port reveals."""
    g = p.add_argument_group("TLS and who may call")
    server = ServerSettings()
    g.add_argument("--tls-cert", type=Path, help="server certificate (PEM); enables TLS")
    g.add_argument("--tls-key", type=Path, help="server private key (PEM)")
    g.add_argument(
        "--tls-client-ca",
        "--client-ca",
        dest="tls_client_ca",
        type=Path,
        help="CA that signs client certificates; enables mTLS (needs --tls-cert)",
    )
    g.add_argument(
        "--client-identity",
        default=server.client_identity,
        metavar="NAME",
        help="under mTLS, the one client served: the common name or a subject alternative name "
        "of its certificate (the chart issues KEDA's as CN keda); any other certificate from "
        "the CA is PERMISSION_DENIED; '' serves every certificate the CA signed "
        f"({server.client_identity})",
    )
    g.add_argument(
        "--reflection",
        action="store_true",
        default=server.reflection,
        help="serve gRPC server reflection (lists the services; KEDA does not use it)",
    )


def tls_files(args: argparse.Namespace) -> TlsFiles | None:
    """The TLS files the flags name, each readable; None without ``--tls-cert``. ConfigError
    naming the flag."""
    if not (args.tls_cert or args.tls_key):
        _check(args.tls_client_ca is None, "--tls-client-ca", "needs --tls-cert and --tls-key")
        return None
    _check(
        bool(args.tls_cert and args.tls_key), "--tls-key", "--tls-cert and --tls-key go together"
    )
    paths = [("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)]
    if args.tls_client_ca:
        paths.append(("--tls-client-ca", args.tls_client_ca))
    for flag, path in paths:
        _check(path.is_file(), flag, f"{path} is not a readable file")
    return TlsFiles(args.tls_cert, args.tls_key, args.tls_client_ca)


def client_identity(args: argparse.Namespace) -> str:
    """``--client-identity``: a name without surrounding spaces or control characters."""
    name: str = args.client_identity
    _check(
        name == name.strip() and name.isprintable(),
        "--client-identity",
        "must be a certificate name without surrounding spaces or control characters",
    )
    return name


def _check(ok: bool, flag: str, problem: str) -> None:
    if not ok:
        raise ConfigError(WHERE, flag, problem)
