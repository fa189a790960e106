"""The snapshot written once and kept (issue 39): each body is the plain seal of the encoding,
served as prometheus_client would write it, and a poll that changed nothing keeps all but its
time and seal."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from full_snapshot import full_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http import gzip_body
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.http.exposition import go_float
from keda_ray_scaler.agent.http.metrics_server import metrics_app
from keda_ray_scaler.agent.http.sealed_body import SnapshotWriter
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    JoinFailure,
    NodeStatus,
    PlanningInput,
    Resources,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.schema import Sample, digest, encoding
from keda_ray_scaler.schema.digest import Seal

KEY = digest.cluster_key(b"k" * 32, "ray", "c")
CPU = WorkerGroup("cpu", Resources.of(CPU=10), 0, 10)
GPU = WorkerGroup("gpu", Resources.of(CPU=8, GPU=1), 0, 4, cost=3.0)
#: Names a label must carry whole (``,`` ``;`` ``=`` a newline, a quote, a backslash, unicode).
HOSTILE = ("a,b", 'q"x', "b\\s", "n\nl", "GPU型")


def node(pod: str, free: float, idle_s: float = 0.0, **kw: Any) -> WorkerNode:
    """A worker pod of group cpu with 10 CPUs, ``free`` of them available."""
    total = Resources.of(CPU=10, memory=2**30)
    return WorkerNode(pod, "cpu", total, Resources.of(CPU=free, memory=2**30), idle_s, **kw)


def snap(
    nodes: Sequence[WorkerNode] = (), demand: Demand | None = None, t: float = 10.0, **kw: Any
) -> schema.ClusterSnapshot:
    """A snapshot of cluster c at ``t``."""
    spec = ClusterSpec("c", (CPU, GPU), max_workers=kw.pop("max_workers", None))
    inp = PlanningInput(spec, demand or Demand(), tuple(nodes), kw.pop("limits", ()))
    return schema.ClusterSnapshot(inp, t, kw.pop("success", True))


def key_of(s: Sample) -> tuple[str, list[tuple[str, str]], float]:
    return (s.name, sorted(s.labels.items()), s.value)


def plain(snapshot: schema.ClusterSnapshot, key: bytes | None = None) -> list[Sample]:
    """What the exporter served before issue 39: the seal of the whole encoding."""
    return sorted(digest.seal(encoding.encode(snapshot), key), key=key_of)


def written(writer: SnapshotWriter, snapshot: schema.ClusterSnapshot) -> list[Sample]:
    return sorted(writer.write(snapshot).samples(), key=key_of)


SEQUENCE = (
    snap([node("a", 0), node("b", 10, 60.0)], Demand((Bundle(Resources.of(CPU=5), 20),)), 10.0),
    # nothing changed but the time and an idle time
    snap([node("a", 0), node("b", 10, 65.0)], Demand((Bundle(Resources.of(CPU=5), 20),)), 15.0),
    # demand changed, a node busy, one added, a group backed off, a failed poll
    snap(
        [node("a", 0), node("b", 2), node("c", 10, 1.0, node_id="ff")],
        Demand((Bundle(Resources.of(CPU=5), 18),)),
        20.0,
        limits=(("cpu", 2),),
        success=False,
    ),
    # a node gone, a failing pod, names that must survive, a cap
    snap(
        [
            node("a", 0),
            WorkerNode(
                "f",
                "cpu",
                CPU.resources,
                Resources(),
                0.0,
                NodeStatus.FAILING,
                "",
                JoinFailure.CONTAINER_FAILING,
            ),
        ],
        Demand(tuple(Bundle(Resources.of({n: 1}), 2) for n in HOSTILE)),
        25.0,
        max_workers=7,
    ),
    snap(t=30.0),  # no node, no demand
    full_snapshot(),  # another cluster: nothing kept
    replace(full_snapshot(), snapshot_time_s=-0.0),
)


@pytest.mark.parametrize("key", [None, KEY], ids=["unkeyed", "keyed"])
def test_each_body_written_is_the_plain_seal_of_the_encoding(key: bytes | None) -> None:
    """Through one writer, poll after poll (things kept, changed, gone), every body is
    ``digest.seal(encoding.encode(snapshot))`` sample for sample, seal included."""
    writer = SnapshotWriter(key)
    for snapshot in SEQUENCE:
        assert written(writer, snapshot) == plain(snapshot, key)


PODS = ("p0", "p1", "p2")


@st.composite
def snapshots(draw: st.DrawFn) -> schema.ClusterSnapshot:
    """Snapshots of a few pods whose use, idle time and state come and go."""
    nodes = [
        node(
            pod,
            draw(st.sampled_from([0.0, 5.0, 10.0])),
            draw(st.sampled_from([0.0, -0.0, 1.5, 60.0])),
            status=draw(st.sampled_from([NodeStatus.RUNNING, NodeStatus.DRAINING])),
        )
        for pod in PODS
        if draw(st.booleans())
    ]
    counts = draw(st.lists(st.integers(1, 3), max_size=2))
    demand = Demand(tuple(Bundle(Resources.of(CPU=i + 1), n) for i, n in enumerate(counts)))
    return snap(nodes, demand, draw(st.sampled_from([1.0, 2.0])), success=draw(st.booleans()))


@settings(max_examples=60, deadline=None)
@given(st.lists(snapshots(), min_size=1, max_size=6))
def test_whatever_the_polls_the_writer_writes_the_plain_seal(
    polls: list[schema.ClusterSnapshot],
) -> None:
    """Any sequence of snapshots: each body written equals the plain seal of its encoding."""
    writer = SnapshotWriter(KEY)
    for snapshot in polls:
        assert written(writer, snapshot) == plain(snapshot, KEY)


def test_a_poll_that_changed_nothing_keeps_every_family_but_its_time_and_seal() -> None:
    """Only the timestamp's family and the seal's are written again; the rest is the very
    same text (nothing encoded, sorted or joined again). The idle node carries its idle-since
    time, as the agent's nodes do."""
    writer = SnapshotWriter()
    first = replace(SEQUENCE[0], input=replace(SEQUENCE[0].input, nodes=STEADY_NODES))
    before = writer.write(first).families
    after = writer.write(replace(first, snapshot_time_s=99.0)).families
    changed = {a.name for a, b in zip(after, before, strict=True) if a is not b}
    assert changed == {schema.SNAPSHOT_TIMESTAMP, schema.SNAPSHOT_SERIES, schema.SNAPSHOT_DIGEST}


#: Node a busy, node b idle since 5 s (what the agent's reader makes: the time kept).
STEADY_NODES = (node("a", 0), node("b", 10, 60.0, idle_since_s=5.0))


def test_an_idle_node_whose_idle_since_time_is_kept_keeps_its_series() -> None:
    """Its idle time grew with the clock, its idle-since time is the same: every node family
    is kept as it was (no idle line made again), and the body is still the plain seal."""
    writer = SnapshotWriter()
    grown = (node("a", 0), node("b", 10, 65.0, idle_since_s=5.0))
    before = writer.write(snap(STEADY_NODES, t=65.0)).families
    body = writer.write(snap(grown, t=70.0))
    changed = {a.name for a, b in zip(body.families, before, strict=True) if a is not b}
    assert changed == {schema.SNAPSHOT_TIMESTAMP, schema.SNAPSHOT_SERIES, schema.SNAPSHOT_DIGEST}
    assert sorted(body.samples(), key=key_of) == plain(snap(grown, t=70.0))
    assert {s.value for s in body.samples() if s.name == schema.NODE_IDLE_SINCE} == {0.0, 5.0}


ACCEPTS = {
    "prometheus 3": "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
    "text/plain;version=0.0.4;q=0.3",
    "openmetrics": "application/openmetrics-text; version=1.0.0",
    "openmetrics underscores": "application/openmetrics-text;version=1.0.0;escaping=underscores",
    "prometheus 2": "application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4",
    "text 1.0.0": "text/plain;version=1.0.0;escaping=allow-utf-8",
    "none": "",
    "dots (written by prometheus_client)": "text/plain;version=1.0.0;escaping=dots",
}


def served(app: Any, accept: str, **kw: str) -> tuple[str, dict[str, str], bytes]:
    """The status, headers and body of one ``GET /metrics`` of ``app``."""
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics", "HTTP_ACCEPT": accept, **kw}
    seen: list[Any] = []
    body = b"".join(app(environ, lambda *a: seen.extend(a)))
    return seen[0], dict(seen[1]), body


@pytest.mark.parametrize("accept", ACCEPTS.values(), ids=ACCEPTS.keys())
def test_the_body_served_is_prometheus_clients_own(accept: str) -> None:
    """Whatever the scraper asks, /metrics answers byte for byte what prometheus_client's own
    app answers (hostile label values, the seal and the agent's own metrics included)."""
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry, seal_key=KEY)
    AgentMetrics(registry, "c").poll_errors.inc()
    ours, theirs = metrics_app(registry, collector), metrics_app(registry)
    for snapshot in SEQUENCE[:4]:
        collector.publish(snapshot)
        assert served(ours, accept) == served(theirs, accept)


def test_a_gzip_scrape_is_the_same_body_in_one_gzip_member() -> None:
    """Prometheus asks gzip: the same text, compressed as one member (clients such as curl
    read only the first), poll after poll (the families kept, compressed once)."""
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry)
    app = metrics_app(registry, collector)
    for snapshot in SEQUENCE[:4]:
        collector.publish(snapshot)
        _, headers, body = served(app, "", HTTP_ACCEPT_ENCODING="gzip")
        assert headers["Content-Encoding"] == "gzip"
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        assert member.decompress(body) == generate_latest(registry)
        assert (member.eof, member.unused_data) == (True, b"")


def test_deflate_parts_compressed_apart_are_one_gzip_body() -> None:
    """Parts ended by a full flush, joined, then the last part: gzip reads the whole text."""
    texts = [b"", b"a" * 70_000, "GPU型\n".encode(), bytes(range(256)) * 300]
    parts = gzip_body.Parts.of((t, gzip_body.deflated(t)) for t in texts)
    body = gzip_body.gzip_body(parts, b"# EOF\n")
    assert gzip.decompress(body) == b"".join(texts) + b"# EOF\n"
    assert gzip.decompress(gzip_body.gzip_body(gzip_body.Parts(), b"")) == b""


def scraped(body: bytes) -> list[Sample]:
    text = body.decode()
    return [
        Sample(s.name, s.labels, s.value)
        for f in text_string_to_metric_families(text)
        for s in f.samples
    ]


@pytest.mark.parametrize("key", [None, KEY], ids=["unkeyed", "keyed"])
def test_every_body_served_holds_its_seal(key: bytes | None) -> None:
    """Poll after poll, and after a crash's re-seal, the served text's seal holds."""
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry, seal_key=key)
    app, accept = metrics_app(registry, collector), ACCEPTS["prometheus 3"]
    for snapshot in SEQUENCE[:5]:
        collector.publish(snapshot)
        assert digest.check("c", scraped(served(app, accept)[2]), key) is Seal.HELD
        collector.mark_failed()
        samples = scraped(served(app, accept)[2])
        assert digest.check("c", samples, key) is Seal.HELD
        assert [s.value for s in samples if s.name == schema.SNAPSHOT_SUCCESS] == [0.0]


def test_idle_times_moving_then_a_use_going_back_and_forth_are_written_as_encoded() -> None:
    """Polls that move only idle times (each node's lines but its idle line kept), then a node
    going busy, idle and busy again (its runs of each use made once): every body is the plain
    seal of the encoding, and a family of nodes that did not change is kept."""
    writer = SnapshotWriter(KEY)
    polls = [
        [node("a", 0), node("b", 10, 60.0 + t), node("c", 10, 5.0 + t)] for t in (0.0, 5.0, 10.0)
    ]
    polls += [
        [node("a", 0), node("b", free, 75.0 if free == 10 else 0.0), node("c", 10, 20.0)]
        for free in (4, 10, 4)
    ]
    before = None
    for t, nodes in enumerate(polls):
        snapshot = snap(nodes, t=float(t))
        body = writer.write(snapshot)
        assert sorted(body.samples(), key=key_of) == plain(snapshot, KEY)
        families = {f.name: f for f in body.families}
        if before is not None and t < 3:
            assert families[schema.NODE_INFO] is before[schema.NODE_INFO]
            assert families[schema.NODE_AVAILABLE] is before[schema.NODE_AVAILABLE]
        before = families


@pytest.mark.parametrize(
    "value",
    [0.0, -0.0, 1e-7, 0.1, 1.5, 60.25, 999_999.9, 1e6, 1.5e6, 34359738368.0, float("inf"), -1.0],
)
def test_a_value_is_written_as_prometheus_client_writes_it(value: float) -> None:
    """The fast way (``repr`` below 1e6) and prometheus_client's agree on every value."""
    assert go_float(value) == floatToGoString(value)  # type: ignore[no-untyped-call]
