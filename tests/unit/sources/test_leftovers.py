"""Series an earlier scrape left behind: told apart from the agent's snapshot (pure, no server).

The real case (a Prometheus restarted, a victim's series never stale-marked) runs against a real
Prometheus in tests/real/prometheus/test_source_leftovers.py.
"""

from __future__ import annotations

from typing import Any

from builders import cluster, group, inp, node

from keda_ray_scaler import schema
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.model import NodeStatus
from keda_ray_scaler.schema import Sample, coverage, decoding, digest, encoding
from keda_ray_scaler.sources import leftovers, promql

JOB = {"job": "ray-scaler-agents", "instance": "10.0.0.7:9400", "namespace": "ray"}
CPU = group("cpu", cpu=10, max=50)
#: Scrape times of the agent's target, 5 s apart.
T1, T2, T3 = 1_700_000_000.0, 1_700_000_005.0, 1_700_000_010.0


def sealed(*names: str) -> list[Sample]:
    """Cluster demo's sealed series with the named victim pods."""
    nodes = [node(n, CPU, idle=90.0, status=NodeStatus.VICTIM) for n in names]
    snap = schema.ClusterSnapshot(inp(cluster(CPU), nodes=nodes), 1_700_000_000.5, True)
    return digest.seal(encoding.encode(snap))


def matrix(samples: list[Sample], times: list[float], **extra: str) -> list[dict[str, Any]]:
    """``samples`` as a range answer, each written at ``times``."""
    return [
        {
            "metric": {"__name__": s.name, **s.labels, **JOB, **extra},
            "values": [[t, repr(s.value)] for t in times],
        }
        for s in samples
    ]


def vector(samples: list[Sample], **extra: str) -> list[dict[str, Any]]:
    """``samples`` as an instant answer."""
    return [
        {"metric": {"__name__": s.name, **s.labels, **JOB, **extra}, "value": [T3, repr(s.value)]}
        for s in samples
    ]


def key(entry: dict[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(f"{k}={v}" for k, v in entry["metric"].items()))


def test_a_victim_deleted_while_prometheus_was_away_is_dropped_and_the_rest_holds_its_seal() -> (
    None
):
    """The bed's case: the agent exported pod a's series up to T1 and no longer; its seal of T2
    and T3 counts only what it exports now. The leftover goes; what stays matches the seal."""
    now, before = sealed(), sealed("a")
    gone = [s for s in before if s not in now and s.name not in digest.SEAL_NAMES]
    answer = matrix(now, [T2, T3]) + matrix(gone, [T1])
    assert leftovers.suspect(vector(now) + vector(gone))
    kept, dropped = leftovers.latest_scrapes(answer)
    assert dropped == len(gone) > 0
    assert sorted(map(key, kept)) == sorted(map(key, vector(now)))
    samples = promql.samples_from_result(kept, require_digest=True)
    assert set(decoding.decode(samples)) == {"demo"}  # the seal holds


def test_a_series_written_by_the_previous_scrape_stays() -> None:
    """A series the target wrote at the seal's previous scrape is not a leftover yet: kept
    (the seal then refuses the mix for one scrape interval, never longer)."""
    now, gone = sealed(), sealed("a")[:1]
    kept, dropped = leftovers.latest_scrapes(matrix(now, [T2, T3]) + matrix(gone, [T1, T2]))
    assert dropped == 0 and len(kept) == len(now) + 1


def test_a_writer_that_keeps_writing_under_the_agents_labels_is_never_dropped() -> None:
    """A series written between the agent's scrapes (another target honouring labels) stays, so
    the seal still refuses it: only what nobody wrote for a scrape interval goes."""
    now = sealed()
    forged = [Sample(schema.DEMAND_BUNDLES, {"cluster": "demo", "shape": "x"}, 50.0)]
    answer = matrix(now, [T2, T3]) + matrix(forged, [T2 + 1.0])
    kept, dropped = leftovers.latest_scrapes(answer)
    assert dropped == 0 and len(kept) == len(now) + 1


def test_a_forger_scraped_more_often_never_evicts_the_agents_series() -> None:
    """Another origin (a Pushgateway's job) re-serves a sealed forgery every 0.5 s while the
    agent is scraped every 1 s: judged by the forger's seal, the agent's series would look old
    and the forgery would stand alone. Each origin is judged by its own seal: nothing dropped,
    both origins stay (and are refused as two)."""
    now = sealed()
    forged = matrix(sealed("a"), [T3 - 0.5, T3 + 0.5, T3 + 1.0], instance="pushgateway:9091")
    kept, dropped = leftovers.latest_scrapes(matrix(now, [T2, T3]) + forged)
    assert dropped == 0
    assert {e["metric"]["instance"] for e in kept} == {"10.0.0.7:9400", "pushgateway:9091"}


def test_an_old_agents_snapshot_under_another_address_stays_until_it_leaves_the_window() -> None:
    """An agent pod replaced under another address: its last snapshot (seal included) is its
    own origin's latest, so it stays (refused as two origins) until it leaves the window."""
    now, old = sealed(), matrix(sealed("a"), [T1 - 10.0, T1 - 5.0], instance="10.0.0.9:9400")
    kept, dropped = leftovers.latest_scrapes(matrix(now, [T2, T3]) + old)
    assert dropped == 0 and len(kept) == len(now) + len(old)


def test_each_cluster_is_judged_by_its_own_seal() -> None:
    """Two clusters in one answer: each keeps what its own newest seal vouches for."""
    demo = sealed()
    other = [Sample(s.name, {**s.labels, "cluster": "other"}, s.value) for s in sealed()]
    answer = matrix(demo, [T2, T3]) + matrix(other, [T1 - 10.0, T1 - 5.0])
    kept, dropped = leftovers.latest_scrapes(answer)
    assert dropped == 0 and len(kept) == len(demo) + len(other)


def test_a_seal_with_one_sample_in_the_window_drops_nothing() -> None:
    """Without a previous scrape of the seal there is no interval to judge by: all kept."""
    now, gone = sealed(), sealed("a")[:2]
    kept, dropped = leftovers.latest_scrapes(matrix(now, [T3]) + matrix(gone, [T1]))
    assert dropped == 0 and len(kept) == len(now) + 2


def test_an_answer_that_adds_up_is_not_suspect() -> None:
    """One origin, one seal, as many series as it counts: no second query."""
    assert not leftovers.suspect(vector(sealed("a")))
    assert not leftovers.suspect(vector(sealed()) + vector(sealed(), cluster="x"))


def test_a_second_seal_or_origin_is_suspect() -> None:
    """Two origins for one cluster, or a seal written twice, may be leftovers."""
    now = vector(sealed())
    assert leftovers.suspect(now + vector(sealed(), instance="10.0.0.9:9400"))
    seal = [e for e in now if e["metric"]["__name__"] == schema.SNAPSHOT_SERIES]
    assert leftovers.suspect([*now, {**seal[0], "metric": {**seal[0]["metric"], "x": "1"}}])


#: A later agent's seal: it covers a name this scaler does not know.
LATER_NAME = schema.PREFIX + "node_future_seconds"
LATER = coverage.Coverage(schema.SNAPSHOT_NAMES | {LATER_NAME}, schema.LABELS, listed=True)


def later(*names: str) -> list[Sample]:
    """Cluster demo's series as a later agent seals them, one series of its new name each pod."""
    body = [s for s in sealed(*names) if s.name not in digest.SEAL_NAMES]
    pods = [Sample(LATER_NAME, {"cluster": "demo", "pod": n}, 1.0) for n in names]
    return digest.seal([*body, *pods], None, LATER)


def test_series_are_counted_as_the_scaler_counts_them() -> None:
    """The names the seal lists (a name this scaler does not know included), its covers series,
    or an older agent's names when it lists none: an answer that adds up is not suspect; a
    pod's series of the new name left behind is."""
    assert not leftovers.suspect(vector(later("a")))
    old = [s for s in sealed("a") if s.name != schema.SNAPSHOT_COVERS]
    count = len([s for s in old if s.name in schema.SNAPSHOT_NAMES])
    old = [
        Sample(s.name, s.labels, float(count)) if s.name == schema.SNAPSHOT_SERIES else s
        for s in old
    ]
    assert not leftovers.suspect(vector(old))
    left = [s for s in later("a") if s.name == LATER_NAME]
    assert leftovers.suspect(vector(later()) + vector(left))
    covers = [e for e in vector(later()) if e["metric"]["__name__"] == schema.SNAPSHOT_COVERS]
    second = {**covers[0], "metric": {**covers[0]["metric"], schema.LABEL_FAMILIES: "x"}}
    assert leftovers.suspect([*vector(later()), second])  # an older list left behind


def test_unreadable_answers_go_the_usual_way() -> None:
    """Malformed answers are neither suspect nor filtered: the usual parse refuses them."""
    assert not leftovers.suspect({"not": "a list"})
    assert not leftovers.suspect([{"metric": {}, "value": "x"}])
    covers = {"__name__": schema.SNAPSHOT_COVERS, "cluster": "demo", "families": 3}
    assert not leftovers.suspect([{"metric": covers, "value": [T3, "1"]}])
    bad = [{"metric": {"__name__": "ray_scaler_x"}, "values": [["later", "1"]]}]
    assert leftovers.latest_scrapes(bad) == (bad, 0)
    assert leftovers.latest_scrapes("nope") == ([], 0)


def test_the_recent_query_is_the_same_selector_over_the_window() -> None:
    """The raw samples of the cluster's own selector: nothing else enters."""
    query = promql.cluster_query(ClusterRef("ray", "demo"), job=promql.AGENT_JOB)
    assert leftovers.recent_query(query, 120) == query + "[120s]"
