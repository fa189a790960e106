"""The figures of one side's run of one workload (issue 16, "Figures, for both, per workload").

From the bed's pod watch (when each worker pod was created, became Ready, began its deletion,
was gone), the driver's events and the tasks' attempts:

- ``first_pod_s`` / ``first_ready_s``: submission to the first worker pod created / Ready;
- ``all_needed_s``: submission to the first moment the pods the demand needs were all Ready at
  once (``None``: never);
- ``peak``: the most worker pods that existed at once; ``needed``: what the demand needs;
  ``created``: worker pods created in all (pods whose Ray node never joined and their
  replacements show here);
- ``pod_seconds``: the sum over worker pods of (gone, or the end of the observation) - created:
  the run's cost;
- ``to_deletion_median_s`` / ``to_deletion_max_s``: per deleted pod, its deletion - the end of
  the last task it ran (pods that ran nothing: - the end of the workload's last task);
- ``idle_to_deletion_median_s`` / ``idle_to_deletion_max_s``: per deleted pod whose Ray node was
  watched idle, its deletion - the start of the node's last idle span as Ray reports it
  (:mod:`bench.vs_ray_idle`): the autoscaler's own reaction, without Ray's idle semantics;
- ``to_zero_s``: the end of the workload's last task to the last pod's deletion (``None``: pods
  still there at the end of the observation);
- ``busy_deleted``: pods whose deletion began while an attempt of a task ran on them (an attempt
  that never ended normally counts as running until its pod went);
- ``failed``, ``retries``: tasks Ray gave up on; attempts beyond one a task;
- ``cpu``: CPU seconds of each autoscaling component over the run (:mod:`bench.vs_ray_cpu`);
- ``by_group``: worker pods created per group; for a run whose tasks name the group their
  selectors ask for (workload e, ``want``): ``beyond``, the pods a group has beyond its demand's,
  and ``misplaced``, the tasks that ran in a group they did not ask for (``None`` otherwise).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from bench.vs_ray_idle import idle_note, idle_to_deletion, spread
from bench.vs_ray_workloads import Run

from pod_watch import PodEvent  # isort: skip


@dataclass(frozen=True)
class Figures:
    """One side's figures for one workload (module docstring)."""

    side: str
    workload: str
    tasks: int
    done: int
    finished: bool
    first_pod_s: float | None
    first_ready_s: float | None
    all_needed_s: float | None
    peak: int
    needed: int
    created: int
    pod_seconds: float
    to_deletion_median_s: float | None
    to_deletion_max_s: float | None
    to_zero_s: float | None
    busy_deleted: int
    failed: int
    retries: int
    cpu: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    by_group: dict[str, int] = field(default_factory=dict)
    beyond: int | None = None
    misplaced: int | None = None
    idle_to_deletion_median_s: float | None = None  # Ray's idle start -> deletion (vs_ray_idle)
    idle_to_deletion_max_s: float | None = None


def _first(events: list[PodEvent], what: str, since: float) -> float | None:
    times = [e.at for e in events if e.what == what]
    return min(times) - since if times else None


def all_needed_at(events: list[PodEvent], needed: dict[str, int]) -> float | None:
    """The first time every group had its needed pods Ready (and not being deleted) at once."""
    ready: dict[str, set[str]] = {g: set() for g in needed}
    for e in sorted(events, key=lambda e: e.at):
        if e.group not in ready:
            continue
        if e.what == "ready":
            ready[e.group].add(e.pod)
        elif e.what in ("deleted", "gone"):
            ready[e.group].discard(e.pod)
        if all(len(ready[g]) >= n for g, n in needed.items()):
            return e.at
    return None


def peak_pods(events: list[PodEvent]) -> int:
    """The most worker pods alive at once (deleting ones included)."""
    alive: set[str] = set()
    most = 0
    for e in sorted(events, key=lambda e: e.at):
        if e.what == "created":
            alive.add(e.pod)
        elif e.what == "gone":
            alive.discard(e.pod)
        most = max(most, len(alive))
    return most


def pod_seconds(events: list[PodEvent], end: float) -> float:
    """The sum of each pod's life (created to gone, or to ``end``)."""
    created = {e.pod: e.at for e in events if e.what == "created"}
    gone = {e.pod: e.at for e in events if e.what == "gone"}
    return sum(min(gone.get(pod, end), end) - at for pod, at in created.items())


def deletions(events: list[PodEvent]) -> dict[str, float]:
    """When each pod's deletion began."""
    return {e.pod: e.at for e in events if e.what == "deleted"}


def attempt_spans(run: Run) -> list[tuple[str, float, float]]:
    """``(pod, start, end)`` of every attempt: the task's ``done`` end for its last attempt
    when it ended there, else open (infinity: the attempt never ended normally)."""
    done = {e["task"]: e for e in run.done()}
    last: dict[int, float] = {}
    for a in run.attempts:
        last[a.task] = max(last.get(a.task, 0.0), a.start)
    spans = []
    for a in run.attempts:
        event = done.get(a.task)
        ended = event is not None and a.start == last[a.task] and event["pod"] == a.pod
        spans.append((a.pod, a.start, float(event["end"]) if ended else float("inf")))
    return spans


def busy_deleted(run: Run, deleted: dict[str, float]) -> list[str]:
    """Pods whose deletion began while an attempt ran on them."""
    return sorted(
        {pod for pod, start, end in attempt_spans(run) if start <= deleted.get(pod, -1.0) < end}
    )


def to_deletion(run: Run, deleted: dict[str, float]) -> list[float]:
    """Per pod deleted after its work: its deletion - the end of the last task it ran, or of
    the workload's last task when it ran none (a pod that ran nothing and went before the
    workload's end, one whose Ray node never joined, is churn: counted by ``created``)."""
    return list(_waits(run, deleted).values())


def _waits(run: Run, deleted: dict[str, float]) -> dict[str, float]:
    """:func:`to_deletion`'s wait of each pod it counts."""
    last_on: dict[str, float] = {}
    for e in run.done():
        last_on[e["pod"]] = max(last_on.get(e["pod"], 0.0), float(e["end"]))
    last = run.last_end()
    waits = {pod: at - last_on.get(pod, last) for pod, at in deleted.items()}
    return {pod: w for pod, w in waits.items() if w >= 0}


def deletion_by_group(run: Run, events: list[PodEvent], deleted: dict[str, float]) -> str:
    """Last task -> deletion, median / max, group by group (a workload of several groups: the
    per-pod median of all falls between groups of other idle timeouts, and a pod more in one
    group moves it), or '' for a workload of one group."""
    group_of = {e.pod: e.group for e in events if e.what == "created"}
    by: dict[str, list[float]] = {}
    for pod, wait in _waits(run, deleted).items():
        by.setdefault(group_of.get(pod, "?"), []).append(wait)
    if len(run.spec.needed) < 2 or not by:
        return ""
    parts = (f"{g} {spread(w)}" for g, w in sorted(by.items()))
    return "last task -> deletion by group, median / max (pods): " + ", ".join(parts)


def group_figures(run: Run, events: list[PodEvent]) -> tuple[int | None, list[str]]:
    """Pods beyond each group's demand, and ``unit -> group`` of every task that ran in a group
    its selector did not ask for; ``(None, [])`` when no task names its group."""
    wanted = [e for e in run.done() if "want" in e]
    if not wanted:
        return None, []
    group_of = {e.pod: e.group for e in events if e.what == "created"}
    made = Counter(group_of.values())
    beyond = sum(max(0, n - run.spec.needed.get(g, 0)) for g, n in made.items())
    wrong = [e for e in wanted if group_of.get(e["pod"]) != e["want"]]
    return beyond, [f"{e.get('unit', e['task'])} -> {group_of.get(e['pod'], '?')}" for e in wrong]


def group_notes(run: Run, events: list[PodEvent]) -> tuple[str, ...]:
    """The group of every pod: each task's (asked -> ran in), the pods that ran none."""
    group_of = {e.pod: e.group for e in events if e.what == "created"}
    wanted = [e for e in run.done() if "want" in e]
    if not wanted:
        return ()
    units = ", ".join(
        f"{e.get('unit', e['task'])} {e['want']}->{group_of.get(e['pod'], '?')}" for e in wanted
    )
    used = {e["pod"] for e in run.done()} | {a.pod for a in run.attempts}
    idle = Counter(g for p, g in group_of.items() if p not in used)
    spare = ", ".join(f"{g} {n}" for g, n in sorted(idle.items())) or "none"
    notes = (f"units (asked->ran in): {units}", f"pods that ran no unit: {spare}")
    if any("wave" in e for e in wanted):
        notes += (f"submission -> every unit running, by phase: {_by_wave(run)}",)
    return notes


def _by_wave(run: Run) -> str:
    """Per wave (phase) whose ``done`` events name it: its submission to its last unit's start."""
    submitted = {e["wave"]: float(e["at"]) for e in run.events if e["event"] == "submitted"}
    wave_of = {e["task"]: e["wave"] for e in run.done() if "wave" in e}
    last: dict[object, float] = {}
    for a in run.attempts:
        if a.task in wave_of:
            last[wave_of[a.task]] = max(last.get(wave_of[a.task], 0.0), a.start)
    parts = [f"{w} {last[w] - at:.1f} s" for w, at in submitted.items() if w in last]
    return ", ".join(parts) or "-"


def figures(
    side: str,
    run: Run,
    events: list[PodEvent],
    end: float,
    cpu: dict[str, float],
    idle_since: Mapping[str, float] | None = None,
) -> Figures:
    """The figures of one run; ``events`` are the run's pods' (since its submission), ``end``
    the end of the observation, ``idle_since`` each pod's Ray idle start when it was watched
    (:mod:`bench.vs_ray_idle`)."""
    since = run.submitted_at
    events = [e for e in events if e.at <= end]  # the cluster's own deletion is not scale-down
    deleted = deletions(events)
    waits = to_deletion(run, deleted)
    created = {e.pod for e in events if e.what == "created"}
    gone = {e.pod for e in events if e.what == "gone"}
    needed_at = all_needed_at(events, run.spec.needed)
    busy = busy_deleted(run, deleted)
    beyond, wrong = group_figures(run, events)
    notes = tuple(f"busy pod deleted: {p}" for p in busy) + group_notes(run, events)
    notes += tuple(f"in a group not asked for: {w}" for w in wrong)
    notes += tuple(filter(None, [deletion_by_group(run, events, deleted)]))
    group_of = {e.pod: e.group for e in events if e.what == "created"}
    idle_waits = list(idle_to_deletion(idle_since or {}, deleted).values())
    notes += tuple(filter(None, [idle_note(idle_since or {}, deleted, group_of)]))
    return Figures(
        side=side,
        workload=run.spec.key,
        tasks=run.spec.tasks,
        done=len(run.done()),
        finished=run.finished(),
        first_pod_s=_first(events, "created", since),
        first_ready_s=_first(events, "ready", since),
        all_needed_s=needed_at - since if needed_at is not None else None,
        peak=peak_pods(events),
        needed=sum(run.spec.needed.values()),
        created=len(created),
        pod_seconds=pod_seconds(events, end),
        to_deletion_median_s=statistics.median(waits) if waits else None,
        to_deletion_max_s=max(waits) if waits else None,
        to_zero_s=max(deleted.values()) - run.last_end() if created <= gone and deleted else None,
        busy_deleted=len(busy),
        failed=run.failed(),
        retries=max(0, len(run.attempts) - len({a.task for a in run.attempts})),
        cpu=cpu,
        notes=notes,
        by_group=dict(Counter(e.group for e in events if e.what == "created")),
        beyond=beyond,
        misplaced=None if beyond is None else len(wrong),
        idle_to_deletion_median_s=statistics.median(idle_waits) if idle_waits else None,
        idle_to_deletion_max_s=max(idle_waits) if idle_waits else None,
    )
