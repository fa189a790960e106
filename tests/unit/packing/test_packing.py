"""The packer on vectors: arithmetic placement, pod classes, group choice, injected strategies."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from keda_ray_scaler.packing.limits import Limits
from keda_ray_scaler.packing.newpods import NewPods
from keda_ray_scaler.packing.packer import Packer
from keda_ray_scaler.packing.shapes import (
    Candidate,
    GroupSpec,
    ResourceFirstOrderer,
    Strategies,
    Vec,
    dominant_share_orderer,
    fit_count,
    need_of,
    ray_scorer,
    scarcity_orderer,
)
from keda_ray_scaler.packing.spread import place_spread, place_spread_copies

# vectors over (CPU, GPU), in whole units for readability
CPU10 = GroupSpec("cpu", (10, 0), 1.0)
CPU4 = GroupSpec("small", (4, 0), 0.5)
GPU = GroupSpec("gpu", (8, 1), 4.0)
BIG = 1 << 40


def packer(
    *groups: GroupSpec, existing: Sequence[tuple[int, Vec, Vec, str]] = (), **kw: object
) -> Packer:
    """A packer over ``groups`` with no bounds."""
    new = NewPods(groups, Limits([BIG] * len(groups), BIG))
    return Packer(groups=groups, existing=existing, new=new, gpu_index=1, **kw)  # type: ignore[arg-type]


def test_copies_that_fit_are_the_minimum_over_resources() -> None:
    """fit = min over resources of floor(free / need)."""
    assert fit_count((10, 1), need_of((3, 0))) == 3
    assert fit_count((10, 1), need_of((3, 1))) == 1
    assert fit_count((10, 0), need_of((3, 1))) == 0


def test_twenty_copies_of_five_cpu_need_ten_ten_cpu_pods() -> None:
    """20 x {CPU: 5} open exactly 10 pods of 10 CPUs, all full."""
    p = packer(CPU10)
    assert p.place([((5, 0), 20)]) == []
    assert p.new.count == [10]
    assert p.new.open == {(0, (0, 0)): 10}


def test_a_million_bundles_are_placed_arithmetically() -> None:
    """1,000,000 x {CPU: 1}: 100,000 pods in one class, no per-bundle work."""
    p = packer(CPU10)
    assert p.place([((1, 0), 1_000_000)]) == []
    assert p.new.open == {(0, (0, 0)): 100_000}


def test_identical_existing_pods_form_one_class() -> None:
    """Three pods with the same free vector are one class of count 3."""
    existing = [(0, (10, 0), (5, 0), f"p{i}") for i in range(3)]
    p = packer(CPU10, existing=existing)
    assert len(p.existing.classes) == 1
    assert p.place([((5, 0), 2)]) == []
    assert p.new.count == [0]
    assert p.busy_pods() == {"p0", "p1", "p2"}


def test_partly_used_pods_take_demand_before_wholly_free_ones() -> None:
    """A {CPU: 5} task goes on the pod already in use, the free one stays free."""
    existing = [(0, (10, 0), (10, 0), "free"), (0, (10, 0), (5, 0), "used")]
    p = packer(CPU10, existing=existing)
    p.place([((5, 0), 1)])
    assert p.existing.classes[(0, (10, 0), (10, 0))].pods == ["free"]


def test_free_pods_take_demand_in_the_order_given() -> None:
    """Among wholly free pods, the first given (least idle) takes demand first."""
    existing = [(0, (10, 0), (10, 0), "least-idle"), (0, (10, 0), (10, 0), "most-idle")]
    p = packer(CPU10, existing=existing)
    p.place([((10, 0), 1)])
    assert p.existing.classes[(0, (10, 0), (10, 0))].pods == ["most-idle"]


def test_leftovers_of_new_pods_take_smaller_shapes() -> None:
    """3 x {CPU: 6} then 3 x {CPU: 4}: the 4s fill the 6s' pods, 3 pods in all."""
    p = packer(CPU10)
    assert p.place([((6, 0), 3), ((4, 0), 3)]) == []
    assert p.new.count == [3]


def test_gpu_demand_never_opens_cpu_pods() -> None:
    """{GPU: 1} opens GPU pods only."""
    p = packer(CPU10, GPU)
    p.place([((1, 1), 2)])
    assert p.new.count == [0, 2]


def test_cpu_demand_does_not_open_gpu_pods_when_a_cpu_group_fits() -> None:
    """Ray's GPU avoidance wins over utilisation."""
    cheap_gpu = GroupSpec("gpu", (16, 1), 0.1)
    p = packer(CPU10, cheap_gpu)
    p.place([((2, 0), 5)])
    assert p.new.count == [1, 0]


def test_cpu_demand_fills_the_leftovers_of_gpu_pods_it_needs_anyway() -> None:
    """GPU shapes go first; the CPU left on GPU pods takes CPU demand before new CPU pods."""
    p = packer(CPU10, GPU)
    p.place([((4, 0), 2), ((4, 1), 2)])
    assert p.new.count == [0, 2]


def test_the_remainder_goes_to_the_cheaper_group_by_lookahead() -> None:
    """21 x {CPU: 1}: 2 pods of 10 and one of 4 (cost 2.5) beat 3 pods of 10 (cost 3)."""
    p = packer(CPU10, CPU4)
    p.place([((1, 0), 21)])
    assert p.new.count == [2, 1]


def test_headroom_limits_new_pods_and_the_rest_is_returned() -> None:
    """maxReplicas headroom 2: 4 of 6 {CPU: 5} placed, 2 returned."""
    new = NewPods([CPU10], Limits([2], BIG))
    p = Packer(groups=[CPU10], existing=[], new=new)
    assert p.place([((5, 0), 6)]) == [((5, 0), 2)]


def test_a_strict_spread_gang_uses_distinct_pods() -> None:
    """Three {CPU: 1} bundles of one STRICT_SPREAD gang open three pods."""
    p = packer(CPU10)
    assert place_spread(p, [(1, 0)] * 3)
    assert p.new.count == [3]


def test_a_strict_spread_gang_that_does_not_fit_leaves_no_trace() -> None:
    """All or nothing: a failed gang restores the state."""
    new = NewPods([CPU10], Limits([2], BIG))
    p = Packer(groups=[CPU10], existing=[], new=new)
    assert not place_spread(p, [(1, 0)] * 3)
    assert (p.new.count, p.new.open) == ([0], {})


def test_ray_scorer_puts_gpu_pods_for_cpu_demand_in_a_worse_tier() -> None:
    """Tier 1 for a GPU pod taking no GPU; utilisation min and mean otherwise."""
    assert ray_scorer(Candidate("gpu", (8, 1), 4.0, (4, 0), 2, 1)) == (1, 0.0, 0.5)
    assert ray_scorer(Candidate("gpu", (8, 1), 4.0, (4, 1), 1, 1)) == (0, 0.5, 0.75)


def test_an_injected_scorer_changes_the_group_choice() -> None:
    """A scorer that puts the CPU group in tier 1 sends CPU demand to GPU pods."""

    def prefer_gpu(c: Candidate) -> tuple[int, float, float]:
        return (0 if c.group == "gpu" else 1, 0.0, 0.0)

    p = packer(CPU10, GPU, strategies=Strategies(scorer=prefer_gpu))
    p.place([((4, 0), 2)])
    assert p.new.count == [0, 1]


def test_scarcity_orderer_puts_gpu_shapes_before_larger_cpu_shapes() -> None:
    """GPU shapes (fewer groups have GPUs) come first, then the largest."""
    groups = [CPU10, GPU]
    assert scarcity_orderer([(2, 0), (9, 0), (1, 1)], groups) == [(1, 1), (9, 0), (2, 0)]
    assert dominant_share_orderer([(2, 0), (9, 0), (1, 1)], groups) == [(1, 1), (9, 0), (2, 0)]
    assert dominant_share_orderer([(2, 0), (9, 0)], [CPU10, CPU4]) == [(9, 0), (2, 0)]


def test_pattern_mode_mixes_shapes_in_one_pod() -> None:
    """Patterns: 19 x {CPU: 6} and 8 x {CPU: 5} on 32-CPU pods take 5 pods, FFD takes 6."""
    big = GroupSpec("big", (32, 0), 8.0)
    demand = [((6, 0), 19), ((5, 0), 8)]
    ffd, patterns = packer(big), packer(big, patterns=True)
    assert ffd.place(demand) == [] and ffd.new.count == [6]
    assert patterns.place(demand) == [] and patterns.new.count == [5]
    assert patterns.new.open == {(0, (0, 0)): 2, (0, (2, 0)): 3}


def test_pattern_mode_repeats_a_pattern_arithmetically() -> None:
    """A million {CPU: 1} in pattern mode: one knapsack, 100,000 pods opened at once."""
    p = packer(CPU10, patterns=True)
    assert p.place([((1, 0), 1_000_000)]) == []
    assert p.new.open == {(0, (0, 0)): 100_000}


def test_identical_strict_spread_copies_are_placed_at_once() -> None:
    """1,000 STRICT_SPREAD gangs of 4 x {CPU: 1}: 4,000 bundles, at most 1,000 a pod, 400 pods."""
    p = packer(CPU10)
    assert place_spread_copies(p, (1, 0), 4, 1000)
    assert p.new.count == [400]


def test_few_identical_strict_spread_copies_still_need_distinct_pods() -> None:
    """2 gangs of 3 x {CPU: 1}: at most 2 bundles a pod, so 3 pods, not 1."""
    p = packer(CPU10)
    assert place_spread_copies(p, (1, 0), 3, 2)
    assert p.new.count == [3]


def test_resource_first_orderer_puts_the_biggest_user_of_one_resource_first() -> None:
    """Ordered by GPU share: the GPU shapes first, the larger GPU one before; then by scarcity."""
    groups = [CPU10, GroupSpec("gpu", (8, 2), 4.0)]
    order = ResourceFirstOrderer(1)([(9, 0), (1, 1), (2, 0), (1, 2)], groups)
    assert order == [(1, 2), (1, 1), (9, 0), (2, 0)]


def test_a_gpu_pod_opened_for_cpu_demand_is_not_wasted_once_it_holds_gpu_demand() -> None:
    """Opened for CPU demand (avoidable), it counts as wasted until GPU demand lands on it."""
    new = NewPods([CPU10, GPU], Limits([BIG, BIG], BIG))
    new.add(1, 2, (4, 1), avoidable=True)
    assert new.wasted(1) == 2
    assert new.fill((1, 1), need_of((1, 1)), 1, (0.0, 1.0)) == 0
    assert new.wasted(1) == 1


# --- the packer's state: fork, adopt ----------------------------------------------------------

#: Mutable objects a fork may share with its packer: a cache that is a pure function of its key.
#: memos of pure functions, shared by a fork on purpose
SHARED_ON_PURPOSE = {
    "packer.new.rank",
    "packer.new.spare",
    "packer.existing.rank",
    "packer.memo",
}


def _attrs(obj: object) -> dict[str, object]:
    """An object's attributes: dataclass fields, ``__slots__`` along the MRO, or ``__dict__``."""
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    slots = [s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())]
    return {s: getattr(obj, s) for s in slots} if slots else dict(vars(obj))


def _immutable(value: object) -> bool:
    if isinstance(value, (bool, int, float, str, frozenset, type(None))) or callable(value):
        return True
    if isinstance(value, tuple):
        return all(_immutable(v) for v in value)
    params = getattr(value, "__dataclass_params__", None)
    return params is not None and params.frozen


def _shared(a: object, b: object, path: str) -> list[str]:
    """Paths below ``path`` where ``a`` and ``b`` hold the very same mutable object."""
    if _immutable(a) or path in SHARED_ON_PURPOSE:
        return []
    if a is b:
        return [path]
    if isinstance(a, dict) and isinstance(b, dict):
        return [x for k in a.keys() & b.keys() for x in _shared(a[k], b[k], f"{path}[{k!r}]")]
    if isinstance(a, list) and isinstance(b, list):
        pairs_ = enumerate(zip(a, b, strict=True))
        return [x for i, (u, v) in pairs_ for x in _shared(u, v, f"{path}[{i}]")]
    pairs = _attrs(a).items()
    return [x for k, v in pairs for x in _shared(v, getattr(b, k), f"{path}.{k}")]


def _plain(value: object, path: str = "packer") -> object:
    """Everything an object holds, as comparable plain data (shared caches left out)."""
    if _immutable(value):
        return value
    if isinstance(value, dict):
        return {k: _plain(v, f"{path}[{k!r}]") for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, f"{path}[{i}]") for i, v in enumerate(value)]
    attrs = _attrs(value).items()
    return {k: _plain(v, f"{path}.{k}") for k, v in attrs if f"{path}.{k}" not in SHARED_ON_PURPOSE}


def _busy_packer() -> Packer:
    """A packer with used and free existing pods, new pods opened and a rate limit."""
    existing = [
        (0, (10, 0), (4, 0), "used"),
        (0, (10, 0), (10, 0), "idle"),
        (1, (8, 1), (8, 1), "g"),
    ]
    p = packer(CPU10, GPU, existing=existing)
    p.place([((3, 0), 7), ((2, 1), 1)])
    p.paced([5, 5])
    return p


def test_a_fork_shares_no_mutable_state_with_its_packer() -> None:
    """Every field of Packer (and everything below it) is copied, whatever fields there are."""
    p = _busy_packer()
    fork = p.fork()
    assert {f.name for f in dataclasses.fields(Packer)} <= set(_attrs(fork))
    assert _shared(p, fork, "packer") == []


def test_changing_every_part_of_a_fork_leaves_the_packer_unchanged() -> None:
    """Placing, spreading and pacing on a fork change none of the original's state."""
    p = _busy_packer()
    before = _plain(p)
    fork = p.fork()
    fork.place([((1, 0), 40), ((1, 1), 3)])
    assert place_spread(fork, [(2, 0)] * 3)
    assert place_spread_copies(fork, (1, 0), 2, 3)
    fork.paced(None)
    assert _plain(fork) != before
    assert _plain(p) == before


def test_adopting_a_fork_takes_all_of_its_state() -> None:
    """After adopt, the packer holds exactly what the fork held."""
    p = _busy_packer()
    fork = p.fork()
    fork.place([((1, 0), 40)])
    p.adopt(fork)
    assert _plain(p) == _plain(fork)
