import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeDefinitionEvent(_message.Message):
    __slots__ = ("node_id", "node_ip_address", "labels", "start_timestamp", "hostname", "node_name", "instance_id", "instance_type_name")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_IP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    START_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    node_id: bytes
    node_ip_address: str
    labels: _containers.ScalarMap[str, str]
    start_timestamp: _timestamp_pb2.Timestamp
    hostname: str
    node_name: str
    instance_id: str
    instance_type_name: str
    def __init__(self, node_id: _Optional[bytes] = ..., node_ip_address: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., start_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., hostname: _Optional[str] = ..., node_name: _Optional[str] = ..., instance_id: _Optional[str] = ..., instance_type_name: _Optional[str] = ...) -> None: ...
