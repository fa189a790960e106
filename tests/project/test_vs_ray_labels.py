"""Workload (e) of the side-by-side benchmark without a bed: the label driver's events as a run,
the group of every pod, the pods beyond each group's demand and the tasks in a group their
selectors did not ask for (bench/vs_ray_labels.py, bench/vs_ray_figures.py)."""

from __future__ import annotations

from typing import Any

from kuberay_examples import example
from pod_watch import PodEvent

from bench.vs_ray_figures import figures
from bench.vs_ray_labels import TASKS, labels_run, relabel
from bench.vs_ray_profile import FAST, PRODUCTION
from bench.vs_ray_table import table, vs_ray_line
from bench.vs_ray_workloads import LABEL_UNITS

#: unit -> (pod, the group of that pod)
RIGHT = {
    "spot-0": ("s1", "spot"),
    "spot-1": ("s2", "spot"),
    "pg-0": ("s3", "spot"),
    "pg-1": ("o1", "on-demand"),
    "gpu-actor": ("g1", "gpu"),
    "fallback": ("o2", "on-demand"),
    "priority": ("s4", "spot"),
}


def _events(where: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    units = [u for u in LABEL_UNITS if u in where]
    out: list[dict[str, Any]] = [
        {"event": "connected", "at": 99.0},
        {"event": "submitted", "phase": 1, "units": [*units, "nowhere"], "at": 100.0},
        {"event": "done", "unit": "gpu-actor", "pod": where["gpu-actor"][0], "at": 120.0},
    ]
    out += [
        {"event": "done", "unit": u, "pod": where[u][0], "at": 200.0}
        for u in units
        if u != "gpu-actor"
    ]
    return out


def _pods(
    where: dict[str, tuple[str, str]], extra: tuple[str, str] | None = None
) -> list[PodEvent]:
    pods = sorted(set(where.values()) | ({extra} if extra else set()))
    out = []
    for pod, group in pods:
        out += [PodEvent(105.0, pod, group, "created"), PodEvent(110.0, pod, group, "ready")]
        out += [PodEvent(230.0, pod, group, "deleted"), PodEvent(231.0, pod, group, "gone")]
    return out


def _run(where: dict[str, tuple[str, str]]) -> Any:
    started = {u: pod for u, (pod, _) in where.items() if u in LABEL_UNITS}
    return labels_run(_events(where), started, dict.fromkeys(started, 110.0), 95.0, 210.0)


def test_the_driver_events_as_a_run() -> None:
    where = {u: RIGHT[u] for u in LABEL_UNITS}
    run = _run(where)
    assert run.submitted_at == 99.0 and run.finished()  # phase 1 goes out once connected
    done = {e["unit"]: e for e in run.done()}
    assert set(done) == set(LABEL_UNITS)  # the reserved task never ran: no task of its own
    assert done["gpu-actor"]["end"] == 210.0  # the actor holds its pod until the driver ends
    assert done["spot-0"] == {
        "event": "done", "task": TASKS["spot-0"], "unit": "spot-0", "want": "spot", "wave": 1,
        "pod": "s1", "start": 110.0, "end": 200.0,
    }  # fmt: skip
    assert len(run.attempts) == len(LABEL_UNITS)


def test_every_unit_in_the_group_it_asked_for() -> None:
    where = {u: RIGHT[u] for u in LABEL_UNITS}
    f = figures("ours", _run(where), _pods(where), 300.0, {})
    assert f.by_group == {g: n for g, n in _run(where).spec.needed.items()}
    assert (f.beyond, f.misplaced) == (0, 0)
    assert f.notes[0].startswith("units (asked->ran in): ")
    assert "spot-0 spot->spot" in f.notes[0]
    assert f.notes[1] == "pods that ran no unit: none"
    assert f.notes[2].startswith("submission -> every unit running, by phase: 1 11.0 s")


def test_a_unit_elsewhere_and_a_spare_pod_are_counted() -> None:
    where = {u: RIGHT[u] for u in LABEL_UNITS} | {"fallback": ("s9", "spot")}
    f = figures("ray", _run(where), _pods(where, ("x1", "gpu")), 300.0, {})
    assert f.misplaced == 1 and "in a group not asked for: fallback -> spot" in f.notes
    assert f.beyond == 2  # a spot pod beyond the demand's, a gpu pod that ran nothing
    assert "pods that ran no unit: gpu 1" in f.notes
    right = {u: RIGHT[u] for u in LABEL_UNITS}
    ours = figures("ours", _run(right), _pods(right), 300.0, {})
    line = vs_ray_line({("fast", "e"): {"ours": ours, "ray": f}})
    assert " beyond 0/2 misplaced 0/1" in line
    assert any(
        "ray pods by group: gpu 2, on-demand 1, spot" in x
        for x in table({("fast", "e"): {"ours": ours, "ray": f}})
    )


def test_a_workload_without_selectors_has_no_group_figures() -> None:
    from test_vs_ray_figures import _pods as seed_pods
    from test_vs_ray_figures import _run as seed_run

    f = figures("ours", seed_run(), seed_pods(), 200.0, {})
    assert (f.beyond, f.misplaced, f.by_group) == (None, None, {"cpu": 3})
    assert "groups" not in vs_ray_line({("fast", "a"): {"ours": f, "ray": f}})


def test_the_labelled_groups_take_the_profile_idle_timeout() -> None:
    shipped = {g["groupName"]: g for g in example()["spec"]["workerGroupSpecs"]}["cpu"]
    for profile, idle in ((FAST, FAST.idle_s), (PRODUCTION, shipped["idleTimeoutSeconds"])):
        namespace = {"kind": "Namespace", "metadata": {"name": "ray"}}
        _, rc = relabel(profile)([namespace, example()])
        groups = {g["groupName"]: g for g in rc["spec"]["workerGroupSpecs"]}
        assert set(groups) == {"spot", "on-demand", "gpu"}
        assert {g["idleTimeoutSeconds"] for g in groups.values()} == {idle}
        assert groups["spot"]["labels"] == {"market-type": "spot", "tier": "batch"}
