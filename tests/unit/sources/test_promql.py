"""PromQL templates and parsing of instant-vector answers (pure, no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import cluster, group, inp, res
from hypothesis import given
from hypothesis import strategies as st

from keda_ray_scaler import schema
from keda_ray_scaler.errors import ConfigError, Refusal, SchemaError, UntrustedData
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.schema import Sample, decoding, encoding
from keda_ray_scaler.sources import promql

SEED = schema.ClusterSnapshot(
    inp(cluster(group("cpu", cpu=10, max=50)), bundles=[(res(cpu=5), 20)]),
    snapshot_time_s=1_700_000_000.5,
    success=True,
)


def as_vector(samples: list[Sample], **extra: str) -> list[dict[str, Any]]:
    """Samples as Prometheus returns them, with the scrape's own labels added."""
    return [
        {
            "metric": {"__name__": s.name, **s.labels, **extra},
            "value": [1_700_000_001.0, repr(s.value)],
        }
        for s in samples
    ]


def entry(name: str, value: str, **labels: str) -> dict[str, Any]:
    """One vector entry."""
    return {"metric": {"__name__": name, **labels}, "value": [1.0, value]}


DEMO = ClusterRef("ray", "demo")


def test_cluster_query_is_the_fixed_template() -> None:
    """One cluster's query selects every agent series of its name, in its namespace only."""
    assert promql.cluster_query(DEMO) == (
        '{__name__=~"ray_scaler_.+",cluster="demo",namespace="ray"}'
    )


def test_seen_query_looks_for_the_snapshot_time_over_the_window() -> None:
    """The lost-or-unknown query asks whether the snapshot time existed in the window."""
    assert promql.seen_query(DEMO, 3600) == (
        "present_over_time(ray_scaler_snapshot_timestamp_seconds"
        '{cluster="demo",namespace="ray"}[3600s])'
    )


@pytest.mark.parametrize("namespace", ['ray"} or vector(1) or {x="', "Ray", "", "a" * 64])
def test_namespaces_that_are_not_rfc1123_labels_are_refused(namespace: str) -> None:
    """A namespace never reaches a query unless it is a Kubernetes namespace name."""
    with pytest.raises(ConfigError, match="RFC 1123") as info:
        promql.cluster_query(ClusterRef(namespace, "demo"))
    assert info.value.field == "namespace"


@pytest.mark.parametrize(
    "name",
    [
        'demo"} or vector(1) or {x="',
        "demo\\",
        'de"mo',
        "demo\n",
        "Demo",
        "demo.prod",
        "-demo",
        "",
        "a" * 64,
        "démo",
    ],
)
def test_cluster_names_that_are_not_rfc1123_labels_are_refused(name: str) -> None:
    """Injection attempts and non-label names never reach a query: ConfigError naming cluster."""
    with pytest.raises(ConfigError) as info:
        promql.cluster_query(ClusterRef("ray", name))
    assert info.value.field == "cluster"
    assert "RFC 1123" in str(info.value)


def test_quote_escapes_backslash_quote_and_newlines() -> None:
    """Label values are Go-escaped PromQL string literals."""
    assert promql.quote('a"b\\c\nd\te') == '"a\\"b\\\\c\\nd\\te"'


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs")) | st.sampled_from("\n\r\t")))
def test_quote_round_trips_any_label_value(value: str) -> None:
    """Whatever the value, the literal reads back as exactly that value (JSON = Go escapes here)."""
    literal = promql.quote(value)
    assert json.loads(literal) == value


def test_quote_refuses_other_control_characters() -> None:
    """A NUL or escape byte is not a label value of ours."""
    with pytest.raises(ConfigError, match="control character"):
        promql.quote("a\x00b")


def test_a_vector_round_trips_to_the_same_snapshot() -> None:
    """encode -> Prometheus vector (with job/instance) -> samples -> decode gives the input back."""
    vector = as_vector(encoding.encode(SEED), job="agent", instance="10.0.0.1:9500")
    decoded = decoding.decode(promql.samples_from_result(vector))
    assert decoded == {"demo": SEED}


def test_the_name_moves_out_of_the_labels() -> None:
    """__name__ becomes the sample name; the scrape's labels stay (decode ignores them)."""
    samples = promql.samples_from_result(
        [entry("ray_scaler_snapshot_success", "1", cluster="demo", job="j", instance="i")]
    )
    labels = {"cluster": "demo", "job": "j", "instance": "i"}
    assert samples == [Sample("ray_scaler_snapshot_success", labels, 1.0)]


def test_series_that_are_not_the_agents_are_ignored() -> None:
    """A stray series the selector let through does not reach decode."""
    assert promql.parse_vector([entry("up", "1", cluster="demo")]) == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("NaN", "not a finite number"),
        ("+Inf", "not a finite number"),
        ("-Inf", "not a finite number"),
        ("-1", "is negative"),
        ("1e300", "absurdly large"),
        ("twenty", "is not a number"),
    ],
)
def test_untrustworthy_values_are_rejected_naming_the_series(value: str, problem: str) -> None:
    """NaN, infinities, negatives, absurd and non-numbers raise SchemaError naming the series."""
    vector = [entry("ray_scaler_demand_bundles", value, cluster="demo", shape="CPU=5")]
    with pytest.raises(SchemaError) as info:
        promql.parse_vector(vector)
    assert problem in str(info.value)
    assert "ray_scaler_demand_bundles" in str(info.value)
    assert "CPU=5" in str(info.value)


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ({"metric": {}}, "not an instant vector"),
        ([["x"]], "result[0] is not an object"),
        ([{"metric": {"a": 1}, "value": [1, "1"]}], "result[0].metric is not a label set"),
        ([{"metric": {}, "value": [1]}], "result[0].value is not a [time, value] pair"),
        ([{"metric": {}, "values": [[1, "1"]]}], "result[0].value is not a [time, value] pair"),
    ],
)
def test_malformed_answers_are_rejected(result: object, problem: str) -> None:
    """A matrix, scalar or malformed entry is a SchemaError saying what is wrong."""
    with pytest.raises(SchemaError) as info:
        promql.parse_vector(result)
    assert str(info.value).endswith(problem)


def test_two_origins_for_one_cluster_are_refused_never_newest_wins() -> None:
    """A forged exporter with a newer time beside the agent: both refused, both named."""
    forged = schema.ClusterSnapshot(SEED.input, snapshot_time_s=2e9, success=True)
    vector = as_vector(encoding.encode(SEED), job="agents", instance="10.0.0.5:9500") + as_vector(
        encoding.encode(forged), job="agents", instance="10.0.9.9:9500"
    )
    with pytest.raises(UntrustedData) as info:
        promql.samples_from_result(vector)
    assert info.value.reason is Refusal.TWO_ORIGINS
    assert str(info.value) == (
        "Ray cluster 'demo' is exported by 2 origins ('agents/10.0.0.5:9500' and "
        "'agents/10.0.9.9:9500'): refusing both; one agent per cluster and namespace, "
        "scraped by one job"
    )


def test_one_agent_scraped_by_two_jobs_is_two_origins() -> None:
    """The same instance under two jobs cannot be told from two exporters: refused."""
    vector = as_vector(encoding.encode(SEED), job="a", instance="x:1") + as_vector(
        encoding.encode(SEED), job="b", instance="x:1"
    )
    with pytest.raises(UntrustedData, match="2 origins"):
        promql.samples_from_result(vector)


def test_one_origin_keeps_every_series_whatever_its_other_labels() -> None:
    """Labels other than job and instance (le, pod, namespace) never split an origin."""
    samples = [
        Sample("ray_scaler_snapshot_timestamp_seconds", {"cluster": "a", "instance": "x"}, 5.0),
        Sample(
            "ray_scaler_agent_poll_seconds_bucket",
            {"cluster": "a", "instance": "x", "le": "1"},
            1.0,
        ),
        Sample("ray_scaler_snapshot_timestamp_seconds", {"cluster": "b", "instance": "y"}, 1.0),
    ]
    assert promql.single_origin(samples) == samples
