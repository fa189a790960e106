from keda_ray_scaler.gcs._generated import profile_events_pb2 as _profile_events_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaskProfileEvents(_message.Message):
    __slots__ = ("task_id", "attempt_number", "job_id", "profile_events")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_NUMBER_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_EVENTS_FIELD_NUMBER: _ClassVar[int]
    task_id: bytes
    attempt_number: int
    job_id: bytes
    profile_events: _profile_events_pb2.ProfileEvents
    def __init__(self, task_id: _Optional[bytes] = ..., attempt_number: _Optional[int] = ..., job_id: _Optional[bytes] = ..., profile_events: _Optional[_Union[_profile_events_pb2.ProfileEvents, _Mapping]] = ...) -> None: ...
