from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubmissionJobDefinitionEvent(_message.Message):
    __slots__ = ("submission_id", "entrypoint", "config", "entrypoint_resources")
    class Config(_message.Message):
        __slots__ = ("serialized_runtime_env", "metadata")
        class MetadataEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        SERIALIZED_RUNTIME_ENV_FIELD_NUMBER: _ClassVar[int]
        METADATA_FIELD_NUMBER: _ClassVar[int]
        serialized_runtime_env: str
        metadata: _containers.ScalarMap[str, str]
        def __init__(self, serialized_runtime_env: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...
    class EntrypointResources(_message.Message):
        __slots__ = ("num_cpus", "num_gpus", "memory", "custom_resources")
        class CustomResourcesEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: float
            def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
        NUM_CPUS_FIELD_NUMBER: _ClassVar[int]
        NUM_GPUS_FIELD_NUMBER: _ClassVar[int]
        MEMORY_FIELD_NUMBER: _ClassVar[int]
        CUSTOM_RESOURCES_FIELD_NUMBER: _ClassVar[int]
        num_cpus: float
        num_gpus: float
        memory: int
        custom_resources: _containers.ScalarMap[str, float]
        def __init__(self, num_cpus: _Optional[float] = ..., num_gpus: _Optional[float] = ..., memory: _Optional[int] = ..., custom_resources: _Optional[_Mapping[str, float]] = ...) -> None: ...
    SUBMISSION_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRYPOINT_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    ENTRYPOINT_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    submission_id: str
    entrypoint: str
    config: SubmissionJobDefinitionEvent.Config
    entrypoint_resources: SubmissionJobDefinitionEvent.EntrypointResources
    def __init__(self, submission_id: _Optional[str] = ..., entrypoint: _Optional[str] = ..., config: _Optional[_Union[SubmissionJobDefinitionEvent.Config, _Mapping]] = ..., entrypoint_resources: _Optional[_Union[SubmissionJobDefinitionEvent.EntrypointResources, _Mapping]] = ...) -> None: ...
