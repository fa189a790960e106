import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubmissionJobLifecycleEvent(_message.Message):
    __slots__ = ("submission_id", "state_transitions")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[SubmissionJobLifecycleEvent.State]
        PENDING: _ClassVar[SubmissionJobLifecycleEvent.State]
        RUNNING: _ClassVar[SubmissionJobLifecycleEvent.State]
        STOPPED: _ClassVar[SubmissionJobLifecycleEvent.State]
        SUCCEEDED: _ClassVar[SubmissionJobLifecycleEvent.State]
        FAILED: _ClassVar[SubmissionJobLifecycleEvent.State]
    UNSPECIFIED: SubmissionJobLifecycleEvent.State
    PENDING: SubmissionJobLifecycleEvent.State
    RUNNING: SubmissionJobLifecycleEvent.State
    STOPPED: SubmissionJobLifecycleEvent.State
    SUCCEEDED: SubmissionJobLifecycleEvent.State
    FAILED: SubmissionJobLifecycleEvent.State
    class StateTransition(_message.Message):
        __slots__ = ("state", "timestamp", "message", "error_type", "driver_node_id", "driver_agent_http_address", "driver_exit_code")
        STATE_FIELD_NUMBER: _ClassVar[int]
        TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        MESSAGE_FIELD_NUMBER: _ClassVar[int]
        ERROR_TYPE_FIELD_NUMBER: _ClassVar[int]
        DRIVER_NODE_ID_FIELD_NUMBER: _ClassVar[int]
        DRIVER_AGENT_HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
        DRIVER_EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
        state: SubmissionJobLifecycleEvent.State
        timestamp: _timestamp_pb2.Timestamp
        message: str
        error_type: str
        driver_node_id: bytes
        driver_agent_http_address: str
        driver_exit_code: int
        def __init__(self, state: _Optional[_Union[SubmissionJobLifecycleEvent.State, str]] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., message: _Optional[str] = ..., error_type: _Optional[str] = ..., driver_node_id: _Optional[bytes] = ..., driver_agent_http_address: _Optional[str] = ..., driver_exit_code: _Optional[int] = ...) -> None: ...
    SUBMISSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    submission_id: str
    state_transitions: _containers.RepeatedCompositeFieldContainer[SubmissionJobLifecycleEvent.StateTransition]
    def __init__(self, submission_id: _Optional[str] = ..., state_transitions: _Optional[_Iterable[_Union[SubmissionJobLifecycleEvent.StateTransition, _Mapping]]] = ...) -> None: ...
