"""The metrics contract: what the agent encodes, the scaler decodes to the same snapshot."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keda_ray_scaler import schema
from keda_ray_scaler.errors import SchemaError, ShapeError
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
from keda_ray_scaler.schema import decoding, encoding

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
    assert decoding.decode(encoding.encode(snap)) == {"demo": snap}


def idle_of(snap: schema.ClusterSnapshot, *, since: float | None, seconds: float | None) -> float:
    """Node ray-cpu-def's idle time decoded when its idle series are the ones given (an agent
    of this version exports the idle-since time, an older one the idle seconds)."""
    samples = [
        s
        for s in encoding.encode(snap)
        if s.name != schema.NODE_IDLE_SINCE or s.labels["pod"] != "ray-cpu-def"
    ]
    pod = {"cluster": "demo", "pod": "ray-cpu-def"}
    if since is not None:
        samples.append(schema.Sample(schema.NODE_IDLE_SINCE, pod, since))
    if seconds is not None:
        samples.append(schema.Sample(schema.NODE_IDLE_SECONDS, pod, seconds))
    (node,) = [n for n in decoding.decode(samples)["demo"].input.nodes if n.pod == "ray-cpu-def"]
    return node.idle_s


def test_an_idle_node_exports_its_idle_since_time_and_decodes_to_its_idle_time() -> None:
    """Idle 75.5 s at the snapshot's time: exported as the time it became idle, kept by the
    node when it has one; the busy node exports 0."""
    snap = snapshot()
    since = {
        s.labels["pod"]: s.value for s in encoding.encode(snap) if s.name == schema.NODE_IDLE_SINCE
    }
    assert since == {"ray-cpu-abc": 0.0, "ray-cpu-def": 1_700_000_000.5 - 75.5}
    kept = replace(snap.input.nodes[1], idle_since_s=1_699_999_920.0)
    inp = replace(snap.input, nodes=(snap.input.nodes[0], kept))
    (node,) = [
        n
        for n in decoding.decode(encoding.encode(replace(snap, input=inp)))["demo"].input.nodes
        if n.pod == "ray-cpu-def"
    ]
    assert node.idle_s == 80.5


def test_the_idle_time_is_read_from_either_series_the_idle_since_time_first() -> None:
    """Rolling upgrades: an older agent's idle seconds are read; both: the idle-since time."""
    snap = snapshot()
    assert idle_of(snap, since=1_700_000_000.5 - 30.0, seconds=None) == 30.0
    assert idle_of(snap, since=None, seconds=12.0) == 12.0
    assert idle_of(snap, since=1_700_000_000.5 - 30.0, seconds=12.0) == 30.0
    assert idle_of(snap, since=None, seconds=None) == 0.0


def test_an_idle_since_time_after_the_snapshot_or_zero_is_no_idle_time() -> None:
    """Clamped at 0: a time after the snapshot's (clocks apart) is idle 0, as is 0 (busy)."""
    snap = snapshot()
    assert idle_of(snap, since=1_700_000_003.0, seconds=None) == 0.0
    assert idle_of(snap, since=0.0, seconds=40.0) == 0.0


def test_twenty_tasks_of_five_cpus_are_one_series_with_value_twenty() -> None:
    """Demand is exported as one series per shape, its value the count."""
    demand = [s for s in encoding.encode(snapshot()) if s.name == schema.DEMAND_BUNDLES]
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
        for s in encoding.encode(snapshot())
    ]
    with pytest.raises(SchemaError, match="demand_bundles"):
        decoding.decode(samples)


def test_a_cluster_without_snapshot_time_is_an_error_not_an_empty_cluster() -> None:
    """Missing freshness series make the snapshot undecodable."""
    samples = [s for s in encoding.encode(snapshot()) if s.name != schema.SNAPSHOT_TIMESTAMP]
    with pytest.raises(SchemaError, match="snapshot_timestamp_seconds"):
        decoding.decode(samples)


def test_nodes_of_unknown_groups_are_left_out_of_the_planning_input() -> None:
    """An unmapped Ray node (group "") cannot be scaled, so it is not planned."""
    snap = snapshot()
    samples = encoding.encode(snap)
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
    assert [n.pod for n in decoding.decode(samples)["demo"].input.nodes] == [
        "ray-cpu-abc",
        "ray-cpu-def",
    ]


@pytest.mark.parametrize("text", ["CPU=-1", "CPU=1e3", "CPU", "=1", "CPU=1,CPU=2", "CPU=0.00001"])
def test_malformed_shapes_are_rejected(text: str) -> None:
    """Only the canonical encoding decodes."""
    with pytest.raises(ShapeError):
        schema.decode_shape(text)


amounts = st.integers(min_value=1, max_value=10**12)
names = st.sampled_from(["CPU", "GPU", "memory", "TPU", "accelerator_type:A100", "node:1.2.3.4"])


@given(st.dictionaries(names, amounts, max_size=5))
def test_shape_codec_round_trips_any_fixed_point_vector(units: dict[str, int]) -> None:
    """encode_shape and decode_shape are inverses on Ray's fixed point."""
    res = Resources.from_units(units)
    assert schema.decode_shape(schema.encode_shape(res)) == res


# --- resource names from Ray: anything Ray accepts ------------------------------------------

LONG = "x" * 5_000
HOSTILE = ["a,b", "a;b", "a=b", "a\nb", "GPU型", "ß%20é", 'q"uo\\te', "tab\there"]


@pytest.mark.parametrize("name", HOSTILE, ids=repr)
def test_names_holding_separators_newlines_or_unicode_round_trip_exactly(name: str) -> None:
    """Percent-encoding carries the exact name; no separator or newline reaches the label."""
    wire = schema.encode_name(name)
    assert not set(wire) & set(",;=\n\t")
    assert schema.decode_name(wire) == name
    shape = Resources.of({name: 1, "CPU": 5})
    assert schema.decode_shape(schema.encode_shape(shape)) == shape


@pytest.mark.parametrize(
    "name", ["CPU", "memory", "accelerator_type:A100", "TPU-v4-16-head", "node:10.0.0.1"]
)
def test_the_names_ray_and_kuberay_make_are_exported_unchanged(name: str) -> None:
    """Existing clusters' series read as before: only what must be escaped is."""
    assert schema.encode_name(name) == name


def test_a_name_of_5000_characters_is_exported_as_a_bounded_stand_in() -> None:
    """Over MAX_NAME_CHARS once encoded: prefix, ellipsis, 64-bit digest; the same every time."""
    wire = schema.encode_name(LONG)
    assert len(wire) <= schema.MAX_NAME_CHARS
    assert (
        schema.decode_name(wire) == schema.stand_in(LONG) == "x" * 16 + "…" + ("c59d3c0480cc2d71")
    )
    assert not schema.exported_whole(LONG)
    assert schema.encode_name("y" + LONG[1:]) != wire


def test_the_bound_counts_encoded_characters() -> None:
    """253 ASCII characters pass whole; 85 three-byte characters (255 encoded: 9 each) do not."""
    assert schema.exported_whole("a" * 253)
    assert not schema.exported_whole("a" * 254)
    assert schema.exported_whole("型" * 28)  # 252 encoded characters
    assert not schema.exported_whole("型" * 29)
    assert not schema.exported_whole("")


@given(st.text(min_size=1, max_size=300))
def test_every_name_encodes_within_the_bound_and_whole_names_decode_back(name: str) -> None:
    """encode_name never raises, never exceeds the bound, and is lossless when it fits."""
    wire = schema.encode_name(name)
    assert len(wire) <= schema.MAX_NAME_CHARS
    back = schema.decode_name(wire)
    assert back == (name if schema.exported_whole(name) else schema.stand_in(name))


def test_a_snapshot_of_hostile_names_round_trips_through_the_series() -> None:
    """Groups, demand, placement groups and node vectors keep their names through the wire."""
    odd = {"a,b": 1, "c;d": 2, "e=f": 3, "g\nh": 4, "ü": 5}
    group = WorkerGroup("odd", Resources.of({"CPU": 4, **odd}), 0, 5)
    inp = PlanningInput(
        ClusterSpec("demo", (CPU, group)),
        Demand(
            bundles=(Bundle(Resources.of({"CPU": 1, "a,b": 1}), 3),),
            placement_groups=(
                PlacementGroup(Strategy.PACK, (Resources.of({"c;d": 1}), Resources.of(CPU=1))),
            ),
            constraints=(Bundle(Resources.of({"g\nh": 2}), 1),),
        ),
        (WorkerNode("ray-odd-1", "odd", group.resources, group.resources, 3.0, node_id="ef"),),
    )
    snap = schema.ClusterSnapshot(inp, 1_700_000_000.0, True)
    assert decoding.decode(encoding.encode(snap)) == {"demo": snap}


def test_a_long_name_in_demand_still_matches_the_group_that_offers_it() -> None:
    """The stand-in is the same in the group's shape and the demand's: planning is unchanged."""
    group = WorkerGroup("long", Resources.of({"CPU": 4, LONG: 1}), 0, 5)
    inp = PlanningInput(
        ClusterSpec("demo", (group,)),
        Demand(bundles=(Bundle(Resources.of({"CPU": 1, LONG: 1}), 2),)),
    )
    out = decoding.decode(encoding.encode(schema.ClusterSnapshot(inp, 1.0, True)))["demo"].input
    short = schema.stand_in(LONG)
    assert out.cluster.worker_groups[0].resources == Resources.of({"CPU": 4, short: 1})
    assert out.demand.bundles == (Bundle(Resources.of({"CPU": 1, short: 1}), 2),)


@pytest.mark.parametrize("text", ["%FF=1", "a%C3=1", "=1"])
def test_names_that_are_not_percent_encoded_utf8_are_rejected(text: str) -> None:
    """The scaler refuses a shape whose name decodes to nothing or to invalid UTF-8."""
    with pytest.raises(ShapeError):
        schema.decode_shape(text)
