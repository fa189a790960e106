"""The composition root: flags and environment are read here, and only here.

Each subcommand lives in its own module (``cli/plan.py``, ``cli/agent.py``, ``cli/serve.py``,
``cli/status.py``, ``cli/demo.py``) exposing ``add_parser(subparsers)`` and ``run(args) -> int``.
Bad input exits with code 2 and one line on stderr that says what is wrong.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol, cast

from keda_ray_scaler.errors import ConfigError

EXIT_BAD_INPUT = 2

_COMMANDS = ("plan", "agent", "serve", "status", "demo")


class _Command(Protocol):
    def add_parser(
        self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
    ) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand that can be imported here."""
    parser = argparse.ArgumentParser(
        prog="keda-ray-scaler",
        description="Autoscale Ray worker groups with KEDA, with Ray's own semantics.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS:
        module = cast(_Command, importlib.import_module(f"keda_ray_scaler.cli.{name}"))
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``keda-ray-scaler`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    module = cast(_Command, importlib.import_module(f"keda_ray_scaler.cli.{args.command}"))
    try:
        return module.run(args)
    except ConfigError as exc:
        print(error_line(args.command, exc), file=sys.stderr)
        return EXIT_BAD_INPUT


def error_line(command: str, exc: ConfigError) -> str:
    """``keda-ray-scaler COMMAND: FIELD: PROBLEM``, the command named once.

    A ConfigError raised by the command itself already says where (``serve``); one from deeper
    down (a file, a library) says its own where, which is kept.
    """
    detail = str(exc)
    if exc.where == command:
        detail = f"{exc.field}: {exc.problem}" if exc.field else exc.problem
    return f"keda-ray-scaler {command}: {detail}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
