"""A RayCluster's worker-group labels and priority, read as Ray's KubeRay integration reads them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ray.autoscaler._private.kuberay.autoscaling_config import (
    _derive_autoscaling_config_from_ray_cr,
)

from keda_ray_scaler.agent.kuberay.raycluster import cluster_spec
from keda_ray_scaler.errors import ConfigError


def worker(name: str = "g", **fields: Any) -> dict[str, Any]:
    """A worker group spec of 4 CPUs with extra fields (``labels``, ``priority`` ...)."""
    group = {
        "groupName": name,
        "minReplicas": 0,
        "maxReplicas": 5,
        "rayStartParams": {},
        "template": {
            "spec": {"containers": [{"name": "w", "resources": {"limits": {"cpu": "4"}}}]}
        },
    }
    group.update(fields)
    return group


def raycluster(*groups: dict[str, Any]) -> dict[str, Any]:
    """A RayCluster with these worker groups."""
    head = worker()
    del head["groupName"]
    return {
        "metadata": {"name": "rc", "namespace": "ns"},
        "spec": {"headGroupSpec": head, "workerGroupSpecs": list(groups)},
    }


def test_top_level_labels_and_priority_are_rays_own() -> None:
    """KubeRay 1.5+ ``labels`` and 1.7 ``priority``: what Ray's autoscaling config reads."""
    rc = raycluster(
        worker("spot", labels={"market-type": "spot", "zone": "a"}, priority=10),
        worker("od", labels={"market-type": "on-demand"}),
    )
    ray = _derive_autoscaling_config_from_ray_cr(copy.deepcopy(rc))["available_node_types"]
    spot, od = cluster_spec(rc).worker_groups
    assert (dict(spot.labels), spot.priority) == (ray["spot"]["labels"], ray["spot"]["priority"])
    assert (dict(od.labels), od.priority) == (ray["od"]["labels"], 0)


def test_ray_start_params_labels_are_read_under_the_top_level_ones() -> None:
    """``rayStartParams.labels`` ("k=v,k2=v2", which the raylet gets too), top level wins."""
    rc = raycluster(
        worker(rayStartParams={"labels": "zone=a, tier=gold"}, labels={"zone": "b"}),
    )
    (g,) = cluster_spec(rc).worker_groups
    assert dict(g.labels) == {"tier": "gold", "zone": "b"}


def test_a_group_without_labels_has_none_and_priority_zero() -> None:
    """No labels field, no priority: as before (the planner adds ray.io/node-group itself)."""
    (g,) = cluster_spec(raycluster(worker())).worker_groups
    assert (dict(g.labels), g.priority) == ({}, 0)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"labels": {"bad key": "x"}}, "spec.workerGroupSpecs[0].labels"),
        ({"labels": {"k": "a b"}}, "spec.workerGroupSpecs[0].labels"),
        ({"labels": ["k=v"]}, "spec.workerGroupSpecs[0].labels"),
        ({"rayStartParams": {"labels": "k"}}, "spec.workerGroupSpecs[0].rayStartParams.labels"),
        ({"priority": "high"}, "spec.workerGroupSpecs[0].priority"),
        ({"priority": 2**31}, "spec.workerGroupSpecs[0].priority"),
    ],
)
def test_a_bad_label_or_priority_is_a_config_error_naming_the_field(
    fields: dict[str, Any], field: str
) -> None:
    """As Ray's autoscaler refuses such a group: the watch keeps the last good groups."""
    with pytest.raises(ConfigError) as caught:
        cluster_spec(raycluster(worker(**fields)))
    assert caught.value.field == field
