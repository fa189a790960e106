"""PromQL templates and parsing of instant-vector answers (pure, no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import cluster, group, inp, res
from hypothesis import given
from hypothesis import strategies as st

from keda_ray_scaler import schema
from keda_ray_scaler.cli import build_parser
from keda_ray_scaler.errors import ConfigError, Refusal, SchemaError, UntrustedData
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.schema import Sample, coverage, decoding, digest, encoding
from keda_ray_scaler.sources import promql
from keda_ray_scaler.sources.promql import AGENT_JOB, OriginSettings

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
    """One cluster's query selects every agent series of its name, in its namespace only,
    scraped by the agents' job only (no job matcher only when the job is empty)."""
    assert promql.cluster_query(DEMO, job=AGENT_JOB) == (
        '{__name__=~"ray_scaler_.+",cluster="demo",namespace="ray",job="ray-scaler-agents"}'
    )
    assert promql.cluster_query(DEMO, job="") == (
        '{__name__=~"ray_scaler_.+",cluster="demo",namespace="ray"}'
    )


def test_seen_query_looks_for_the_snapshot_time_over_the_window() -> None:
    """The lost-or-unknown query asks whether the snapshot time existed in the window."""
    assert promql.seen_query(DEMO, 3600, job=AGENT_JOB) == (
        "present_over_time(ray_scaler_snapshot_timestamp_seconds"
        '{cluster="demo",namespace="ray",job="ray-scaler-agents"}[3600s])'
    )


def test_the_job_is_a_quoted_literal_whatever_it_holds() -> None:
    """A job name from the flag is escaped like any label value (a PodMonitor's ``ns/name``)."""
    query = promql.cluster_query(DEMO, job='ns/pm"} or vector(1)')
    assert query.endswith(',job="ns/pm\\"} or vector(1)"}')


@pytest.mark.parametrize("namespace", ['ray"} or vector(1) or {x="', "Ray", "", "a" * 64])
def test_namespaces_that_are_not_rfc1123_labels_are_refused(namespace: str) -> None:
    """A namespace never reaches a query unless it is a Kubernetes namespace name."""
    with pytest.raises(ConfigError, match="RFC 1123") as info:
        promql.cluster_query(ClusterRef(namespace, "demo"), job=AGENT_JOB)
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
        promql.cluster_query(ClusterRef("ray", name), job=AGENT_JOB)
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


def sealed(snapshot: schema.ClusterSnapshot) -> list[Sample]:
    """What the agent exports: the snapshot's series and their seal."""
    return digest.seal(encoding.encode(snapshot))


def test_a_vector_round_trips_to_the_same_snapshot() -> None:
    """encode -> Prometheus vector (with job/instance) -> samples -> decode gives the input back;
    the labels Prometheus adds leave the seal intact."""
    vector = as_vector(sealed(SEED), job="agent", instance="10.0.0.1:9500", namespace="ray")
    decoded = decoding.decode(promql.samples_from_result(vector, require_digest=True))
    assert decoded == {"demo": SEED}


def test_a_later_agents_vector_with_a_name_this_scaler_does_not_know_decodes() -> None:
    """A later agent adds a series name to the contract and lists it in its seal: the vector
    is checked whole (its new series altered is refused) and decodes to what this scaler
    reads, before the scaler is upgraded."""
    new = schema.PREFIX + "cluster_future_total"
    later = coverage.Coverage(schema.SNAPSHOT_NAMES | {new}, schema.LABELS, listed=True)
    body = [*encoding.encode(SEED), Sample(new, {"cluster": "demo"}, 3.0)]
    origin = {"job": AGENT_JOB, "instance": "10.0.0.1:9500", "namespace": "ray"}
    vector = as_vector(digest.seal(body, None, later), **origin)
    assert decoding.decode(promql.samples_from_result(vector, require_digest=True)) == {
        "demo": SEED
    }
    forged = [
        {**e, "value": [e["value"][0], "4.0"]} if e["metric"]["__name__"] == new else e
        for e in vector
    ]
    with pytest.raises(UntrustedData) as info:
        decoding.decode(promql.samples_from_result(forged, require_digest=True))
    assert info.value.reason is Refusal.DIGEST_MISMATCH


def test_a_cluster_without_a_seal_is_refused_unless_such_agents_are_accepted() -> None:
    """An agent older than the digest: UntrustedData (no_digest) naming the cluster and the
    flag; with require_digest False it decodes as before."""
    vector = as_vector(encoding.encode(SEED), job="agent", instance="10.0.0.1:9500")
    with pytest.raises(UntrustedData) as info:
        promql.samples_from_result(vector, require_digest=True)
    assert info.value.reason is Refusal.NO_DIGEST
    assert "'demo'" in str(info.value) and "--accept-agents-without-digest" in str(info.value)
    samples = promql.samples_from_result(vector, require_digest=False)
    assert decoding.decode(samples) == {"demo": SEED}


def test_a_series_added_under_the_agents_origin_is_refused_not_planned() -> None:
    """The honour-labels attack as Prometheus answers it: one more demand series with the
    agent's job and instance decodes to nothing; UntrustedData (digest_mismatch)."""
    origin = {"job": AGENT_JOB, "instance": "10.0.0.1:9500", "namespace": "ray"}
    forged = Sample(
        schema.DEMAND_BUNDLES,
        {"cluster": "demo", "kind": "task", "shape": "CPU=1", "strategy": ""},
        1000.0,
    )
    vector = as_vector([*sealed(SEED), forged], **origin)
    samples = promql.samples_from_result(vector, require_digest=True)  # one origin, sealed
    with pytest.raises(UntrustedData) as info:
        decoding.decode(samples)
    assert info.value.reason is Refusal.DIGEST_MISMATCH
    assert "11 series where the agent's seal counts 10" in str(info.value)


def test_the_name_moves_out_of_the_labels() -> None:
    """__name__ becomes the sample name; the scrape's labels stay (decode ignores them)."""
    samples = promql.samples_from_result(
        [entry("ray_scaler_snapshot_success", "1", cluster="demo", job="j", instance="i")],
        require_digest=False,
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
    vector = as_vector(sealed(SEED), job="agents", instance="10.0.0.5:9500") + as_vector(
        sealed(forged), job="agents", instance="10.0.9.9:9500"
    )
    with pytest.raises(UntrustedData) as info:
        promql.samples_from_result(vector, require_digest=True)
    assert info.value.reason is Refusal.TWO_ORIGINS
    assert str(info.value) == (
        "Ray cluster 'demo' is exported by 2 origins ('agents/10.0.0.5:9500' and "
        "'agents/10.0.9.9:9500'): refusing both; one agent per cluster and namespace, "
        "scraped by one job"
    )


def test_one_agent_scraped_by_two_jobs_is_two_origins() -> None:
    """The same instance under two jobs cannot be told from two exporters: refused."""
    vector = as_vector(sealed(SEED), job="a", instance="x:1") + as_vector(
        sealed(SEED), job="b", instance="x:1"
    )
    with pytest.raises(UntrustedData, match="2 origins"):
        promql.samples_from_result(vector, require_digest=True)


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


def test_the_serve_flags_read_their_defaults_from_the_origin_settings() -> None:
    """--prometheus-job and --accept-agents-without-digest default to OriginSettings' fields:
    the agents' job, and agents without a seal refused."""
    args = build_parser().parse_args(["serve"])
    origin = OriginSettings()
    assert (args.prometheus_job, args.accept_agents_without_digest) == (
        origin.job,
        origin.accept_undigested,
    )
    assert (origin.job, origin.accept_undigested) == ("ray-scaler-agents", False)
