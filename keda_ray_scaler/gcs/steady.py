"""A serialized ``GetClusterStatusReply`` without what the GCS changes at every call, in C.

At every call Ray's GCS counts ``cluster_resource_state_version`` up, stamps each node's
``node_state_version`` with it and grows each idle node's ``idle_duration_ms``
(``GcsAutoscalerStateManager``), so no two replies are alike.
:func:`steady_key` reads the reply's bytes with messages that do not declare those fields (nor
``last_seen_autoscaler_state_version``, nor ``autoscaling_state``, which the agent never reads),
drops them as unknown fields and serializes the rest deterministically (map entries sorted): the
bytes :func:`~keda_ray_scaler.agent.ray.status_memo.steady_part` makes of the parsed reply's
``cluster_resource_state``. The fields are dropped by protobuf's C code, not zeroed node by node
in Python: from the bytes, 1.4 ms at 1,000 nodes where parsing them and ``steady_part`` take 1.9.

The messages are Ray's own (``autoscaler.proto`` of ``_generated``) with those fields taken
out, registered in a pool of their own at the first use (:func:`steady_reply`; about 20 ms, not
paid by ``agent --help``). A field these messages do not know (a Ray newer than the protos) is
dropped here and kept by ``steady_part``: the two never agree for such a reply, which then always
reads as changed (a poll too many, never a change missed).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from keda_ray_scaler.gcs._generated import autoscaler_pb2, common_pb2, runtime_environment_pb2

#: The fields left out, by message of ``autoscaler.proto``: those the GCS changes at every call,
#: and the autoscaler's own state (``GetClusterStatusReply.autoscaling_state``).
LEFT_OUT: Final = {
    "ClusterResourceState": frozenset({1, 2}),  # the state's version, the autoscaler's last seen
    "NodeState": frozenset({7, 9}),  # node_state_version, idle_duration_ms
    "GetClusterStatusReply": frozenset({1}),  # autoscaling_state
}


@cache
def steady_reply() -> Any:
    """``GetClusterStatusReply`` without :data:`LEFT_OUT`: the reply class of a pool of its own
    holding ``autoscaler.proto`` without those fields."""
    pool = descriptor_pool.DescriptorPool()
    for module in (runtime_environment_pb2, common_pb2):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    proto = descriptor_pb2.FileDescriptorProto()
    autoscaler_pb2.DESCRIPTOR.CopyToProto(proto)
    for message in proto.message_type:
        gone = LEFT_OUT.get(message.name, frozenset())
        kept = [f for f in message.field if f.number not in gone]
        del message.field[:]
        message.field.extend(kept)
    del proto.service[:]
    pool.Add(proto)
    name = f"{proto.package}.GetClusterStatusReply"
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def steady_key(reply: bytes) -> bytes:
    """The reply's ``cluster_resource_state`` without :data:`LEFT_OUT`, serialized
    deterministically; raises ``google.protobuf.message.DecodeError`` for bytes that are no
    reply."""
    steady = steady_reply().FromString(reply)
    steady.DiscardUnknownFields()
    key: bytes = steady.cluster_resource_state.SerializeToString(deterministic=True)
    return key
