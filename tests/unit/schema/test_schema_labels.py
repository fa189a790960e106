"""The metrics contract carries label selectors, node and group labels and priority."""

from __future__ import annotations

import pytest

from keda_ray_scaler import schema
from keda_ray_scaler.errors import Cap, CapExceeded, SchemaError
from keda_ray_scaler.labels import Labels, LabelSelector, Selectors, selectors_of
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
from keda_ray_scaler.schema import Sample, decoding, digest, encoding
from keda_ray_scaler.sources.series_caps import DataCaps, check_caps

SPOT = WorkerGroup(
    "spot", Resources.of(CPU=10), labels={"market-type": "spot", "ray.io/node-group": "spot"}
)
GPU = WorkerGroup("gpu", Resources.of(CPU=8, GPU=1), priority=-3, labels={"acc": "A100"})
PLAIN = WorkerGroup("plain", Resources.of(CPU=10), priority=2)


def sel(*alternatives: dict[str, str]) -> Selectors:
    """Selectors in fallback order, each in Ray's dict form."""
    return selectors_of(LabelSelector.from_ray(a) for a in alternatives)


def snapshot() -> schema.ClusterSnapshot:
    """Demand of every kind with selectors, beside demand without; labelled nodes."""
    cpu5 = Resources.of(CPU=5)
    demand = Demand(
        bundles=(
            Bundle(cpu5, 3),
            Bundle(cpu5, 4, sel({"market-type": "spot"}, {})),
            Bundle(cpu5, 2, sel({"zone": "in(a,b)", "acc": "!T4"})),
        ),
        placement_groups=(
            PlacementGroup(
                Strategy.STRICT_PACK,
                (Resources.of(CPU=2), Resources.of(CPU=2)),
                2,
                (sel({"zone": "a"}), ()),
            ),
            PlacementGroup(Strategy.SPREAD, (Resources.of(CPU=2),), 1),
        ),
        constraints=(Bundle(Resources.of(GPU=1), 1, sel({"acc": "A100"})),),
    )
    nodes = (
        WorkerNode(
            "spot-a",
            "spot",
            Resources.of(CPU=10),
            Resources.of(CPU=5),
            labels={"market-type": "spot", "ray.io/node-id": "ab12", "zone": "a"},
            node_id="ab12",
        ),
        WorkerNode(
            "spot-b", "spot", Resources.of(CPU=10), Resources.of(CPU=10), 0.0, NodeStatus.PENDING
        ),
    )
    demand = Demand(  # in the scaler's order, so the round trip compares equal
        tuple(sorted(demand.bundles, key=lambda b: (b.resources, b.selectors))),
        tuple(sorted(demand.placement_groups, key=lambda p: (p.strategy, p.bundles))),
        demand.constraints,
    )
    inp = PlanningInput(ClusterSpec("demo", (GPU, PLAIN, SPOT)), demand, nodes)
    return schema.ClusterSnapshot(inp, 1700000000.0, True)


def test_selectors_labels_and_priority_round_trip() -> None:
    """What the agent encodes, the scaler decodes to the same snapshot, selectors in order."""
    snap = snapshot()
    back = decoding.decode(encoding.encode(snap))["demo"]
    assert back.input.demand == snap.input.demand
    assert back.input.cluster == snap.input.cluster
    assert back.input.nodes == snap.input.nodes
    assert back == snap


def test_demand_with_other_selectors_is_its_own_series_with_the_canonical_text() -> None:
    """Three task series of {CPU: 5}: none, spot-then-any, and zone/acc; the PG's per bundle."""
    samples = encoding.encode(snapshot())
    found = {
        (s.labels[schema.LABEL_KIND], s.labels.get(schema.LABEL_SELECTOR)): s.value
        for s in samples
        if s.name == schema.DEMAND_BUNDLES
    }
    assert found == {
        ("task", None): 3.0,
        ("task", "market-type=spot;*"): 4.0,
        ("task", "acc=!T4,zone=in(a,b)"): 2.0,
        ("placement_group", "zone=a|"): 2.0,
        ("placement_group", None): 1.0,
        ("constraint", "acc=A100"): 1.0,
    }


def test_group_and_node_info_carry_labels_and_priority_only_when_set() -> None:
    """A group without labels or priority, and a node without labels, export as before."""
    samples = encoding.encode(snapshot())
    info = {s.labels[schema.LABEL_GROUP]: s.labels for s in samples if s.name == schema.GROUP_INFO}
    assert info["spot"][schema.LABEL_LABELS] == "market-type=spot,ray.io/node-group=spot"
    assert schema.LABEL_PRIORITY not in info["spot"]
    assert (info["gpu"][schema.LABEL_PRIORITY], info["plain"][schema.LABEL_PRIORITY]) == ("-3", "2")
    assert schema.LABEL_LABELS not in info["plain"]
    nodes = {s.labels[schema.LABEL_POD]: s.labels for s in samples if s.name == schema.NODE_INFO}
    assert nodes["spot-a"][schema.LABEL_LABELS] == "market-type=spot,ray.io/node-id=ab12,zone=a"
    assert schema.LABEL_LABELS not in nodes["spot-b"]


def test_an_old_agents_series_without_the_new_labels_decode_as_none() -> None:
    """Series of an agent that knows no labels: no selectors, no labels, priority 0."""
    old = [
        Sample(s.name, {k: v for k, v in s.labels.items() if k not in _NEW}, s.value)
        for s in encoding.encode(snapshot())
    ]
    old = [s for s in old if s.name not in digest.SEAL_NAMES]
    back = decoding.decode(old)["demo"].input
    assert all(not b.selectors for b in (*back.demand.bundles, *back.demand.constraints))
    assert all(not pg.selectors for pg in back.demand.placement_groups)
    assert all(not g.labels and g.priority == 0 for g in back.cluster.worker_groups)
    assert all(not n.labels for n in back.nodes)
    assert sum(b.count for b in back.demand.bundles) == 9  # the two {CPU: 5} series sum (3 + 4 + 2)


_NEW = {schema.LABEL_SELECTOR, schema.LABEL_LABELS, schema.LABEL_PRIORITY}


def test_the_digest_covers_the_selector_so_an_altered_one_is_refused() -> None:
    """A sealed snapshot whose selector was rewritten (spot -> on-demand) does not match."""
    sealed = digest.seal(encoding.encode(snapshot()))
    forged = [
        Sample(
            s.name,
            {**s.labels, schema.LABEL_SELECTOR: "market-type=on-demand;*"}
            if s.labels.get(schema.LABEL_SELECTOR) == "market-type=spot;*"
            else s.labels,
            s.value,
        )
        for s in sealed
    ]
    decoding.decode(sealed)  # the agent's own: accepted
    with pytest.raises(Exception, match="digest"):
        decoding.decode(forged)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (schema.LABEL_SELECTOR, "market-type=spot;"),  # an empty fallback
        (schema.LABEL_SELECTOR, "zone=in(b,a)"),  # not canonical: values unsorted
        (schema.LABEL_SELECTOR, "zone=a b"),  # a space is no label value
        (schema.LABEL_SELECTOR, ";".join(f"k={i}" for i in range(9))),  # 9 fallbacks
        (schema.LABEL_SELECTOR, "k=" + "v" * 64),  # a value of 64 characters
    ],
)
def test_a_malformed_or_oversized_selector_is_a_schema_error(key: str, value: str) -> None:
    """The scaler refuses a selector it could not have been sent: never planned as no selector."""
    samples = [
        Sample(
            s.name,
            {**s.labels, key: value} if s.name == schema.DEMAND_BUNDLES else s.labels,
            s.value,
        )
        for s in encoding.encode(snapshot())
    ]
    with pytest.raises(SchemaError):
        decoding.decode(samples)


@pytest.mark.parametrize("value", ["x", "1.5", "2147483648", "--1", "٣"])
def test_a_priority_that_is_no_int32_is_a_schema_error(value: str) -> None:
    """``priority`` must be a decimal int32."""
    samples = [
        Sample(
            s.name,
            {**s.labels, schema.LABEL_PRIORITY: value} if s.name == schema.GROUP_INFO else s.labels,
            s.value,
        )
        for s in encoding.encode(snapshot())
    ]
    with pytest.raises(SchemaError):
        decoding.decode(samples)


def test_labels_text_is_checked_on_the_way_in() -> None:
    """A node's ``labels`` label with a bad key is refused, not read as no labels."""
    samples = [
        Sample(
            s.name,
            {**s.labels, schema.LABEL_LABELS: "-bad=x"} if s.name == schema.NODE_INFO else s.labels,
            s.value,
        )
        for s in encoding.encode(snapshot())
    ]
    with pytest.raises(SchemaError):
        decoding.decode(samples)
    assert str(Labels.parse("b=2,a=1")) == "a=1,b=2"


def test_an_oversized_selector_label_is_over_a_cap_before_decoding() -> None:
    """A ``selector`` label longer than any agent writes: the cluster is refused (label_chars)."""
    samples = encoding.encode(snapshot())
    check_caps(samples, DataCaps())  # the agent's own: within every cap
    huge = [
        Sample(s.name, {**s.labels, schema.LABEL_SELECTOR: "k=v," * 20_000}, s.value)
        if s.name == schema.DEMAND_BUNDLES
        else s
        for s in samples
    ]
    with pytest.raises(CapExceeded) as caught:
        check_caps(huge, DataCaps())
    assert caught.value.cap is Cap.LABEL_CHARS
