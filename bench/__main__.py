"""Run every ``bench/*_bench.py`` module's ``main()``, in name order.

Usage: ``python -m bench [--quick] [FILTER ...]``; with filters, only modules whose name
contains one of them run (``python -m bench planner``). ``--quick`` (``make bench-quick``) is a
smoke run under a minute: the agent and planner benchmarks with few instances, no scaler load
test (it builds a Go load generator and runs 20 s phases); its figures are not the reference
figures.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from pathlib import Path
from types import ModuleType

#: ``--quick``: the modules run and the module constants lowered before their ``main()``.
QUICK: dict[str, dict[str, int]] = {
    "agent_bench": {},
    "agent_poll_bench": {"REPEATS": 5},
    "planner_bench": {"QUALITY_INSTANCES": 20, "QUALITY_WIDE": 20},
}


def bench_modules(filters: list[str]) -> list[str]:
    """Names of the benchmark modules to run, sorted, narrowed by ``filters`` when given."""
    here = str(Path(__file__).parent)
    names = sorted(m.name for m in pkgutil.iter_modules([here]) if m.name.endswith("_bench"))
    if filters:
        names = [n for n in names if any(f in n for f in filters)]
    return names


def build_parser() -> argparse.ArgumentParser:
    """``python -m bench`` flags."""
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run the benchmarks (bench/*_bench.py) and print figures against targets.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run under a minute: agent and planner, few instances, no scaler load test",
    )
    parser.add_argument(
        "filters", nargs="*", metavar="FILTER", help="run only modules whose name contains one"
    )
    return parser


def quicken(module: ModuleType, name: str) -> None:
    """Lower the module's constants as :data:`QUICK` says."""
    for constant, value in QUICK.get(name, {}).items():
        setattr(module, constant, value)


def main(argv: list[str]) -> int:
    """Run the selected benchmarks; exit 2 if a filter selects nothing."""
    args = build_parser().parse_args(argv)
    names = bench_modules(args.filters)
    if args.quick:
        names = [n for n in names if n in QUICK]
    if not names:
        print(f"python -m bench: no benchmark matches {args.filters!r}", file=sys.stderr)
        return 2
    for name in names:
        print(f"=== bench.{name} ===", flush=True)
        started = time.perf_counter()
        module = importlib.import_module(f"bench.{name}")
        if args.quick:
            quicken(module, name)
        module.main()
        print(f"=== bench.{name}: {time.perf_counter() - started:.1f} s ===\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
