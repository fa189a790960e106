import datetime

from keda_ray_scaler.gcs._generated import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ActorLifecycleEvent(_message.Message):
    __slots__ = ("actor_id", "state_transitions")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DEPENDENCIES_UNREADY: _ClassVar[ActorLifecycleEvent.State]
        PENDING_CREATION: _ClassVar[ActorLifecycleEvent.State]
        ALIVE: _ClassVar[ActorLifecycleEvent.State]
        RESTARTING: _ClassVar[ActorLifecycleEvent.State]
        DEAD: _ClassVar[ActorLifecycleEvent.State]
    DEPENDENCIES_UNREADY: ActorLifecycleEvent.State
    PENDING_CREATION: ActorLifecycleEvent.State
    ALIVE: ActorLifecycleEvent.State
    RESTARTING: ActorLifecycleEvent.State
    DEAD: ActorLifecycleEvent.State
    class RestartReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ACTOR_FAILURE: _ClassVar[ActorLifecycleEvent.RestartReason]
        LINEAGE_RECONSTRUCTION: _ClassVar[ActorLifecycleEvent.RestartReason]
        NODE_PREEMPTION: _ClassVar[ActorLifecycleEvent.RestartReason]
    ACTOR_FAILURE: ActorLifecycleEvent.RestartReason
    LINEAGE_RECONSTRUCTION: ActorLifecycleEvent.RestartReason
    NODE_PREEMPTION: ActorLifecycleEvent.RestartReason
    class StateTransition(_message.Message):
        __slots__ = ("state", "timestamp", "node_id", "worker_id", "repr_name", "death_cause", "pid", "port", "restart_reason")
        STATE_FIELD_NUMBER: _ClassVar[int]
        TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        NODE_ID_FIELD_NUMBER: _ClassVar[int]
        WORKER_ID_FIELD_NUMBER: _ClassVar[int]
        REPR_NAME_FIELD_NUMBER: _ClassVar[int]
        DEATH_CAUSE_FIELD_NUMBER: _ClassVar[int]
        PID_FIELD_NUMBER: _ClassVar[int]
        PORT_FIELD_NUMBER: _ClassVar[int]
        RESTART_REASON_FIELD_NUMBER: _ClassVar[int]
        state: ActorLifecycleEvent.State
        timestamp: _timestamp_pb2.Timestamp
        node_id: bytes
        worker_id: bytes
        repr_name: str
        death_cause: _common_pb2.ActorDeathCause
        pid: int
        port: int
        restart_reason: ActorLifecycleEvent.RestartReason
        def __init__(self, state: _Optional[_Union[ActorLifecycleEvent.State, str]] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., node_id: _Optional[bytes] = ..., worker_id: _Optional[bytes] = ..., repr_name: _Optional[str] = ..., death_cause: _Optional[_Union[_common_pb2.ActorDeathCause, _Mapping]] = ..., pid: _Optional[int] = ..., port: _Optional[int] = ..., restart_reason: _Optional[_Union[ActorLifecycleEvent.RestartReason, str]] = ...) -> None: ...
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    actor_id: bytes
    state_transitions: _containers.RepeatedCompositeFieldContainer[ActorLifecycleEvent.StateTransition]
    def __init__(self, actor_id: _Optional[bytes] = ..., state_transitions: _Optional[_Iterable[_Union[ActorLifecycleEvent.StateTransition, _Mapping]]] = ...) -> None: ...
