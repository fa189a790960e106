"""The GCS's answers ``bench.agent_poll_bench`` serves (issue 39): consecutive replies of one
cluster, unchanged or changed, and each idle node's idle time as the bench's clock moves."""

from __future__ import annotations

#: The agent's ``--interval``: between two polls, in the bench's clock.
INTERVAL_MS = 5_000


def shapes_for(nodes: int) -> int:
    """Demand shapes beside ``nodes`` nodes: 200 at 1,000 (as ``bench.agent_bench``)."""
    return max(5, nodes // 5)


def answers(nodes: int, polls: int, *, changed: bool, idle: bool = True) -> list[bytes]:
    """``polls`` serialized replies as the GCS gives them over consecutive calls
    (``bench.agent_poll_bench``'s doc)."""
    from bench.agent_bench import PLACEMENT_GROUPS, synthetic_reply
    from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb

    shapes = shapes_for(nodes)
    base = pb.GetClusterStatusReply.FromString(
        synthetic_reply(nodes=nodes, shapes=max(shapes, PLACEMENT_GROUPS + 1))
    )
    out = []
    for k in range(polls):
        reply = pb.GetClusterStatusReply()
        reply.CopyFrom(base)
        state = reply.cluster_resource_state
        state.cluster_resource_state_version = 100 + k
        for i, ns in enumerate(state.node_states):
            ns.node_state_version = 100 + k
            busy = ns.status == pb.RUNNING or not idle
            if changed and i % 10 == k % 10:
                busy = not busy
            if busy:
                ns.status, ns.idle_duration_ms = pb.RUNNING, 0
                ns.available_resources["CPU"] = 0.0
            else:
                ns.status = pb.IDLE
                ns.idle_duration_ms = 1000 * i + INTERVAL_MS * k
                ns.available_resources["CPU"] = ns.total_resources["CPU"]
        if changed:
            for req in state.pending_resource_requests:
                req.count += k
        out.append(reply.SerializeToString())
    return out


def idle_ms(node: int, elapsed_s: float, call: int) -> int:
    """Node ``node``'s idle time at call ``call`` of the stand-in, ``elapsed_s`` of the bench's
    clock after its first: idle ``node`` seconds at the first, then growing with the clock, off
    by up to 0.3 s either way (Ray's is the last report's plus the time since it)."""
    jitter = (node * 7919 + call * 104_729) % 600 - 300
    return max(1, 1000 * node + round(elapsed_s * 1000) + jitter)
