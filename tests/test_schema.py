"""The metrics contract: what the agent encodes, the scaler decodes to the same snapshot."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keda_ray_scaler import schema
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)

CPU = WorkerGroup("cpu", Resources.of(CPU=10, memory=32 * 2**30), 1, 50, 60.0, 1.0)
GPU = WorkerGroup("gpu", Resources.of({"CPU": 8, "GPU": 1, "accelerator_type:A100": 1}), 0, 8)


def snapshot(**kw: object) -> schema.ClusterSnapshot:
    """A small but complete snapshot."""
    inp = PlanningInput(
        ClusterSpec("demo", (CPU, GPU), max_workers=100, upscaling_speed=2.0),
        Demand(
            bundles=(Bundle(Resources.of(CPU=5), 20), Bundle(Resources.of(GPU=0.5), 3)),
            placement_groups=(
                PlacementGroup(Strategy.STRICT_SPREAD, (Resources.of(CPU=4), Resources.of(CPU=4))),
            ),
            constraints=(Bundle(Resources.of(GPU=1), 4),),
        ),
        (
            WorkerNode(
                "ray-cpu-abc",
                "cpu",
                Resources.of(CPU=10),
                Resources.of(CPU=2),
                0.0,
                NodeStatus.RUNNING,
                "ab12",
            ),
            WorkerNode(
                "ray-cpu-def",
                "cpu",
                Resources.of(CPU=10),
                Resources.of(CPU=10),
                75.5,
                NodeStatus.VICTIM,
                "cd34",
            ),
        ),
    )
    return schema.ClusterSnapshot(inp, 1_700_000_000.5, True)


def test_round_trip_gives_back_the_same_snapshot() -> None:
    """decode(encode(s)) == s for a snapshot with every kind of demand and node."""
    snap = snapshot()
    assert schema.decode(schema.encode(snap)) == {"demo": snap}


def test_twenty_tasks_of_five_cpus_are_one_series_with_value_twenty() -> None:
    """Demand is exported as one series per shape, its value the count."""
    demand = [s for s in schema.encode(snapshot()) if s.name == schema.DEMAND_BUNDLES]
    task = [s for s in demand if s.labels["kind"] == "task" and s.labels["shape"] == "CPU=5"]
    assert [(s.value, s.labels["strategy"]) for s in task] == [(20.0, "")]
    pg = [s for s in demand if s.labels["kind"] == "placement_group"]
    assert [(s.labels["shape"], s.labels["strategy"]) for s in pg] == [
        ("CPU=4;CPU=4", "STRICT_SPREAD")
    ]


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 1e300])
def test_nan_infinite_negative_and_absurd_values_are_rejected(value: float) -> None:
    """A corrupt value never decodes into a number the planner would trust."""
    samples = [
        s if s.name != schema.DEMAND_BUNDLES else schema.Sample(s.name, s.labels, value)
        for s in schema.encode(snapshot())
    ]
    with pytest.raises(schema.SchemaError, match="demand_bundles"):
        schema.decode(samples)


def test_a_cluster_without_snapshot_time_is_an_error_not_an_empty_cluster() -> None:
    """Missing freshness series make the snapshot undecodable."""
    samples = [s for s in schema.encode(snapshot()) if s.name != schema.SNAPSHOT_TIMESTAMP]
    with pytest.raises(schema.SchemaError, match="snapshot_timestamp_seconds"):
        schema.decode(samples)


def test_nodes_of_unknown_groups_are_left_out_of_the_planning_input() -> None:
    """An unmapped Ray node (group "") cannot be scaled, so it is not planned."""
    snap = snapshot()
    samples = schema.encode(snap)
    samples.append(
        schema.Sample(
            schema.NODE_INFO,
            {
                "cluster": "demo",
                "pod": "10.0.0.9",
                "group": "",
                "node_id": "ff",
                "state": "running",
            },
            1.0,
        )
    )
    assert [n.pod for n in schema.decode(samples)["demo"].input.nodes] == [
        "ray-cpu-abc",
        "ray-cpu-def",
    ]


@pytest.mark.parametrize("text", ["CPU=-1", "CPU=1e3", "CPU", "=1", "CPU=1,CPU=2", "CPU=0.00001"])
def test_malformed_shapes_are_rejected(text: str) -> None:
    """Only the canonical encoding decodes."""
    with pytest.raises(schema.ShapeError):
        schema.decode_shape(text)


amounts = st.integers(min_value=1, max_value=10**12)
names = st.sampled_from(["CPU", "GPU", "memory", "TPU", "accelerator_type:A100", "node:1.2.3.4"])


@given(st.dictionaries(names, amounts, max_size=5))
def test_shape_codec_round_trips_any_fixed_point_vector(units: dict[str, int]) -> None:
    """encode_shape and decode_shape are inverses on Ray's fixed point."""
    res = Resources.from_units(units)
    assert schema.decode_shape(schema.encode_shape(res)) == res
