import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeLifecycleEvent(_message.Message):
    __slots__ = ("node_id", "state_transitions")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ALIVE: _ClassVar[NodeLifecycleEvent.State]
        DEAD: _ClassVar[NodeLifecycleEvent.State]
    ALIVE: NodeLifecycleEvent.State
    DEAD: NodeLifecycleEvent.State
    class AliveSubState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[NodeLifecycleEvent.AliveSubState]
        DRAINING: _ClassVar[NodeLifecycleEvent.AliveSubState]
    UNSPECIFIED: NodeLifecycleEvent.AliveSubState
    DRAINING: NodeLifecycleEvent.AliveSubState
    class DeathInfo(_message.Message):
        __slots__ = ("reason", "reason_message")
        class Reason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            UNSPECIFIED: _ClassVar[NodeLifecycleEvent.DeathInfo.Reason]
            EXPECTED_TERMINATION: _ClassVar[NodeLifecycleEvent.DeathInfo.Reason]
            UNEXPECTED_TERMINATION: _ClassVar[NodeLifecycleEvent.DeathInfo.Reason]
            AUTOSCALER_DRAIN_PREEMPTED: _ClassVar[NodeLifecycleEvent.DeathInfo.Reason]
            AUTOSCALER_DRAIN_IDLE: _ClassVar[NodeLifecycleEvent.DeathInfo.Reason]
        UNSPECIFIED: NodeLifecycleEvent.DeathInfo.Reason
        EXPECTED_TERMINATION: NodeLifecycleEvent.DeathInfo.Reason
        UNEXPECTED_TERMINATION: NodeLifecycleEvent.DeathInfo.Reason
        AUTOSCALER_DRAIN_PREEMPTED: NodeLifecycleEvent.DeathInfo.Reason
        AUTOSCALER_DRAIN_IDLE: NodeLifecycleEvent.DeathInfo.Reason
        REASON_FIELD_NUMBER: _ClassVar[int]
        REASON_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        reason: NodeLifecycleEvent.DeathInfo.Reason
        reason_message: str
        def __init__(self, reason: _Optional[_Union[NodeLifecycleEvent.DeathInfo.Reason, str]] = ..., reason_message: _Optional[str] = ...) -> None: ...
    class StateTransition(_message.Message):
        __slots__ = ("state", "timestamp", "resources", "death_info", "alive_sub_state")
        class ResourcesEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: float
            def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
        STATE_FIELD_NUMBER: _ClassVar[int]
        TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        RESOURCES_FIELD_NUMBER: _ClassVar[int]
        DEATH_INFO_FIELD_NUMBER: _ClassVar[int]
        ALIVE_SUB_STATE_FIELD_NUMBER: _ClassVar[int]
        state: NodeLifecycleEvent.State
        timestamp: _timestamp_pb2.Timestamp
        resources: _containers.ScalarMap[str, float]
        death_info: NodeLifecycleEvent.DeathInfo
        alive_sub_state: NodeLifecycleEvent.AliveSubState
        def __init__(self, state: _Optional[_Union[NodeLifecycleEvent.State, str]] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resources: _Optional[_Mapping[str, float]] = ..., death_info: _Optional[_Union[NodeLifecycleEvent.DeathInfo, _Mapping]] = ..., alive_sub_state: _Optional[_Union[NodeLifecycleEvent.AliveSubState, str]] = ...) -> None: ...
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    node_id: bytes
    state_transitions: _containers.RepeatedCompositeFieldContainer[NodeLifecycleEvent.StateTransition]
    def __init__(self, node_id: _Optional[bytes] = ..., state_transitions: _Optional[_Iterable[_Union[NodeLifecycleEvent.StateTransition, _Mapping]]] = ...) -> None: ...
