from keda_ray_scaler.gcs._generated import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BundleSpec(_message.Message):
    __slots__ = ("bundle_index", "unit_resources", "label_selector")
    class UnitResourcesEntry(_message.Message):
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
    BUNDLE_INDEX_FIELD_NUMBER: _ClassVar[int]
    UNIT_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    bundle_index: int
    unit_resources: _containers.ScalarMap[str, float]
    label_selector: _containers.ScalarMap[str, str]
    def __init__(self, bundle_index: _Optional[int] = ..., unit_resources: _Optional[_Mapping[str, float]] = ..., label_selector: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PlacementGroupDefinitionEvent(_message.Message):
    __slots__ = ("placement_group_id", "name", "ray_namespace", "strategy", "is_detached", "creator_job_id", "creator_actor_id", "bundles", "soft_target_node_id", "creation_request_received_ns")
    PLACEMENT_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RAY_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    IS_DETACHED_FIELD_NUMBER: _ClassVar[int]
    CREATOR_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CREATOR_ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    BUNDLES_FIELD_NUMBER: _ClassVar[int]
    SOFT_TARGET_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CREATION_REQUEST_RECEIVED_NS_FIELD_NUMBER: _ClassVar[int]
    placement_group_id: bytes
    name: str
    ray_namespace: str
    strategy: _common_pb2.PlacementStrategy
    is_detached: bool
    creator_job_id: bytes
    creator_actor_id: bytes
    bundles: _containers.RepeatedCompositeFieldContainer[BundleSpec]
    soft_target_node_id: bytes
    creation_request_received_ns: int
    def __init__(self, placement_group_id: _Optional[bytes] = ..., name: _Optional[str] = ..., ray_namespace: _Optional[str] = ..., strategy: _Optional[_Union[_common_pb2.PlacementStrategy, str]] = ..., is_detached: _Optional[bool] = ..., creator_job_id: _Optional[bytes] = ..., creator_actor_id: _Optional[bytes] = ..., bundles: _Optional[_Iterable[_Union[BundleSpec, _Mapping]]] = ..., soft_target_node_id: _Optional[bytes] = ..., creation_request_received_ns: _Optional[int] = ...) -> None: ...
