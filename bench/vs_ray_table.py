"""The side-by-side table and the closing ``vs-ray:`` line (issue 16, item 3).

One table: a row per (profile, workload, figure), columns ours | Ray | ours/Ray. The last line
begins ``vs-ray:`` and gives, per profile and workload, peak pods, pod-seconds, the time to all
needed pods, pods deleted while busy and failed tasks (requests, for workload g), ours / Ray's;
for workload e also the pods per group, the pods beyond each group's demand and the tasks in a
group their selectors did not ask for.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from bench.vs_ray_cpu import OUR_COMPONENTS, RAY_COMPONENTS
from bench.vs_ray_figures import Figures

Key = tuple[str, str]  # (profile, workload)
Results = dict[Key, dict[str, Figures | str]]  # side -> figures, or the error text


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _ratio(ours: float | None, ray: float | None) -> str:
    if ours is None or ray is None or math.isnan(ours) or math.isnan(ray) or ray == 0:
        return "-"
    return f"{ours / ray:.2f}"


def _cpu(side: tuple[str, ...]) -> Callable[[Figures], float | None]:
    def total(f: Figures) -> float | None:
        """The side's components' CPU seconds; ``None`` when none was read (workloads f, g)."""
        if not f.cpu:
            return None
        return sum(f.cpu.get(c, 0.0) for c in side if not math.isnan(f.cpu.get(c, 0.0)))

    return total


#: the first row: tasks, or (workload g) requests, done / failed
DONE_ROW = "tasks (g: requests) done / failed"
#: (label, reader, digits) of every row
ROWS: list[tuple[str, Callable[[Figures], float | None], int]] = [
    (DONE_ROW, lambda f: None, 0),
    ("first pod created (s)", lambda f: f.first_pod_s, 1),
    ("first pod Ready (s)", lambda f: f.first_ready_s, 1),
    ("all needed pods Ready (s)", lambda f: f.all_needed_s, 1),
    ("peak pods", lambda f: f.peak, 0),
    ("pods needed", lambda f: f.needed, 0),
    ("pods created", lambda f: f.created, 0),
    ("pod-seconds", lambda f: f.pod_seconds, 0),
    ("last task -> deletion, median (s)", lambda f: f.to_deletion_median_s, 1),
    ("last task -> deletion, max (s)", lambda f: f.to_deletion_max_s, 1),
    ("Ray idle -> deletion, median (s)", lambda f: f.idle_to_deletion_median_s, 1),
    ("Ray idle -> deletion, max (s)", lambda f: f.idle_to_deletion_max_s, 1),
    ("last task -> zero pods (s)", lambda f: f.to_zero_s, 1),
    ("pods deleted while busy", lambda f: f.busy_deleted, 0),
    ("task retries", lambda f: f.retries, 0),
    ("autoscaling CPU (s)", lambda f: _cpu(OUR_COMPONENTS + RAY_COMPONENTS)(f), 2),
    ("  shared: controller-manager (s)", lambda f: f.cpu.get("controller-manager"), 2),
    ("  shared: kuberay-operator (s)", lambda f: f.cpu.get("kuberay-operator"), 2),
]


def _cell(
    row: str, f: Figures | str | None, reader: Callable[[Figures], float | None], digits: int
) -> str:
    if not isinstance(f, Figures):
        return "error" if f else "-"
    if row == DONE_ROW:
        return f"{f.done}/{f.failed}" + ("" if f.finished else " !")
    return _num(reader(f), digits)


def table(results: Results) -> list[str]:
    """The table's lines."""
    lines = [
        f"{'profile':<11}{'workload':<10}{'figure':<36}{'ours':>10}{'Ray':>10}{'ours/Ray':>10}"
    ]
    for (profile, workload), sides in results.items():
        ours, ray = sides.get("ours"), sides.get("ray")
        for row, reader, digits in ROWS:
            a, b = _cell(row, ours, reader, digits), _cell(row, ray, reader, digits)
            ratio = "-"
            if isinstance(ours, Figures) and isinstance(ray, Figures) and row != DONE_ROW:
                x, y = reader(ours), reader(ray)
                ratio = _ratio(None if x is None else float(x), None if y is None else float(y))
            lines.append(f"{profile:<11}{workload:<10}{row:<36}{a:>10}{b:>10}{ratio:>10}")
        for side, f in (("ours", ours), ("ray", ray)):
            if isinstance(f, Figures):
                parts = ", ".join(f"{k} {_num(v, 2)}" for k, v in sorted(f.cpu.items()))
                lines += [f"{'':<21}{side} CPU by component: {parts}"] if parts else []
                lines += [f"{'':<21}{side} pods by group: {_groups(f)}"] if f.by_group else []
                lines += [f"{'':<21}{side}: {note}" for note in f.notes]
            elif f:
                lines.append(f"{'':<21}{side} error: {f}")
    return lines


def _groups(f: Figures, sep: str = ", ", joint: str = " ") -> str:
    return sep.join(f"{g}{joint}{n}" for g, n in sorted(f.by_group.items())) or "none"


def _labelled(ours: Figures, ray: Figures) -> str:
    """Workload e's part of the line: pods by group, beyond the demand, tasks misplaced."""
    if ours.beyond is None and ray.beyond is None:
        return ""
    return (
        f" groups {_groups(ours, ',', ':')}/{_groups(ray, ',', ':')}"
        f" beyond {_num(ours.beyond, 0)}/{_num(ray.beyond, 0)}"
        f" misplaced {_num(ours.misplaced, 0)}/{_num(ray.misplaced, 0)}"
    )


def _pair(ours: float | None, ray: float | None, digits: int) -> str:
    return f"{_num(ours, digits)}/{_num(ray, digits)}"


def vs_ray_line(results: Results) -> str:
    """``vs-ray: <profile> <workload> peak o/r pod-s o/r (ratio) all-pods o/r s busy-deleted o/r
    failed o/r; ...``."""
    parts = []
    for (profile, workload), sides in results.items():
        ours, ray = sides.get("ours"), sides.get("ray")
        if not (isinstance(ours, Figures) and isinstance(ray, Figures)):
            which = [s for s in ("ours", "ray") if not isinstance(sides.get(s), Figures)]
            parts.append(f"{profile} {workload} error ({', '.join(which)})")
            continue
        parts.append(
            f"{profile} {workload} peak {ours.peak}/{ray.peak}"
            f" pod-s {_pair(ours.pod_seconds, ray.pod_seconds, 0)}"
            f" ({_ratio(ours.pod_seconds, ray.pod_seconds)})"
            f" all-pods {_pair(ours.all_needed_s, ray.all_needed_s, 1)} s"
            f" busy-deleted {ours.busy_deleted}/{ray.busy_deleted}"
            f" failed {ours.failed}/{ray.failed}" + _labelled(ours, ray)
        )
    return "vs-ray: " + ("; ".join(parts) or "nothing ran")
