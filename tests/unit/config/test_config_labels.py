"""Cluster spec and snapshot files: group labels and priority, demand selectors, node labels."""

from __future__ import annotations

from typing import Any

import pytest

from keda_ray_scaler.config import parse_cluster_spec, parse_snapshot
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.labels import LabelSelector, selectors_of
from keda_ray_scaler.planner import plan

SPEC = {
    "cluster": "demo",
    "workerGroups": [
        {"name": "spot", "resources": {"CPU": 10}, "labels": {"market-type": "spot"}},
        {"name": "od", "resources": {"CPU": 10}, "cost": 0.5, "priority": -1},
    ],
}


def test_group_labels_and_priority_are_read() -> None:
    """``labels`` (Ray's syntax) and ``priority`` (an int32, negative allowed; default 0)."""
    spot, od = parse_cluster_spec(SPEC, "c.yaml").worker_groups
    assert (dict(spot.labels), spot.priority) == ({"market-type": "spot"}, 0)
    assert (dict(od.labels), od.priority) == ({}, -1)


def test_snapshot_selectors_bundle_selectors_and_node_labels_are_read_and_planned() -> None:
    """A task with a fallback list, a placement group with one selector per bundle, a labelled
    node; the plan puts the spot task on the spot group though on-demand is cheaper."""
    cluster = parse_cluster_spec(SPEC, "c.yaml")
    snap = {
        "bundles": [
            {"resources": {"CPU": 5}, "count": 2, "selectors": [{"market-type": "spot"}, {}]}
        ],
        "placementGroups": [
            {
                "strategy": "SPREAD",
                "bundles": [{"CPU": 1}, {"CPU": 1}],
                "bundleSelectors": [{"market-type": "!spot"}, {}],
            }
        ],
        "nodes": [{"group": "od", "pod": "od-1", "labels": {"market-type": "on-demand"}}],
    }
    inp = parse_snapshot(snap, "s.yaml", cluster)
    (b,) = inp.demand.bundles
    assert b.selectors == selectors_of(
        [LabelSelector.from_ray({"market-type": "spot"}), LabelSelector()]
    )
    (pg,) = inp.demand.placement_groups
    assert [str(s[0]) for s in pg.selectors if s] == ["market-type=!spot"] and pg.selectors[1] == ()
    assert dict(inp.nodes[0].labels) == {"market-type": "on-demand"}
    p = plan(inp)
    assert (p.groups["spot"].new, p.groups["od"].new, p.groups["od"].busy) == (1, 0, 1)


@pytest.mark.parametrize(
    ("group", "field"),
    [
        ({"labels": {"bad key": "x"}}, "workerGroups[0].labels"),
        ({"labels": {"k": 1}}, "workerGroups[0].labels"),
        ({"priority": 1.5}, "workerGroups[0].priority"),
        ({"priority": 2**31}, "workerGroups[0].priority"),
    ],
)
def test_a_bad_group_label_or_priority_names_the_field(group: dict[str, Any], field: str) -> None:
    """Each error names the field path."""
    doc = {"cluster": "demo", "workerGroups": [{"name": "cpu", "resources": {"CPU": 1}, **group}]}
    with pytest.raises(ConfigError) as caught:
        parse_cluster_spec(doc, "c.yaml")
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("snap", "field"),
    [
        ({"bundles": [{"resources": {"CPU": 1}, "selectors": {"k": "v"}}]}, "bundles[0].selectors"),
        (
            {"bundles": [{"resources": {"CPU": 1}, "selectors": [{"k": "in()"}]}]},
            "bundles[0].selectors",
        ),
        (
            {
                "placementGroups": [
                    {"strategy": "PACK", "bundles": [{"CPU": 1}], "bundleSelectors": [{}, {}]}
                ]
            },
            "placementGroups[0].bundleSelectors",
        ),
        ({"nodes": [{"group": "od", "pod": "p", "labels": {"k": "a b"}}]}, "nodes[0].labels"),
    ],
)
def test_a_bad_selector_or_node_label_names_the_field(snap: dict[str, Any], field: str) -> None:
    """Each error names the field path."""
    with pytest.raises(ConfigError) as caught:
        parse_snapshot(snap, "s.yaml", parse_cluster_spec(SPEC, "c.yaml"))
    assert caught.value.field == field
