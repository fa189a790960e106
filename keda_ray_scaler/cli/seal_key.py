"""``keda-ray-scaler seal-key``: a Ray cluster's seal key, derived from the scaler's master key.

The scaler (``serve --seal-master-key-file``) derives each cluster's key itself; the agent of
cluster ``NAMESPACE/CLUSTER`` is given only its own (``agent --seal-key-file``), printed here as
hex for a Secret in the cluster's namespace. With ``--new-master-key``, a fresh random master
key instead (``secrets.token_hex``). Exit 2 with one line naming the flag on bad input.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from pathlib import Path

from keda_ray_scaler.cli import add_command
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import is_dns_label
from keda_ray_scaler.schema import digest

_WHERE = "seal-key"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seal-key`` and its flags."""
    p = add_command(
        subparsers,
        "seal-key",
        "Print the seal key of one Ray cluster (hex), derived from the scaler's master key, "
        "for the agent's --seal-key-file; or a new master key.",
    )
    p.add_argument("--master-key-file", type=Path, help="the scaler's master key (hex)")
    p.add_argument("--namespace", help="the Ray cluster's namespace")
    p.add_argument("--cluster", help="the Ray cluster's name")
    p.add_argument(
        "--new-master-key", action="store_true", help="print a new random master key instead"
    )


def key_file(path: Path, flag: str, where: str = _WHERE) -> bytes:
    """The key in ``path`` (hex); raises :class:`ConfigError` naming ``flag`` and the file when
    it cannot be read or holds no key (the key itself never printed)."""
    try:
        return digest.parse_key_text(path.read_text(encoding="ascii"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(where, flag, f"{path}: {problem}") from None


def run(args: argparse.Namespace) -> int:
    """Print the key; 0."""
    if args.new_master_key:
        print(secrets.token_hex(digest.MIN_MASTER_KEY_BYTES))
        return 0
    for flag, value in (
        ("--master-key-file", args.master_key_file),
        ("--namespace", args.namespace),
        ("--cluster", args.cluster),
    ):
        if not value:
            raise ConfigError(_WHERE, flag, "required (or --new-master-key)")
    for flag, name in (("--namespace", args.namespace), ("--cluster", args.cluster)):
        if not is_dns_label(name):
            raise ConfigError(_WHERE, flag, f"{name[:80]!r} is not an RFC 1123 label")
    master = key_file(args.master_key_file, "--master-key-file")
    sys.stdout.write(
        digest.key_text(digest.cluster_key(master, args.namespace, args.cluster)) + "\n"
    )
    return 0
