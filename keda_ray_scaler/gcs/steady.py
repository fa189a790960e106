"""What a look compares of a ``GetClusterStatusReply``, in C: its look form.

At every call Ray's GCS counts ``cluster_resource_state_version`` up, stamps each node's
``node_state_version`` with it and grows each idle node's ``idle_duration_ms``
(``GcsAutoscalerStateManager``), so no two replies are alike; each node's use (available
resources, activity) moves at every task's start and end. :func:`look_form` reads the reply's
bytes with messages that do not declare those fields (nor
``last_seen_autoscaler_state_version``, nor ``autoscaling_state``, which the agent never reads),
drops them as unknown fields, counts the pending demand and serializes the rest
deterministically (map entries sorted); :func:`look_form_of_state` makes the same of the bytes
:func:`~keda_ray_scaler.agent.ray.status_memo.steady_part` makes of the poll's parsed reply. The
fields are dropped by protobuf's C code, not zeroed node by node in Python.

The messages are Ray's own (``autoscaler.proto`` of ``_generated``) with those fields taken
out, registered in a pool of their own at the first use (:func:`_stripped`; about 20 ms, not
paid by ``agent --help``). A field these messages do not know (a Ray newer than the protos) is
dropped here and kept by ``steady_part``: the two never agree for such a reply, which then always
reads as changed (a poll too many, never a change missed).
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any, Final, NamedTuple

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from keda_ray_scaler.gcs._generated import autoscaler_pb2, common_pb2, runtime_environment_pb2

#: The fields left out, by message of ``autoscaler.proto``: those the GCS changes at every call,
#: and the autoscaler's own state (``GetClusterStatusReply.autoscaling_state``).
LEFT_OUT: Final = {
    "ClusterResourceState": frozenset({1, 2}),  # the state's version, the autoscaler's last seen
    "NodeState": frozenset({7, 9}),  # node_state_version, idle_duration_ms
    "GetClusterStatusReply": frozenset({1}),  # autoscaling_state
}


#: Left out of a look's form (:func:`look_form`) besides :data:`LEFT_OUT`: each node's use,
#: its available resources and activity, which move at every task's start and end.
LOOK_LEFT_OUT: Final = {**LEFT_OUT, "NodeState": frozenset({4, 7, 9, 12})}


@cache
def _stripped(left_out: tuple[tuple[str, frozenset[int]], ...], message_name: str) -> Any:
    """The class of ``message_name`` of ``autoscaler.proto`` without the fields ``left_out``
    names, from a pool of its own."""
    gone_by = dict(left_out)
    pool = descriptor_pool.DescriptorPool()
    for module in (runtime_environment_pb2, common_pb2):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    proto = descriptor_pb2.FileDescriptorProto()
    autoscaler_pb2.DESCRIPTOR.CopyToProto(proto)
    for message in proto.message_type:
        gone = gone_by.get(message.name, frozenset())
        kept = [f for f in message.field if f.number not in gone]
        del message.field[:]
        message.field.extend(kept)
    del proto.service[:]
    pool.Add(proto)
    name = f"{proto.package}.{message_name}"
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def _key(left_out: dict[str, frozenset[int]]) -> tuple[tuple[str, frozenset[int]], ...]:
    return tuple(sorted(left_out.items()))


class LookForm(NamedTuple):
    """What a look compares of a state: ``nodes``, the state without its pending demand and
    without :data:`LOOK_LEFT_OUT` (each node's id, status, totals and labels, the
    ``request_resources`` constraints, the session), serialized; ``pending``, each pending
    request (``b"r"`` + its bytes) and each placement group's request (``b"g"`` + its bytes,
    its details name the group) with its count."""

    nodes: bytes
    pending: Counter[bytes]

    def rose_from(self, before: LookForm) -> bool:
        """Whether a poll must see this state at once: a node or constraint changed, or a
        pending request counts more than ``before`` (new demand). Demand that fell, and use
        that moved, wait for the next poll: they raise nothing."""
        if self.nodes != before.nodes:
            return True
        had = before.pending
        return any(n > had.get(k, 0) for k, n in self.pending.items())


def look_form(reply: bytes) -> LookForm:
    """The :class:`LookForm` of a ``GetClusterStatusReply``'s bytes; raises
    ``google.protobuf.message.DecodeError`` for bytes that are no reply."""
    message = _stripped(_key(LOOK_LEFT_OUT), "GetClusterStatusReply").FromString(reply)
    return _form(message.cluster_resource_state)


def look_form_of_state(steady: bytes) -> LookForm:
    """The :class:`LookForm` of a state's steady bytes (the poll's ``status_memo.steady_part``)."""
    return _form(_stripped(_key(LOOK_LEFT_OUT), "ClusterResourceState").FromString(steady))


def _form(state: Any) -> LookForm:
    state.DiscardUnknownFields()
    pending: Counter[bytes] = Counter()
    for r in state.pending_resource_requests:
        pending[b"r" + r.request.SerializeToString(deterministic=True)] += r.count
    for g in state.pending_gang_resource_requests:
        pending[b"g" + g.SerializeToString(deterministic=True)] += 1
    state.ClearField("pending_resource_requests")
    state.ClearField("pending_gang_resource_requests")
    return LookForm(state.SerializeToString(deterministic=True), pending)
