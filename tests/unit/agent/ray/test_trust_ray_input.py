"""Ray's input is untrusted (issue 35, findings 3 and 4): a poisoned ``request_resources()`` KV
value, a 254-character instance id, a raylet borrowing a busy pod's name from another IP. Each
is left out and counted; the rest of the poll goes on; one bad node never refuses the cluster."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry
from ray_input_fakes import SEED, SPEC, FakeGcs, hexid, node, reader_of, refused_total, status
from structlog.testing import capture_logs

from keda_ray_scaler import schema
from keda_ray_scaler.agent.ray.ray_status import parse_status, parse_v1_requests
from keda_ray_scaler.agent.ray.refusal_log import RefusalLog
from keda_ray_scaler.agent.ray.refusals import Refusal, Refused, is_pod_name, same_ip
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.labels import LabelSelector, selectors_of
from keda_ray_scaler.model import Bundle, PlanningInput, Resources
from keda_ray_scaler.schema import encoding
from keda_ray_scaler.sources.series_caps import DataCaps, check_caps

A_IP, IMPOSTOR_IP = "10.0.0.1", "10.0.0.66"


# --- the KV key request_resources() writes ---------------------------------------------------


def test_not_json_in_the_request_key_is_no_floor_and_the_rest_of_the_poll_goes_on() -> None:
    """Before: RayError on every poll, success 0 for as long as the key lived."""
    state = parse_status(status(node(b"a", "w-a", A_IP)), SPEC, v1_requests=b"not json")
    assert state.demand.bundles == (SEED,)
    assert state.demand.constraints == ()
    assert [n.pod for n in state.nodes] == ["w-a"]
    assert [(r.reason, r.value) for r in state.refused] == [
        (Refusal.V1_REQUEST_NOT_JSON, "not json")
    ]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", Refusal.V1_REQUEST_NOT_JSON),
        (b"\xff\xfe", Refusal.V1_REQUEST_NOT_JSON),
        (b"[" * 100_000, Refusal.V1_REQUEST_NOT_JSON),  # RecursionError, before: a poll crash
        (b'{"CPU": 1}', Refusal.V1_REQUEST_NOT_BUNDLES),
        (b"[1]", Refusal.V1_REQUEST_NOT_BUNDLES),
        (b'[{"CPU": 1}, "x"]', Refusal.V1_REQUEST_NOT_BUNDLES),
        (b'[{"CPU": "x"}]', Refusal.V1_REQUEST_NOT_BUNDLES),  # before: TypeError, a crash
        (b'[{"CPU": NaN}]', Refusal.V1_REQUEST_NOT_BUNDLES),  # before: ValueError, a crash
        (b'[{"CPU": Infinity}]', Refusal.V1_REQUEST_NOT_BUNDLES),
        (b'[{"CPU": -1}]', Refusal.V1_REQUEST_NOT_BUNDLES),
        (b'[{"CPU": true}]', Refusal.V1_REQUEST_NOT_BUNDLES),
        (b'[{"CPU": null}]', Refusal.V1_REQUEST_NOT_BUNDLES),
    ],
)
def test_a_value_of_the_wrong_shape_is_refused_whole_never_raised(
    raw: bytes, reason: Refusal
) -> None:
    """Not a list of {resource: non-negative finite number}: no bundles, one refusal."""
    read = parse_v1_requests(raw)
    assert (read.bundles, read.refused is not None) == ((), True)
    assert read.refused is not None and read.refused.reason is reason
    state = parse_status(status(), SPEC, v1_requests=raw)
    assert (state.demand.bundles, state.demand.constraints) == ((SEED,), ())


def test_a_good_request_still_reads_as_the_floor() -> None:
    """What request_resources() writes: bundles counted by shape, nothing refused."""
    read = parse_v1_requests(b'[{"GPU": 1}, {"GPU": 1}, {"CPU": 3.5}]')
    assert read.bundles == (Bundle(Resources.of(CPU=3.5), 1), Bundle(Resources.of(GPU=1), 2))
    assert read.refused is None


def test_ray_251s_request_with_label_selectors_reads_as_the_floor_with_its_selector() -> None:
    """Ray 2.51's request_resources() with autoscaler v1 writes each bundle with its selector
    (``{"resources": ..., "label_selector": ...}``); read as the floor, selector kept; a bad
    selector refuses the whole value, as any bad bundle does."""
    raw = (
        b'[{"resources": {"CPU": 1}, "label_selector": {}},'
        b' {"resources": {"GPU": 1}, "label_selector": {"market-type": "spot"}},'
        b' {"resources": {"GPU": 1}, "label_selector": {"market-type": "spot"}}]'
    )
    read = parse_v1_requests(raw)
    spot = selectors_of([LabelSelector.from_ray({"market-type": "spot"})])
    assert read.bundles == (
        Bundle(Resources.of(CPU=1), 1),
        Bundle(Resources.of(GPU=1), 2, spot),
    )
    bad = b'[{"resources": {"CPU": 1}, "label_selector": {"market-type": "in(a,)"}}]'
    refused = parse_v1_requests(bad).refused
    assert refused is not None and refused.reason is Refusal.V1_REQUEST_NOT_BUNDLES
    assert "label_selector" in refused.detail


async def test_each_poll_counts_the_poisoned_value_and_logs_it_once() -> None:
    """Three polls: counted three times, one warning; the victims' re-check counts nothing; a
    new bad value is logged again."""
    registry = CollectorRegistry()
    gcs = FakeGcs(status(node(b"a", "w-a", A_IP)), b"not json")
    reader = reader_of(gcs, registry)
    with capture_logs() as logs:
        for _ in range(3):
            assert (await reader.read()).demand.bundles == (SEED,)
        await reader.nodes()
        gcs.kv = b"[1]"
        await reader.read()
    assert refused_total(registry, Refusal.V1_REQUEST_NOT_JSON) == 3.0
    assert refused_total(registry, Refusal.V1_REQUEST_NOT_BUNDLES) == 1.0
    warned = [(e["reason"], e["value"]) for e in logs if e["event"] == "value from Ray refused"]
    assert warned == [("v1_request_not_json", "not json"), ("v1_request_not_bundles", "[1]")]


def test_the_log_forgets_when_full_so_its_memory_is_bounded() -> None:
    """At most ``remember`` values kept; a value is logged again once they were forgotten."""
    log = RefusalLog(CollectorRegistry(), "demo", remember=2)
    values = [Refused(Refusal.POD_NAME_INVALID, v) for v in ("A", "B", "C", "A")]
    assert [log.observe([v]) for v in values] == [1, 1, 1, 1]
    assert log.observe([values[2]]) == 0


# --- names and ids that become labels --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("ray-cpu-a", True),
        ("raycluster-demo-cpu-worker-x7k2p", True),
        ("a.b-c", True),
        ("a" * 253, True),
        ("a" * 254, False),
        ("Ray-CPU", False),
        ("-a", False),
        ("a_b", False),
        ("a\nb", False),
        ('a",b="c', False),
        ("", False),
    ],
)
def test_a_pod_name_is_a_dns_1123_subdomain_of_at_most_253_characters(name: str, ok: bool) -> None:
    """Kubernetes' rule for pod names; 253 is also the scaler's --max-name-chars default."""
    assert is_pod_name(name) is ok


def test_a_254_character_instance_id_maps_to_no_pod_and_the_cluster_stays_within_the_caps() -> None:
    """Before: exported as a 254-character `pod` label, and the scaler refused the whole cluster
    (--max-name-chars 253). Now: no pod, exported by its node id, counted; the caps pass."""
    long = "a" * 254
    reply = status(node(b"a", "w-a", A_IP), node(b"x", long, "10.0.0.9"))
    state = parse_status(reply, SPEC)
    assert sorted((n.pod, n.group) for n in state.nodes) == [(hexid(b"x"), ""), ("w-a", "cpu")]
    assert state.unmapped == 1
    assert [(r.reason, r.value) for r in state.refused] == [(Refusal.POD_NAME_INVALID, long)]
    inp = PlanningInput(SPEC, state.demand, state.nodes)
    samples = encoding.encode(schema.ClusterSnapshot(inp, 1.0, True))
    check_caps(samples, DataCaps())  # raises CapExceeded on any label over 253 characters
    names = {s.labels[k] for s in samples for k in ("pod", "node_id") if k in s.labels}
    assert max(len(v) for v in names) == 56


def test_a_node_id_empty_or_too_long_is_left_out_whole() -> None:
    """A node id is 1 to 64 bytes (Ray's are 28): any other is no label, no node."""
    bad = [node(b"", "w-b", "10.0.0.2"), node(b"z" * 65, "w-c", "10.0.0.3")]
    bad[0].node_id = b""
    state = parse_status(status(node(b"a", "w-a", A_IP), *bad), SPEC)
    assert [n.pod for n in state.nodes] == ["w-a"]
    assert [r.reason for r in state.refused] == [Refusal.NODE_ID_INVALID] * 2


# --- a node names a pod only from the pod's IP -----------------------------------------------

PODS = [PodRef("w-a", "cpu", (A_IP,))]
SEEN = {hexid(b"r"): 1, hexid(b"f"): 2}  # the impostor joined after w-a's own node


def test_a_raylet_naming_a_busy_pod_from_another_ip_maps_to_no_pod() -> None:
    """Before: the newest node named w-a won, so the idle impostor stood for the busy pod (and
    the victim protocol drained it and named w-a). Now w-a keeps its own busy node."""
    own = node(b"r", "w-a", A_IP, free=0)
    impostor = node(b"f", "w-a", IMPOSTOR_IP)
    state = parse_status(status(own, impostor), SPEC, pods=PODS, first_seen=SEEN)
    mine = {n.pod: n for n in state.nodes if n.group}
    assert (mine["w-a"].node_id, mine["w-a"].available) == (hexid(b"r"), Resources())
    assert [(n.pod, n.group) for n in state.nodes if not n.group] == [(hexid(b"f"), "")]
    assert (state.unmapped, state.superseded, state.contested) == (1, (), frozenset({"w-a"}))
    assert [(r.reason, r.value) for r in state.refused] == [(Refusal.NODE_IP_MISMATCH, "w-a")]


def test_a_pod_named_only_from_another_ip_is_absent_from_ray_but_contested() -> None:
    """Its own raylet may report another IP (a misconfigured --node-ip-address): the node maps to
    no pod, and the pod, absent from Ray, is contested, so it is never removed as not joined."""
    state = parse_status(status(node(b"r", "w-a", "10.9.9.9", free=0)), SPEC, pods=PODS)
    assert [n.group for n in state.nodes] == [""]
    assert state.contested == frozenset({"w-a"})


def test_a_dead_impostor_never_makes_a_busy_pod_look_gone() -> None:
    """A DEAD node naming w-a from another IP is not w-a's: w-a keeps its live node."""
    own = node(b"r", "w-a", A_IP, free=0)
    dead = node(b"f", "w-a", IMPOSTOR_IP, status=pb.DEAD)
    state = parse_status(status(own, dead), SPEC, pods=PODS, first_seen=SEEN)
    assert [n.node_id for n in state.nodes] == [hexid(b"r")]
    assert state.dead == frozenset()


def test_without_the_pods_ip_the_name_is_taken_and_two_live_nodes_contest_the_pod() -> None:
    """No pod source (or a pod with no IP yet): the name as before (the demo's raylets all run
    on 127.0.0.1); a pod two live nodes name is contested, never a victim."""
    own = node(b"r", "w-a", "127.0.0.1", free=0)
    impostor = node(b"f", "w-a", "127.0.0.1")
    other = node(b"b", "w-b", "127.0.0.1")
    state = parse_status(status(own, impostor, other), SPEC, first_seen=SEEN)
    assert sorted(n.pod for n in state.nodes) == ["w-a", "w-b"]
    assert state.contested == frozenset({"w-a"})
    assert [(r.reason, r.value) for r in state.refused] == [(Refusal.TWO_LIVE_NODES, "w-a")]


def test_the_ip_fallback_still_maps_a_node_without_a_name() -> None:
    """A node with no instance id maps to the pod at its IP, as before."""
    nameless = node(b"n", "", A_IP)
    nameless.ray_node_type_name = ""
    state = parse_status(status(nameless), SPEC, pods=PODS)
    assert [(n.pod, n.group) for n in state.nodes] == [("w-a", "cpu")]
    assert (state.unmapped, state.refused) == (0, ())


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("10.0.0.1", "10.0.0.1", True),
        ("fd00::1", "fd00:0:0::1", True),
        ("10.0.0.1", "10.0.0.2", False),
        ("10.0.0.1", "", False),
        ("host-a", "host-a", True),
    ],
)
def test_addresses_compare_as_addresses(a: str, b: str, same: bool) -> None:
    """IPv6 spellings of one address are one address; no address is none."""
    assert same_ip(a, b) is same


async def test_the_reader_tells_the_victims_which_pods_are_contested() -> None:
    """RayView.contested: the pods two live nodes named at the last read; counted once a poll."""
    registry = CollectorRegistry()
    reply = status(node(b"r", "w-a", "127.0.0.1", free=0), node(b"f", "w-a", "127.0.0.1"))
    reader = reader_of(FakeGcs(reply, None), registry)
    await reader.read()
    assert [n.pod for n in await reader.nodes()] == ["w-a"]
    assert reader.contested() == frozenset({"w-a"})
    assert refused_total(registry, Refusal.TWO_LIVE_NODES) == 1.0
