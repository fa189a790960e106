"""The order in which group choices are ranked: label fallback, GPU avoidance, priority, cost,
utilisation (``docs/concepts/planner.md``, "The order of a group choice"). Each test fails if
two neighbours swap."""

from __future__ import annotations

import dataclasses

from builders import cluster, group, inp, res

from keda_ray_scaler.labels import LabelSelector, Selectors, selectors_of
from keda_ray_scaler.model import Bundle, Demand, PlanningInput, Resources, WorkerGroup
from keda_ray_scaler.planner import plan
from keda_ray_scaler.planner.solve import RunResult, better, rank


def labelled(g: WorkerGroup, priority: int = 0, **labels: str) -> WorkerGroup:
    """``g`` with Ray node labels (``_`` in a keyword stands for ``-``) and a priority."""
    named = {k.replace("_", "-"): v for k, v in labels.items()}
    return dataclasses.replace(g, labels=named, priority=priority)


def sel(*alternatives: dict[str, str]) -> Selectors:
    """Selectors in fallback order, each in Ray's dict form (``{}``: any node)."""
    return selectors_of(LabelSelector.from_ray(a) for a in alternatives)


def demand(spec: object, *bundles: tuple[Resources, int, Selectors]) -> PlanningInput:
    """A planning input of task bundles ``(resources, count, selectors)``."""
    base = inp(spec)  # type: ignore[arg-type]
    return dataclasses.replace(base, demand=Demand(tuple(Bundle(r, n, s) for r, n, s in bundles)))


def new_pods(spec: object, *bundles: tuple[Resources, int, Selectors]) -> dict[str, int]:
    """New pods per group of the plan of ``bundles``."""
    return {name: g.new for name, g in plan(demand(spec, *bundles)).groups.items()}


def test_the_first_selector_ranks_before_gpu_avoidance() -> None:
    """CPU-only demand asking [A100, then any node]: the A100 group's pod, as Ray's score puts
    the label match before ``gpu_ok``; the CPU group only by the fallback."""
    a100 = labelled(group("a100", cpu=8, gpu=1, cost=4.0), accelerator="A100")
    cpu = group("cpu", cpu=8, cost=1.0)
    wanted = sel({"accelerator": "A100"}, {})
    assert new_pods(cluster(a100, cpu), (res(cpu=2), 1, wanted)) == {"a100": 1, "cpu": 0}


def test_the_first_selector_ranks_before_priority() -> None:
    """[spot, then on-demand] with on-demand at priority 5: spot pods; priority orders only
    the groups one tier admits."""
    spot = labelled(group("spot", cpu=10), market_type="spot")
    on_demand = labelled(group("on-demand", cpu=10), priority=5, market_type="on-demand")
    wanted = sel({"market-type": "spot"}, {"market-type": "on-demand"})
    got = new_pods(cluster(spot, on_demand), (res(cpu=5), 4, wanted))
    assert got == {"spot": 2, "on-demand": 0}


def test_gpu_avoidance_ranks_before_priority() -> None:
    """CPU-only demand, the GPU group at priority 5: the CPU group's pods (Ray: ``gpu_ok`` in
    the score, priority after it), on a small input (searched) and on one of 150 pods (the
    packer's choice alone: the search skips inputs of more than 128 pods)."""
    gpu = labelled(group("gpu", cpu=16, gpu=1, cost=1.0), priority=5)
    cpu = group("cpu", cpu=16, cost=1.0)
    assert new_pods(cluster(gpu, cpu), (res(cpu=4), 8, ())) == {"gpu": 0, "cpu": 2}
    assert new_pods(cluster(gpu, cpu), (res(cpu=4), 600, ())) == {"gpu": 0, "cpu": 150}


def test_gpu_demand_goes_by_priority_among_gpu_groups() -> None:
    """GPU demand: avoidance does not apply; the priority-1 GPU group, though dearer."""
    cheap = group("gpu-cheap", cpu=8, gpu=1, cost=1.0)
    preferred = labelled(group("gpu-preferred", cpu=8, gpu=1, cost=3.0), priority=1)
    got = new_pods(cluster(cheap, preferred), (res(cpu=1, gpu=1), 2, ()))
    assert got == {"gpu-cheap": 0, "gpu-preferred": 2}


def test_priority_ranks_before_cost() -> None:
    """Two CPU groups of the same pods: the dearer one at priority 1 gets every pod, searched
    or not (300 pods)."""
    cheap = group("cheap", cpu=10, cost=0.5)
    preferred = labelled(group("preferred", cpu=10, cost=2.0), priority=1)
    spec = cluster(cheap, preferred)
    assert new_pods(spec, (res(cpu=5), 4, ())) == {"cheap": 0, "preferred": 2}
    assert new_pods(spec, (res(cpu=5), 600, ())) == {"cheap": 0, "preferred": 300}


def test_priority_ranks_before_utilisation() -> None:
    """{CPU: 4}: a 4-CPU pod is used wholly, a 16-CPU pod a quarter, at the same price; the
    16-CPU group at priority 1 wins (Ray would take the 4-CPU pod: its utilisation score ranks
    before priority)."""
    big = labelled(group("big", cpu=16, cost=1.0), priority=1)
    small = group("small", cpu=4, cost=1.0)
    assert new_pods(cluster(big, small), (res(cpu=4), 1, ())) == {"big": 1, "small": 0}


def test_cost_ranks_before_utilisation() -> None:
    """Without priorities, {CPU: 4}: a 16-CPU pod at 1.0 rather than a 4-CPU pod at 1.5 it
    would fill (Ray's score would take the 4-CPU pod)."""
    big = group("big", cpu=16, cost=1.0)
    small = group("small", cpu=4, cost=1.5)
    assert new_pods(cluster(big, small), (res(cpu=4), 1, ())) == {"big": 1, "small": 0}


def _result(**fields: object) -> RunResult:
    base = RunResult(new=[], by_step={}, unplaceable=[], busy=set())
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def test_runs_are_compared_in_this_order() -> None:
    """The search's comparison, field by field: each earlier field outweighs any later one."""
    every = _result(unplaced=1, fallen=2, gpu_waste=3, demoted=(4,), cost=5.0, unused=6.0)
    assert rank(every) == (1, 2, 3, (4,), 5.0, 6.0)
    pairs = [  # (better, worse): better on the earlier field, worse on every later one
        (_result(unplaced=0, fallen=9), _result(unplaced=1, fallen=0)),
        (_result(fallen=0, gpu_waste=9), _result(fallen=1, gpu_waste=0)),
        (_result(gpu_waste=0, demoted=(9,)), _result(gpu_waste=1, demoted=(0,))),
        (_result(demoted=(0,), cost=9.0), _result(demoted=(1,), cost=1.0)),
        (_result(cost=1.0, unused=9.0), _result(cost=2.0, unused=0.0)),
    ]
    for good, bad in pairs:
        assert better(good, bad), (rank(good), rank(bad))
        assert not better(bad, good)
