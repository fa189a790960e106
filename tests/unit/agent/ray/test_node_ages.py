"""A pod that lists two live Ray nodes (its raylet restarted before the GCS called the old node
dead, fault (c) on the real node): the node the agent saw last is the pod's, the other is left
out as superseded, and what the old one reports (leases, resources) counts for nothing."""

from __future__ import annotations

from keda_ray_scaler.agent.ray.node_ages import NodeAges
from keda_ray_scaler.agent.ray.ray_status import parse_status
from keda_ray_scaler.agent.ray.status_nodes import BUSY_WORKERS_ACTIVITY
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.model import ClusterSpec, NodeStatus, WorkerGroup

SPEC = ClusterSpec(
    name="c", worker_groups=(WorkerGroup("cpu", {"CPU": 10}, min_replicas=0, max_replicas=10),)
)


def _ns(node_id: str, pod: str, status: int, free: int, *activity: str) -> pb.NodeState:
    return pb.NodeState(
        node_id=bytes.fromhex(node_id),
        instance_id=pod,
        ray_node_type_name="cpu",
        status=status,
        total_resources={"CPU": 10},
        available_resources={"CPU": free},
        node_activity=list(activity),
    )


def _reply(*states: pb.NodeState) -> pb.GetClusterStatusReply:
    return pb.GetClusterStatusReply(
        cluster_resource_state=pb.ClusterResourceState(node_states=list(states))
    )


OLD, NEW, OTHER = "7e" * 28, "0e" * 28, "aa" * 28


def test_the_agent_remembers_each_nodes_first_poll_and_forgets_unlisted_ones() -> None:
    ages = NodeAges()
    assert ages.observe([OLD, OTHER]) == {OLD: 1, OTHER: 1}
    assert ages.observe([OLD, OTHER, NEW]) == {OLD: 1, OTHER: 1, NEW: 2}
    assert ages.observe([NEW]) == {NEW: 2}
    assert ages.observe([NEW, OLD]) == {NEW: 2, OLD: 4}  # forgotten, then seen anew


def test_a_pod_with_two_live_nodes_is_the_one_seen_last_the_old_one_counts_nothing() -> None:
    # the killed raylet's node still listed with its two tasks' leases; the new one drained, idle
    reply = _reply(
        _ns(OLD, "w-a", pb.RUNNING, 0, "Resource: CPU currently in use."),
        _ns(NEW, "w-a", pb.DRAINING, 10),
        _ns(OTHER, "w-b", pb.IDLE, 10),
    )
    state = parse_status(reply, SPEC, first_seen={OLD: 1, NEW: 5, OTHER: 1})
    by_pod = {n.pod: n for n in state.nodes}
    assert sorted(by_pod) == ["w-a", "w-b"]
    assert by_pod["w-a"].node_id == NEW
    assert by_pod["w-a"].status == NodeStatus.DRAINING
    assert by_pod["w-a"].available == by_pod["w-a"].total  # the new node's reading: idle
    assert state.superseded == (OLD,)
    assert state.starting == frozenset()  # the old node's leases start nothing


def test_the_newer_node_wins_whichever_the_gcs_lists_first_and_keeps_its_own_reading() -> None:
    new = _ns(NEW, "w-a", pb.RUNNING, 0, "Resource: CPU currently in use.")
    old = _ns(OLD, "w-a", pb.IDLE, 10)
    for order in ((new, old), (old, new)):
        state = parse_status(_reply(*order), SPEC, first_seen={OLD: 1, NEW: 2})
        assert [n.node_id for n in state.nodes] == [NEW]
        assert state.starting == frozenset({"w-a"})
        assert state.superseded == (OLD,)
    busy = _ns(NEW, "w-a", pb.RUNNING, 0, BUSY_WORKERS_ACTIVITY)
    assert parse_status(_reply(old, busy), SPEC, first_seen={OLD: 1, NEW: 2}).starting == (
        frozenset()
    )


def test_nodes_first_seen_together_keep_one_stable_choice_one_node_pods_untouched() -> None:
    a = _ns(OLD, "w-a", pb.RUNNING, 10)
    b = _ns(NEW, "w-a", pb.RUNNING, 10)
    picks = {
        parse_status(_reply(*order), SPEC, first_seen=seen).nodes[0].node_id
        for order in ((a, b), (b, a))
        for seen in ({OLD: 3, NEW: 3}, {})
    }
    assert picks == {OLD}  # the larger node id, whatever the order
    single = parse_status(_reply(a, _ns(OTHER, "w-b", pb.IDLE, 10)), SPEC)
    assert len(single.nodes) == 2 and single.superseded == ()


def test_a_pod_whose_newest_node_died_has_no_live_node_and_the_old_one_stays_superseded() -> None:
    """Fault (c) on the real node, 2026-11-27: the restarted raylet's node (NEW) was drained and
    went DEAD while the GCS still listed the killed one (OLD) alive; taken for the pod's node it
    called the drained victim back ("resurrected"). The pod has no live node then, and OLD stays
    superseded for as long as it is listed, after NEW leaves the GCS's list too."""
    old = _ns(OLD, "w-a", pb.RUNNING, 10)
    new_dead = _ns(NEW, "w-a", pb.DEAD, 10)
    state = parse_status(_reply(old, new_dead), SPEC, first_seen={OLD: 1, NEW: 2})
    assert state.nodes == ()
    assert state.superseded == (OLD,)
    assert state.dead == frozenset({"w-a"})
    later = parse_status(_reply(old), SPEC, first_seen={OLD: 1}, stale=frozenset({OLD}))
    assert later.nodes == () and later.superseded == (OLD,)
    ages = NodeAges()
    ages.observe([OLD, NEW])
    ages.supersede([OLD])
    ages.observe([OLD])
    assert ages.stale == frozenset({OLD})
    ages.observe([NEW])
    assert ages.stale == frozenset()  # forgotten once no longer listed


def test_the_same_ids_again_give_the_same_ages_and_a_new_one_is_seen_now() -> None:
    """A poll listing the ids of the poll before, in its order, changes nothing (the very
    mapping); a poll after it listing a new id records that id at its own poll."""
    ages = NodeAges()
    first = ages.observe([OLD, OTHER])
    assert ages.observe([OLD, OTHER]) is first
    assert dict(ages.observe([OTHER, OLD, NEW])) == {OLD: 1, OTHER: 1, NEW: 3}
    assert dict(ages.observe([NEW])) == {NEW: 3}
