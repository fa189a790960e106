"""The side-by-side table again from raw records: ``python -m bench.vs_ray_raw FILE.json ...``.

``KRS_VS_RAY_RAW_DIR`` makes ``bench/vs_ray_bench.py`` keep one JSON record per run (pod events,
driver events, task attempts, CPU seconds); this reads them back into
:class:`~bench.vs_ray_figures.Figures` and prints the table and the ``vs-ray:`` line, so the
figures can be made again (or with a changed definition) without the bed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.vs_ray_figures import Figures, figures
from bench.vs_ray_table import Results, table, vs_ray_line
from bench.vs_ray_workloads import SPECS, Attempt, Run

from pod_watch import PodEvent  # isort: skip  (tests/, on sys.path through bench.vs_ray_bed)


def load(path: Path) -> tuple[str, str, str, Figures]:
    """``(profile, workload, side, figures)`` of one record."""
    record = json.loads(path.read_text())
    run = Run(
        SPECS[record["workload"]],
        record["started_at"],
        record["events"],
        [Attempt(**a) for a in record["attempts"]],
    )
    pods = [PodEvent(**e) for e in record["pods"]]
    side = record["side"]
    return (
        record["profile"],
        record["workload"],
        side,
        figures(side, run, pods, record["end"], record["cpu"]),
    )


def main(paths: list[str]) -> Results:
    """Print the table of the records at ``paths``."""
    results: Results = {}
    for path in sorted(paths):
        profile, workload, side, f = load(Path(path))
        results.setdefault((profile, workload), {})[side] = f
    for line in table(results):
        print(line)
    print(vs_ray_line(results))
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
