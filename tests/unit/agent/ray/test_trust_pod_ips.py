"""A node names a pod only from one of the pod's own IPs (issue 35, finding 4, second round):
pods that share an IP (``hostNetwork`` workers) each keep theirs, a dual-stack pod matches by
any of its addresses, and a pod whose live node was superseded by a newer one that died (an
impostor's raylet, started and stopped) is never a victim: it is contested, and counted."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry
from ray_input_fakes import SPEC, FakeGcs, hexid, node, reader_of, refused_total, status

from keda_ray_scaler.agent.builder import pod_ips
from keda_ray_scaler.agent.kube.pod_info import pod_info
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.ray.ray_status import parse_status
from keda_ray_scaler.agent.ray.refusals import Refusal
from keda_ray_scaler.agent.ray.status_nodes import PodRef
from keda_ray_scaler.agent.victims.choose import GroupView, choose
from keda_ray_scaler.agent.victims.marks import VictimSettings
from keda_ray_scaler.decisions import GroupPlan
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.model import WorkerNode

HOST, OTHER = "10.0.1.5", "10.0.1.6"  # a Kubernetes node's address; another node's


# --- pods sharing one IP -----------------------------------------------------------------------


class Source:
    """The pod cache, as ``builder.pod_ips`` reads it."""

    def __init__(self, *pods: PodInfo) -> None:
        self._pods = pods

    def pods(self) -> tuple[PodInfo, ...]:
        return self._pods


def test_pods_sharing_an_ip_each_keep_it_so_no_other_address_may_claim_either() -> None:
    """Before: the pod-IP map was keyed by IP, so of two hostNetwork pods only the last kept an
    IP, and a raylet anywhere could take the other's name. Now both keep it."""
    source = Source(
        PodInfo("w-a", group="cpu", pod_ips=(HOST,)),
        PodInfo("w-b", group="cpu", pod_ips=(HOST,)),
        PodInfo("w-c", group="cpu"),  # no IP yet: not listed
        PodInfo("w-d", group="cpu", pod_ips=(OTHER,), deleting=True),  # not active
    )
    refs = pod_ips(source)  # type: ignore[arg-type]
    assert refs == (PodRef("w-a", "cpu", (HOST,)), PodRef("w-b", "cpu", (HOST,)))
    own_b = node(b"b", "w-b", HOST, free=0)
    impostor = node(b"f", "w-a", OTHER)
    state = parse_status(status(own_b, impostor), SPEC, pods=refs)
    assert [(n.pod, n.group) for n in state.nodes if n.group] == [("w-b", "cpu")]
    assert [(r.reason, r.value) for r in state.refused] == [(Refusal.NODE_IP_MISMATCH, "w-a")]
    assert state.contested == frozenset({"w-a"})


def test_at_a_shared_ip_a_name_maps_only_while_it_is_the_only_live_node_naming_the_pod() -> None:
    """The IP cannot tell w-a from w-b: each node there maps by its name; a second live node
    naming w-a from that IP (a task on w-b's raylet) contests w-a; a nameless node at the
    shared IP maps to neither pod."""
    refs = [PodRef("w-a", "cpu", (HOST,)), PodRef("w-b", "cpu", (HOST,))]
    own_a, own_b = node(b"a", "w-a", HOST, free=0), node(b"b", "w-b", HOST)
    state = parse_status(status(own_a, own_b), SPEC, pods=refs)
    assert sorted(n.pod for n in state.nodes) == ["w-a", "w-b"]
    assert (state.contested, state.refused) == (frozenset(), ())
    second = node(b"f", "w-a", HOST)
    seen = {hexid(b"a"): 1, hexid(b"b"): 1, hexid(b"f"): 2}
    state = parse_status(status(own_a, own_b, second), SPEC, pods=refs, first_seen=seen)
    assert state.contested == frozenset({"w-a"})
    nameless = node(b"n", "", HOST)
    nameless.ray_node_type_name = ""
    state = parse_status(status(nameless), SPEC, pods=refs)
    assert [(n.pod, n.group) for n in state.nodes] == [(hexid(b"n"), "")]
    assert state.unmapped == 1


# --- dual-stack pods ---------------------------------------------------------------------------


def test_a_dual_stack_pod_lists_every_address_and_a_node_matches_any() -> None:
    """status.podIPs in full (IPv6 first here, Ray on IPv4); podIP alone when podIPs is absent."""
    raw: dict[str, Any] = {
        "metadata": {"name": "w-a"},
        "status": {"podIP": "fd00::5", "podIPs": [{"ip": "fd00::5"}, {"ip": "10.0.0.1"}]},
    }
    assert pod_info(raw, "group").pod_ips == ("fd00::5", "10.0.0.1")
    assert pod_info({"status": {"podIP": "10.0.0.1"}}, "group").pod_ips == ("10.0.0.1",)
    assert pod_info({"status": {}}, "group").pod_ips == ()
    refs = [PodRef("w-a", "cpu", ("fd00::5", "10.0.0.1"))]
    for ip in ("10.0.0.1", "fd00:0:0::5"):
        state = parse_status(status(node(b"a", "w-a", ip)), SPEC, pods=refs)
        assert ([n.pod for n in state.nodes], state.refused) == (["w-a"], ())
    nameless = node(b"n", "", "10.0.0.1")
    nameless.ray_node_type_name = ""
    assert [n.pod for n in parse_status(status(nameless), SPEC, pods=refs).nodes] == ["w-a"]
    state = parse_status(status(node(b"a", "w-a", "10.0.0.66")), SPEC, pods=refs)
    assert [r.reason for r in state.refused] == [Refusal.NODE_IP_MISMATCH]


# --- a superseded live node ----------------------------------------------------------------------

BUSY = "w-a"
REFS = [PodRef(BUSY, "cpu", ("10.0.0.1",))]


def take_failing(nodes: tuple[WorkerNode, ...], contested: frozenset[str]) -> list[str]:
    """The pods the victim protocol takes when the plan lists the busy pod failing (over_cap:
    what the join tracker's RAY_NODE_DEAD makes of it): no drain, no idle check."""
    gp = GroupPlan("cpu", 0, 0, 0, 1, 0, 0, removable=(BUSY,), over_cap=(BUSY,))
    pods = {BUSY: PodInfo(BUSY, group="cpu")}
    view = GroupView(gp, pods, {n.pod: n for n in nodes}, contested=contested)
    return [p.name for p in choose(view, VictimSettings()).chosen]


def test_a_live_node_superseded_by_a_dead_newer_one_contests_its_pod() -> None:
    """The busy pod's own node (first seen at poll 1) and a newer node of the same name that
    died: before, the pod had no live node, was dead to the join tracker, failing to the plan,
    and taken without a drain. Now it is contested, counted, never taken."""
    own = node(b"r", BUSY, "10.0.0.1", free=0)
    dead = node(b"f", BUSY, "10.0.0.1", status=pb.DEAD)
    seen = {hexid(b"r"): 1, hexid(b"f"): 2}
    state = parse_status(status(own, dead), SPEC, pods=REFS, first_seen=seen)
    assert (state.nodes, state.superseded) == ((), (hexid(b"r"),))
    assert state.contested == frozenset({BUSY})
    assert [(r.reason, r.value) for r in state.refused] == [(Refusal.SUPERSEDED_NODE_ALIVE, BUSY)]
    assert take_failing(state.nodes, state.contested) == []
    later = parse_status(status(own), SPEC, pods=REFS, first_seen=seen, stale=state.superseded)
    assert (later.nodes, later.contested) == ((), frozenset({BUSY}))  # superseded for good


async def test_a_raylet_started_and_stopped_under_a_busy_pods_name_never_makes_it_a_victim() -> (
    None
):
    """Through the reader, poll by poll: the pod's own node; a task's raylet named after it
    (from its IP: inside the pod); that raylet stopped (DEAD); then gone from the list. The pod
    is contested from the second poll on, counted at each poll, never taken."""
    registry = CollectorRegistry()
    own = node(b"r", BUSY, "10.0.0.1", free=0)
    fake = node(b"f", BUSY, "10.0.0.1")
    gone = node(b"f", BUSY, "10.0.0.1", status=pb.DEAD)
    replies = (status(own), status(own, fake), status(own, gone), status(own))
    fake_gcs = FakeGcs(None, replies=replies)
    reader = reader_of(fake_gcs, registry, pods=lambda: REFS)
    state = await reader.read()
    assert reader.contested() == frozenset()
    taken: list[str] = []
    for _ in range(3):
        state = await reader.read()
        assert reader.contested() == frozenset({BUSY})
        taken += take_failing(state.nodes, reader.contested())
    assert taken == []
    assert refused_total(registry, Refusal.TWO_LIVE_NODES) == 1.0
    assert refused_total(registry, Refusal.SUPERSEDED_NODE_ALIVE) == 2.0
