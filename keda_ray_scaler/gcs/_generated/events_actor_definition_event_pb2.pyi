from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ActorDefinitionEvent(_message.Message):
    __slots__ = ("actor_id", "job_id", "is_detached", "name", "ray_namespace", "serialized_runtime_env", "class_name", "required_resources", "placement_group_id", "label_selector", "call_site", "parent_id", "ref_ids")
    class RequiredResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class LabelSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class RefIdsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    IS_DETACHED_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RAY_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_RUNTIME_ENV_FIELD_NUMBER: _ClassVar[int]
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    CALL_SITE_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    REF_IDS_FIELD_NUMBER: _ClassVar[int]
    actor_id: bytes
    job_id: bytes
    is_detached: bool
    name: str
    ray_namespace: str
    serialized_runtime_env: str
    class_name: str
    required_resources: _containers.ScalarMap[str, float]
    placement_group_id: bytes
    label_selector: _containers.ScalarMap[str, str]
    call_site: str
    parent_id: bytes
    ref_ids: _containers.ScalarMap[str, bytes]
    def __init__(self, actor_id: _Optional[bytes] = ..., job_id: _Optional[bytes] = ..., is_detached: _Optional[bool] = ..., name: _Optional[str] = ..., ray_namespace: _Optional[str] = ..., serialized_runtime_env: _Optional[str] = ..., class_name: _Optional[str] = ..., required_resources: _Optional[_Mapping[str, float]] = ..., placement_group_id: _Optional[bytes] = ..., label_selector: _Optional[_Mapping[str, str]] = ..., call_site: _Optional[str] = ..., parent_id: _Optional[bytes] = ..., ref_ids: _Optional[_Mapping[str, bytes]] = ...) -> None: ...
