from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProfileEventEntry(_message.Message):
    __slots__ = ("start_time", "end_time", "extra_data", "event_name")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    EXTRA_DATA_FIELD_NUMBER: _ClassVar[int]
    EVENT_NAME_FIELD_NUMBER: _ClassVar[int]
    start_time: int
    end_time: int
    extra_data: str
    event_name: str
    def __init__(self, start_time: _Optional[int] = ..., end_time: _Optional[int] = ..., extra_data: _Optional[str] = ..., event_name: _Optional[str] = ...) -> None: ...

class ProfileEvents(_message.Message):
    __slots__ = ("component_type", "component_id", "node_ip_address", "events")
    COMPONENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_IP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    component_type: str
    component_id: bytes
    node_ip_address: str
    events: _containers.RepeatedCompositeFieldContainer[ProfileEventEntry]
    def __init__(self, component_type: _Optional[str] = ..., component_id: _Optional[bytes] = ..., node_ip_address: _Optional[str] = ..., events: _Optional[_Iterable[_Union[ProfileEventEntry, _Mapping]]] = ...) -> None: ...
