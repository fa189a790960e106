"""The packer's group choice in order (GPU avoidance, priority, cost), and label ids: a labelled
shape only on pods that admit it, the label never subtracted, placements tallied."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from keda_ray_scaler.packing.limits import Limits
from keda_ray_scaler.packing.newpods import NewPods
from keda_ray_scaler.packing.packer import Packer
from keda_ray_scaler.packing.shapes import GroupSpec, Vec, label_of, minus
from keda_ray_scaler.packing.spread import place_spread

BIG = 1 << 40
# vectors over (CPU, GPU), in whole units for readability
CPU = GroupSpec("cpu", (16, 0), 1.0)
GPU_FIRST = GroupSpec("gpu", (16, 1), 1.0, priority=5)
CHEAP = GroupSpec("cheap", (16, 0), 0.5)
PREFERRED = GroupSpec("preferred", (16, 0), 2.0, priority=1)


def packer(
    *groups: GroupSpec,
    existing: Sequence[tuple[int, Vec, Vec, str]] = (),
    patterns: bool = False,
    lookahead: int = 8,
) -> Packer:
    """A packer over ``groups`` with no bounds."""
    new = NewPods(groups, Limits([BIG] * len(groups), BIG))
    p = Packer(groups=groups, existing=existing, new=new, gpu_index=1, patterns=patterns)
    p.strategies = type(p.strategies)(lookahead=lookahead)
    return p


@pytest.mark.parametrize("patterns", [False, True], ids=["rollout", "patterns"])
@pytest.mark.parametrize("lookahead", [0, 8], ids=["greedy", "lookahead"])
def test_a_gpu_group_of_higher_priority_gets_no_cpu_demand(patterns: bool, lookahead: int) -> None:
    """GPU avoidance ranks before priority: 8 x {CPU: 4} open two CPU pods."""
    p = packer(GPU_FIRST, CPU, patterns=patterns, lookahead=lookahead)
    assert p.place([((4, 0), 8)]) == []
    assert p.new.count == [0, 2]


@pytest.mark.parametrize("patterns", [False, True], ids=["rollout", "patterns"])
@pytest.mark.parametrize("lookahead", [0, 8], ids=["greedy", "lookahead"])
def test_priority_outweighs_cost(patterns: bool, lookahead: int) -> None:
    """Two CPU groups of one pod size: the dearer one at priority 1 takes all."""
    p = packer(CHEAP, PREFERRED, patterns=patterns, lookahead=lookahead)
    assert p.place([((4, 0), 8)]) == []
    assert p.new.count == [0, 2]


def test_the_lower_priority_takes_over_when_the_higher_has_no_room() -> None:
    """The priority group may open one pod: the rest goes to the other group."""
    groups = (CHEAP, PREFERRED)
    new = NewPods(groups, Limits([BIG, 1], BIG))
    p = Packer(groups=groups, existing=[], new=new, gpu_index=1)
    assert p.place([((4, 0), 8)]) == []
    assert p.new.count == [1, 1]


# --- label ids ------------------------------------------------------------------------------
# pod vectors (CPU, GPU, admission class); a labelled shape (CPU, GPU, 0, label id)
SPOT = GroupSpec("spot", (16, 0, 0), 2.0, admits=(frozenset({1}), frozenset({1, 2})))
OTHER = GroupSpec("other", (16, 0, 0), 1.0, admits=(frozenset({2}),))


def test_a_labelled_shape_goes_only_to_groups_that_admit_it() -> None:
    """Label 1: only spot's new pods admit it, though the other group is cheaper."""
    p = packer(SPOT, OTHER)
    assert p.place([((4, 0, 0, 1), 8), ((4, 0, 0), 4)]) == []
    assert p.new.count == [2, 1]
    assert p.new.placed == {(1, 0): 8}


def test_a_label_no_group_admits_is_left() -> None:
    """Label 3: no pod admits it; nothing opened, all of it returned."""
    p = packer(SPOT, OTHER)
    assert p.place([((4, 0, 0, 3), 5)]) == [((4, 0, 0, 3), 5)]
    assert p.new.count == [0, 0]


def test_existing_pods_take_a_label_by_their_class() -> None:
    """A spot pod of class 1 admits label 2; one of class 0 does not: it takes only label 1."""
    existing = [(0, (16, 0, 1), (16, 0, 1), "spot-1"), (0, (16, 0, 0), (16, 0, 0), "spot-0")]
    p = packer(SPOT, OTHER, existing=existing)
    assert p.place([((8, 0, 0, 2), 2)]) == []
    assert p.new.count == [0, 0]
    assert p.existing.busy_pods() == {"spot-1"}
    assert p.existing.placed == {(2, 0, 1): 2}


def test_the_label_id_and_the_class_are_never_subtracted() -> None:
    """minus stops at the pod vector; the shape's class entry is 0."""
    assert minus((16, 0, 1), (4, 0, 0, 7), 3) == (4, 0, 1)
    assert label_of((4, 0, 0, 7), 3) == 7
    assert label_of((4, 0, 0), 3) == 0


def test_pods_with_different_labels_placed_stay_one_class() -> None:
    """Two labels on identical pods leave them identical: one class, not one per label."""
    both = GroupSpec("both", (16, 0, 0), 1.0, admits=(frozenset({1, 2}),))
    p = packer(both)
    assert p.place([((8, 0, 0, 1), 2), ((8, 0, 0, 2), 2)]) == []
    assert p.new.open == {(0, (0, 0, 0)): 2}
    assert p.new.placed == {(1, 0): 2, (2, 0): 2}


def test_strict_spread_respects_labels() -> None:
    """STRICT_SPREAD of two label-1 bundles: two spot pods, none of the other group."""
    p = packer(SPOT, OTHER)
    assert place_spread(p, [(2, 0, 0, 1), (2, 0, 0, 1)])
    assert p.new.count == [2, 0]
    assert p.new.placed == {(1, 0): 2}
