"""The composition root: flags and environment are read here, and only here.

Each subcommand lives in its own module (``cli/plan.py``, ``cli/agent.py``, ``cli/serve.py``,
``cli/status.py``, ``cli/demo.py``) exposing ``add_parser(subparsers)`` and ``run(args) -> int``;
``agent`` and ``serve`` keep ``add_parser`` and the checks of their flags in a module of their
own (:data:`_FLAGS_MODULE`), which building the parser imports without the command's.
Bad input exits with code 2 and one line on stderr that says what is wrong.

Only the modules of the command that runs are imported: the others stand in the parser as their
one-line summary (:data:`SUMMARY`). Why: ``serve``, ``status`` and ``agent`` pull in gRPC, the
Prometheus and Kubernetes clients and structlog (~0.5 s), which ``plan``, a quick offline
command, never uses (``tests/unit/cli/test_cli_imports.py``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Protocol, cast

from keda_ray_scaler.errors import ConfigError

EXIT_BAD_INPUT = 2

_COMMANDS = ("plan", "agent", "serve", "status", "seal-key", "controller", "demo")

#: The module of a command's ``add_parser``, where it is not the command's own module.
_FLAGS_MODULE: Final[Mapping[str, str]] = {
    "agent": "agent_flags",
    "serve": "serve_flags",
    "seal-key": "seal_key",
    "controller": "controller_flags",
}

#: Each command's one-line help: the only home of it, read by the command's own parser too.
SUMMARY: Final[Mapping[str, str]] = {
    "plan": "plan replicas per worker group from a cluster spec and a snapshot file",
    "agent": "export a Ray cluster's demand and nodes; drain and mark idle pods",
    "serve": "run the KEDA external scaler (gRPC)",
    "status": "ask a running scaler for each worker group's target, as KEDA does",
    "seal-key": "derive a Ray cluster's seal key from the scaler's master key (or make one)",
    "controller": "make and keep each opted-in RayCluster's RayWorkerGroups, ScaledObjects, RBAC",
    "demo": "run the local demo: real Ray, agent and scaler; simulated Kubernetes and KEDA",
}


class _Flags(Protocol):
    def add_parser(
        self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
    ) -> None: ...


class _Command(Protocol):
    def run(self, args: argparse.Namespace) -> int: ...


def _flags(name: str) -> _Flags:
    """The module that registers command ``name`` and its flags."""
    module = _FLAGS_MODULE.get(name, name)
    return cast(_Flags, importlib.import_module(f"keda_ray_scaler.cli.{module}"))


def _command(name: str) -> _Command:
    """The module that runs command ``name``."""
    module = name.replace("-", "_")
    return cast(_Command, importlib.import_module(f"keda_ray_scaler.cli.{module}"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser: every command's flags, or ``only``'s and the others' summaries.

    With ``only``, the other commands' modules are not imported; their entries still list them
    (top-level ``--help``, the choices an error names) but have no flags.
    """
    parser = argparse.ArgumentParser(
        prog="keda-ray-scaler",
        description="Autoscale Ray worker groups with KEDA, with Ray's own semantics.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS:
        if only is None or name == only:
            _flags(name).add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=SUMMARY[name])
    return parser


def add_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    description: str,
    *flag_groups: Callable[[argparse.ArgumentParser], None],
) -> argparse.ArgumentParser:
    """Register command ``name``, its :data:`SUMMARY` as its help, then each of ``flag_groups``
    (a function adding flags to the command's parser); the parser, for flags of its own."""
    p = subparsers.add_parser(name, help=SUMMARY[name], description=description)
    for add_flags in flag_groups:
        add_flags(p)
    return p


def add_logging_flags(p: argparse.ArgumentParser) -> None:
    """``--log-format`` and ``--log-level``, the same for every long-running command."""
    g = p.add_argument_group("logging")
    g.add_argument("--log-format", choices=("json", "console"), default="json")
    g.add_argument("--log-level", default="info", help="debug, info, warning, error")


def configure_logging_from(args: argparse.Namespace, where: str) -> None:
    """Logging as ``--log-format`` and ``--log-level`` say; an unknown level is a ConfigError."""
    # structlog only for the commands that log (module docstring: ``plan`` never imports it)
    from keda_ray_scaler.telemetry import configure_logging

    try:
        configure_logging(json=args.log_format == "json", level=args.log_level)
    except ValueError as exc:
        raise ConfigError(where, "--log-level", str(exc)) from exc


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, if any: the first word that is not a flag.

    The top-level parser has no flag that takes a value, so that word is the command.
    """
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in _COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``keda-ray-scaler`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(only=command_of(argv))
    args = parser.parse_args(argv)
    try:
        return _command(args.command).run(args)
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
