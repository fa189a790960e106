from keda_ray_scaler.gcs._generated import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNSPECIFIED: _ClassVar[NodeStatus]
    RUNNING: _ClassVar[NodeStatus]
    DEAD: _ClassVar[NodeStatus]
    IDLE: _ClassVar[NodeStatus]
    DRAINING: _ClassVar[NodeStatus]

class DrainNodeReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DRAIN_NODE_REASON_UNSPECIFIED: _ClassVar[DrainNodeReason]
    DRAIN_NODE_REASON_IDLE_TERMINATION: _ClassVar[DrainNodeReason]
    DRAIN_NODE_REASON_PREEMPTION: _ClassVar[DrainNodeReason]
UNSPECIFIED: NodeStatus
RUNNING: NodeStatus
DEAD: NodeStatus
IDLE: NodeStatus
DRAINING: NodeStatus
DRAIN_NODE_REASON_UNSPECIFIED: DrainNodeReason
DRAIN_NODE_REASON_IDLE_TERMINATION: DrainNodeReason
DRAIN_NODE_REASON_PREEMPTION: DrainNodeReason

class AntiAffinityConstraint(_message.Message):
    __slots__ = ("label_name", "label_value")
    LABEL_NAME_FIELD_NUMBER: _ClassVar[int]
    LABEL_VALUE_FIELD_NUMBER: _ClassVar[int]
    label_name: str
    label_value: str
    def __init__(self, label_name: _Optional[str] = ..., label_value: _Optional[str] = ...) -> None: ...

class AffinityConstraint(_message.Message):
    __slots__ = ("label_name", "label_value")
    LABEL_NAME_FIELD_NUMBER: _ClassVar[int]
    LABEL_VALUE_FIELD_NUMBER: _ClassVar[int]
    label_name: str
    label_value: str
    def __init__(self, label_name: _Optional[str] = ..., label_value: _Optional[str] = ...) -> None: ...

class PlacementConstraint(_message.Message):
    __slots__ = ("anti_affinity", "affinity")
    ANTI_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    AFFINITY_FIELD_NUMBER: _ClassVar[int]
    anti_affinity: AntiAffinityConstraint
    affinity: AffinityConstraint
    def __init__(self, anti_affinity: _Optional[_Union[AntiAffinityConstraint, _Mapping]] = ..., affinity: _Optional[_Union[AffinityConstraint, _Mapping]] = ...) -> None: ...

class ResourceRequest(_message.Message):
    __slots__ = ("resources_bundle", "placement_constraints", "label_selectors")
    class ResourcesBundleEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    RESOURCES_BUNDLE_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTORS_FIELD_NUMBER: _ClassVar[int]
    resources_bundle: _containers.ScalarMap[str, float]
    placement_constraints: _containers.RepeatedCompositeFieldContainer[PlacementConstraint]
    label_selectors: _containers.RepeatedCompositeFieldContainer[_common_pb2.LabelSelector]
    def __init__(self, resources_bundle: _Optional[_Mapping[str, float]] = ..., placement_constraints: _Optional[_Iterable[_Union[PlacementConstraint, _Mapping]]] = ..., label_selectors: _Optional[_Iterable[_Union[_common_pb2.LabelSelector, _Mapping]]] = ...) -> None: ...

class ResourceRequestByCount(_message.Message):
    __slots__ = ("request", "count")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    request: ResourceRequest
    count: int
    def __init__(self, request: _Optional[_Union[ResourceRequest, _Mapping]] = ..., count: _Optional[int] = ...) -> None: ...

class LocalityConstraint(_message.Message):
    __slots__ = ("label_name", "placement_strategy")
    LABEL_NAME_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    label_name: str
    placement_strategy: _common_pb2.PlacementStrategy
    def __init__(self, label_name: _Optional[str] = ..., placement_strategy: _Optional[_Union[_common_pb2.PlacementStrategy, str]] = ...) -> None: ...

class LocalityRequirement(_message.Message):
    __slots__ = ("locality_constraint", "label_selector")
    LOCALITY_CONSTRAINT_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    locality_constraint: LocalityConstraint
    label_selector: _common_pb2.LabelSelector
    def __init__(self, locality_constraint: _Optional[_Union[LocalityConstraint, _Mapping]] = ..., label_selector: _Optional[_Union[_common_pb2.LabelSelector, _Mapping]] = ...) -> None: ...

class BundleSelector(_message.Message):
    __slots__ = ("resource_requests", "locality_requirement")
    RESOURCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_REQUIREMENT_FIELD_NUMBER: _ClassVar[int]
    resource_requests: _containers.RepeatedCompositeFieldContainer[ResourceRequest]
    locality_requirement: LocalityRequirement
    def __init__(self, resource_requests: _Optional[_Iterable[_Union[ResourceRequest, _Mapping]]] = ..., locality_requirement: _Optional[_Union[LocalityRequirement, _Mapping]] = ...) -> None: ...

class GangResourceRequest(_message.Message):
    __slots__ = ("requests", "details", "bundle_selectors")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_SELECTORS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[ResourceRequest]
    details: str
    bundle_selectors: _containers.RepeatedCompositeFieldContainer[BundleSelector]
    def __init__(self, requests: _Optional[_Iterable[_Union[ResourceRequest, _Mapping]]] = ..., details: _Optional[str] = ..., bundle_selectors: _Optional[_Iterable[_Union[BundleSelector, _Mapping]]] = ...) -> None: ...

class ClusterResourceConstraint(_message.Message):
    __slots__ = ("resource_requests",)
    RESOURCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    resource_requests: _containers.RepeatedCompositeFieldContainer[ResourceRequestByCount]
    def __init__(self, resource_requests: _Optional[_Iterable[_Union[ResourceRequestByCount, _Mapping]]] = ...) -> None: ...

class NodeState(_message.Message):
    __slots__ = ("node_id", "instance_id", "ray_node_type_name", "available_resources", "total_resources", "dynamic_labels", "node_state_version", "status", "idle_duration_ms", "node_ip_address", "instance_type_name", "node_activity", "labels")
    class AvailableResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class TotalResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class DynamicLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RAY_NODE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_LABELS_FIELD_NUMBER: _ClassVar[int]
    NODE_STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    IDLE_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    NODE_IP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    node_id: bytes
    instance_id: str
    ray_node_type_name: str
    available_resources: _containers.ScalarMap[str, float]
    total_resources: _containers.ScalarMap[str, float]
    dynamic_labels: _containers.ScalarMap[str, str]
    node_state_version: int
    status: NodeStatus
    idle_duration_ms: int
    node_ip_address: str
    instance_type_name: str
    node_activity: _containers.RepeatedScalarFieldContainer[str]
    labels: _containers.ScalarMap[str, str]
    def __init__(self, node_id: _Optional[bytes] = ..., instance_id: _Optional[str] = ..., ray_node_type_name: _Optional[str] = ..., available_resources: _Optional[_Mapping[str, float]] = ..., total_resources: _Optional[_Mapping[str, float]] = ..., dynamic_labels: _Optional[_Mapping[str, str]] = ..., node_state_version: _Optional[int] = ..., status: _Optional[_Union[NodeStatus, str]] = ..., idle_duration_ms: _Optional[int] = ..., node_ip_address: _Optional[str] = ..., instance_type_name: _Optional[str] = ..., node_activity: _Optional[_Iterable[str]] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GetClusterResourceStateRequest(_message.Message):
    __slots__ = ("last_seen_cluster_resource_state_version",)
    LAST_SEEN_CLUSTER_RESOURCE_STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    last_seen_cluster_resource_state_version: int
    def __init__(self, last_seen_cluster_resource_state_version: _Optional[int] = ...) -> None: ...

class ClusterResourceState(_message.Message):
    __slots__ = ("cluster_resource_state_version", "last_seen_autoscaler_state_version", "node_states", "pending_resource_requests", "pending_gang_resource_requests", "cluster_resource_constraints", "cluster_session_name")
    CLUSTER_RESOURCE_STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_AUTOSCALER_STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_STATES_FIELD_NUMBER: _ClassVar[int]
    PENDING_RESOURCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    PENDING_GANG_RESOURCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_RESOURCE_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_SESSION_NAME_FIELD_NUMBER: _ClassVar[int]
    cluster_resource_state_version: int
    last_seen_autoscaler_state_version: int
    node_states: _containers.RepeatedCompositeFieldContainer[NodeState]
    pending_resource_requests: _containers.RepeatedCompositeFieldContainer[ResourceRequestByCount]
    pending_gang_resource_requests: _containers.RepeatedCompositeFieldContainer[GangResourceRequest]
    cluster_resource_constraints: _containers.RepeatedCompositeFieldContainer[ClusterResourceConstraint]
    cluster_session_name: str
    def __init__(self, cluster_resource_state_version: _Optional[int] = ..., last_seen_autoscaler_state_version: _Optional[int] = ..., node_states: _Optional[_Iterable[_Union[NodeState, _Mapping]]] = ..., pending_resource_requests: _Optional[_Iterable[_Union[ResourceRequestByCount, _Mapping]]] = ..., pending_gang_resource_requests: _Optional[_Iterable[_Union[GangResourceRequest, _Mapping]]] = ..., cluster_resource_constraints: _Optional[_Iterable[_Union[ClusterResourceConstraint, _Mapping]]] = ..., cluster_session_name: _Optional[str] = ...) -> None: ...

class GetClusterResourceStateReply(_message.Message):
    __slots__ = ("cluster_resource_state",)
    CLUSTER_RESOURCE_STATE_FIELD_NUMBER: _ClassVar[int]
    cluster_resource_state: ClusterResourceState
    def __init__(self, cluster_resource_state: _Optional[_Union[ClusterResourceState, _Mapping]] = ...) -> None: ...

class PendingInstanceRequest(_message.Message):
    __slots__ = ("instance_type_name", "ray_node_type_name", "count", "request_ts")
    INSTANCE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    RAY_NODE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_TS_FIELD_NUMBER: _ClassVar[int]
    instance_type_name: str
    ray_node_type_name: str
    count: int
    request_ts: int
    def __init__(self, instance_type_name: _Optional[str] = ..., ray_node_type_name: _Optional[str] = ..., count: _Optional[int] = ..., request_ts: _Optional[int] = ...) -> None: ...

class FailedInstanceRequest(_message.Message):
    __slots__ = ("instance_type_name", "ray_node_type_name", "count", "reason", "start_ts", "failed_ts")
    INSTANCE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    RAY_NODE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    START_TS_FIELD_NUMBER: _ClassVar[int]
    FAILED_TS_FIELD_NUMBER: _ClassVar[int]
    instance_type_name: str
    ray_node_type_name: str
    count: int
    reason: str
    start_ts: int
    failed_ts: int
    def __init__(self, instance_type_name: _Optional[str] = ..., ray_node_type_name: _Optional[str] = ..., count: _Optional[int] = ..., reason: _Optional[str] = ..., start_ts: _Optional[int] = ..., failed_ts: _Optional[int] = ...) -> None: ...

class PendingInstance(_message.Message):
    __slots__ = ("instance_type_name", "ray_node_type_name", "instance_id", "ip_address", "details")
    INSTANCE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    RAY_NODE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    IP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    instance_type_name: str
    ray_node_type_name: str
    instance_id: str
    ip_address: str
    details: str
    def __init__(self, instance_type_name: _Optional[str] = ..., ray_node_type_name: _Optional[str] = ..., instance_id: _Optional[str] = ..., ip_address: _Optional[str] = ..., details: _Optional[str] = ...) -> None: ...

class AutoscalingState(_message.Message):
    __slots__ = ("last_seen_cluster_resource_state_version", "autoscaler_state_version", "pending_instance_requests", "infeasible_resource_requests", "infeasible_gang_resource_requests", "infeasible_cluster_resource_constraints", "pending_instances", "failed_instance_requests")
    LAST_SEEN_CLUSTER_RESOURCE_STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    AUTOSCALER_STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    PENDING_INSTANCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    INFEASIBLE_RESOURCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    INFEASIBLE_GANG_RESOURCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    INFEASIBLE_CLUSTER_RESOURCE_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    PENDING_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    FAILED_INSTANCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    last_seen_cluster_resource_state_version: int
    autoscaler_state_version: int
    pending_instance_requests: _containers.RepeatedCompositeFieldContainer[PendingInstanceRequest]
    infeasible_resource_requests: _containers.RepeatedCompositeFieldContainer[ResourceRequest]
    infeasible_gang_resource_requests: _containers.RepeatedCompositeFieldContainer[GangResourceRequest]
    infeasible_cluster_resource_constraints: _containers.RepeatedCompositeFieldContainer[ClusterResourceConstraint]
    pending_instances: _containers.RepeatedCompositeFieldContainer[PendingInstance]
    failed_instance_requests: _containers.RepeatedCompositeFieldContainer[FailedInstanceRequest]
    def __init__(self, last_seen_cluster_resource_state_version: _Optional[int] = ..., autoscaler_state_version: _Optional[int] = ..., pending_instance_requests: _Optional[_Iterable[_Union[PendingInstanceRequest, _Mapping]]] = ..., infeasible_resource_requests: _Optional[_Iterable[_Union[ResourceRequest, _Mapping]]] = ..., infeasible_gang_resource_requests: _Optional[_Iterable[_Union[GangResourceRequest, _Mapping]]] = ..., infeasible_cluster_resource_constraints: _Optional[_Iterable[_Union[ClusterResourceConstraint, _Mapping]]] = ..., pending_instances: _Optional[_Iterable[_Union[PendingInstance, _Mapping]]] = ..., failed_instance_requests: _Optional[_Iterable[_Union[FailedInstanceRequest, _Mapping]]] = ...) -> None: ...

class ReportAutoscalingStateRequest(_message.Message):
    __slots__ = ("autoscaling_state",)
    AUTOSCALING_STATE_FIELD_NUMBER: _ClassVar[int]
    autoscaling_state: AutoscalingState
    def __init__(self, autoscaling_state: _Optional[_Union[AutoscalingState, _Mapping]] = ...) -> None: ...

class ReportAutoscalingStateReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RequestClusterResourceConstraintRequest(_message.Message):
    __slots__ = ("cluster_resource_constraint",)
    CLUSTER_RESOURCE_CONSTRAINT_FIELD_NUMBER: _ClassVar[int]
    cluster_resource_constraint: ClusterResourceConstraint
    def __init__(self, cluster_resource_constraint: _Optional[_Union[ClusterResourceConstraint, _Mapping]] = ...) -> None: ...

class RequestClusterResourceConstraintReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterStatusReply(_message.Message):
    __slots__ = ("autoscaling_state", "cluster_resource_state")
    AUTOSCALING_STATE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_RESOURCE_STATE_FIELD_NUMBER: _ClassVar[int]
    autoscaling_state: AutoscalingState
    cluster_resource_state: ClusterResourceState
    def __init__(self, autoscaling_state: _Optional[_Union[AutoscalingState, _Mapping]] = ..., cluster_resource_state: _Optional[_Union[ClusterResourceState, _Mapping]] = ...) -> None: ...

class DrainNodeRequest(_message.Message):
    __slots__ = ("node_id", "reason", "reason_message", "deadline_timestamp_ms")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REASON_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    node_id: bytes
    reason: DrainNodeReason
    reason_message: str
    deadline_timestamp_ms: int
    def __init__(self, node_id: _Optional[bytes] = ..., reason: _Optional[_Union[DrainNodeReason, str]] = ..., reason_message: _Optional[str] = ..., deadline_timestamp_ms: _Optional[int] = ...) -> None: ...

class DrainNodeReply(_message.Message):
    __slots__ = ("is_accepted", "rejection_reason_message")
    IS_ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTION_REASON_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    is_accepted: bool
    rejection_reason_message: str
    def __init__(self, is_accepted: _Optional[bool] = ..., rejection_reason_message: _Optional[str] = ...) -> None: ...

class ResizeRayletResourceInstancesRequest(_message.Message):
    __slots__ = ("node_id", "resources")
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    node_id: bytes
    resources: _containers.ScalarMap[str, float]
    def __init__(self, node_id: _Optional[bytes] = ..., resources: _Optional[_Mapping[str, float]] = ...) -> None: ...

class ResizeRayletResourceInstancesReply(_message.Message):
    __slots__ = ("total_resources",)
    class TotalResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    TOTAL_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    total_resources: _containers.ScalarMap[str, float]
    def __init__(self, total_resources: _Optional[_Mapping[str, float]] = ...) -> None: ...

class NodeGroupConfig(_message.Message):
    __slots__ = ("resources", "min_count", "max_count", "name")
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_COUNT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.ScalarMap[str, int]
    min_count: int
    max_count: int
    name: str
    def __init__(self, resources: _Optional[_Mapping[str, int]] = ..., min_count: _Optional[int] = ..., max_count: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class ClusterConfig(_message.Message):
    __slots__ = ("min_resources", "max_resources", "node_group_configs")
    class MinResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class MaxResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    MIN_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    MAX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NODE_GROUP_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    min_resources: _containers.ScalarMap[str, int]
    max_resources: _containers.ScalarMap[str, int]
    node_group_configs: _containers.RepeatedCompositeFieldContainer[NodeGroupConfig]
    def __init__(self, min_resources: _Optional[_Mapping[str, int]] = ..., max_resources: _Optional[_Mapping[str, int]] = ..., node_group_configs: _Optional[_Iterable[_Union[NodeGroupConfig, _Mapping]]] = ...) -> None: ...

class ReportClusterConfigRequest(_message.Message):
    __slots__ = ("cluster_config",)
    CLUSTER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    cluster_config: ClusterConfig
    def __init__(self, cluster_config: _Optional[_Union[ClusterConfig, _Mapping]] = ...) -> None: ...

class ReportClusterConfigReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
