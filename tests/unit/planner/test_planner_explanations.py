"""What unplaceable demand with label selectors says: which of its selectors no group has."""

from __future__ import annotations

import dataclasses

from builders import cluster, group, inp, res

from keda_ray_scaler.decisions import UnplaceableReason
from keda_ray_scaler.labels import LabelSelector, selectors_of
from keda_ray_scaler.model import Bundle, Demand
from keda_ray_scaler.planner import plan

SPOT = dataclasses.replace(group("spot", cpu=10, max=1), labels={"market-type": "spot"})
ON_DEMAND = dataclasses.replace(group("on-demand", cpu=10), labels={"market-type": "on-demand"})


def test_a_full_group_names_the_fallback_no_group_satisfies() -> None:
    """[market-type=spot, zone=mars] with spot at maxReplicas 1: 5 on the spot pod, 10 at
    maxReplicas, and the detail says no group is in zone mars."""
    sels = selectors_of(
        (LabelSelector.from_ray({"market-type": "spot"}), LabelSelector.from_ray({"zone": "mars"}))
    )
    i = dataclasses.replace(
        inp(cluster(SPOT, ON_DEMAND)), demand=Demand((Bundle(res(cpu=2), 15, sels),))
    )
    (left,) = plan(i).unplaceable
    assert (left.count, left.reason) == (10, UnplaceableReason.MAX_REPLICAS)
    assert left.detail == ("at maxReplicas: spot (1); no worker group's labels satisfy zone=mars")


def test_a_list_every_selector_of_which_some_group_has_names_none() -> None:
    """[market-type=spot, market-type=on-demand], both groups full: no selector is named."""
    sels = selectors_of(LabelSelector.from_ray({"market-type": v}) for v in ("spot", "on-demand"))
    full = dataclasses.replace(ON_DEMAND, max_replicas=0)
    i = dataclasses.replace(inp(cluster(SPOT, full)), demand=Demand((Bundle(res(cpu=2), 7, sels),)))
    (left,) = plan(i).unplaceable
    assert left.reason is UnplaceableReason.MAX_REPLICAS
    assert "satisfy" not in left.detail
