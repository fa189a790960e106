"""Run every ``bench/*_bench.py`` module's ``main()``, in name order.

Usage: ``python -m bench [FILTER ...]``; with filters, only modules whose name contains one of
them run (``python -m bench planner``).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def bench_modules(filters: list[str]) -> list[str]:
    """Names of the benchmark modules to run, sorted, narrowed by ``filters`` when given."""
    here = str(Path(__file__).parent)
    names = sorted(m.name for m in pkgutil.iter_modules([here]) if m.name.endswith("_bench"))
    if filters:
        names = [n for n in names if any(f in n for f in filters)]
    return names


def main(argv: list[str]) -> int:
    """Run the selected benchmarks; exit 1 if a filter selects nothing."""
    names = bench_modules(argv)
    if not names:
        print(f"no benchmark matches {argv!r}", file=sys.stderr)
        return 1
    for name in names:
        print(f"=== bench.{name} ===", flush=True)
        started = time.perf_counter()
        module = importlib.import_module(f"bench.{name}")
        module.main()
        print(f"=== bench.{name}: {time.perf_counter() - started:.1f} s ===\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
