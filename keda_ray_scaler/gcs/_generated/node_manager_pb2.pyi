from keda_ray_scaler.gcs._generated import common_pb2 as _common_pb2
from keda_ray_scaler.gcs._generated import gcs_pb2 as _gcs_pb2
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as _autoscaler_pb2
from keda_ray_scaler.gcs._generated import runtime_environment_pb2 as _runtime_environment_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkerBacklogReport(_message.Message):
    __slots__ = ("lease_spec", "backlog_size")
    LEASE_SPEC_FIELD_NUMBER: _ClassVar[int]
    BACKLOG_SIZE_FIELD_NUMBER: _ClassVar[int]
    lease_spec: _common_pb2.LeaseSpec
    backlog_size: int
    def __init__(self, lease_spec: _Optional[_Union[_common_pb2.LeaseSpec, _Mapping]] = ..., backlog_size: _Optional[int] = ...) -> None: ...

class ReportWorkerBacklogRequest(_message.Message):
    __slots__ = ("worker_id", "backlog_reports")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    BACKLOG_REPORTS_FIELD_NUMBER: _ClassVar[int]
    worker_id: bytes
    backlog_reports: _containers.RepeatedCompositeFieldContainer[WorkerBacklogReport]
    def __init__(self, worker_id: _Optional[bytes] = ..., backlog_reports: _Optional[_Iterable[_Union[WorkerBacklogReport, _Mapping]]] = ...) -> None: ...

class ReportWorkerBacklogReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RequestWorkerLeaseRequest(_message.Message):
    __slots__ = ("lease_spec", "backlog_size", "grant_or_reject", "is_selected_based_on_locality")
    LEASE_SPEC_FIELD_NUMBER: _ClassVar[int]
    BACKLOG_SIZE_FIELD_NUMBER: _ClassVar[int]
    GRANT_OR_REJECT_FIELD_NUMBER: _ClassVar[int]
    IS_SELECTED_BASED_ON_LOCALITY_FIELD_NUMBER: _ClassVar[int]
    lease_spec: _common_pb2.LeaseSpec
    backlog_size: int
    grant_or_reject: bool
    is_selected_based_on_locality: bool
    def __init__(self, lease_spec: _Optional[_Union[_common_pb2.LeaseSpec, _Mapping]] = ..., backlog_size: _Optional[int] = ..., grant_or_reject: _Optional[bool] = ..., is_selected_based_on_locality: _Optional[bool] = ...) -> None: ...

class RequestWorkerLeaseReply(_message.Message):
    __slots__ = ("worker_address", "retry_at_raylet_address", "resource_mapping", "canceled", "worker_pid", "rejected", "resources_data", "failure_type", "scheduling_failure_message")
    class SchedulingFailureType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        NOT_FAILED: _ClassVar[RequestWorkerLeaseReply.SchedulingFailureType]
        SCHEDULING_FAILED: _ClassVar[RequestWorkerLeaseReply.SchedulingFailureType]
        SCHEDULING_CANCELLED_PLACEMENT_GROUP_REMOVED: _ClassVar[RequestWorkerLeaseReply.SchedulingFailureType]
        SCHEDULING_CANCELLED_RUNTIME_ENV_SETUP_FAILED: _ClassVar[RequestWorkerLeaseReply.SchedulingFailureType]
        SCHEDULING_CANCELLED_INTENDED: _ClassVar[RequestWorkerLeaseReply.SchedulingFailureType]
        SCHEDULING_CANCELLED_UNSCHEDULABLE: _ClassVar[RequestWorkerLeaseReply.SchedulingFailureType]
        SCHEDULING_CANCELLED_WORKER_STARTUP_FAILED: _ClassVar[RequestWorkerLeaseReply.SchedulingFailureType]
    NOT_FAILED: RequestWorkerLeaseReply.SchedulingFailureType
    SCHEDULING_FAILED: RequestWorkerLeaseReply.SchedulingFailureType
    SCHEDULING_CANCELLED_PLACEMENT_GROUP_REMOVED: RequestWorkerLeaseReply.SchedulingFailureType
    SCHEDULING_CANCELLED_RUNTIME_ENV_SETUP_FAILED: RequestWorkerLeaseReply.SchedulingFailureType
    SCHEDULING_CANCELLED_INTENDED: RequestWorkerLeaseReply.SchedulingFailureType
    SCHEDULING_CANCELLED_UNSCHEDULABLE: RequestWorkerLeaseReply.SchedulingFailureType
    SCHEDULING_CANCELLED_WORKER_STARTUP_FAILED: RequestWorkerLeaseReply.SchedulingFailureType
    WORKER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    RETRY_AT_RAYLET_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_MAPPING_FIELD_NUMBER: _ClassVar[int]
    CANCELED_FIELD_NUMBER: _ClassVar[int]
    WORKER_PID_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_DATA_FIELD_NUMBER: _ClassVar[int]
    FAILURE_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_FAILURE_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    worker_address: _common_pb2.Address
    retry_at_raylet_address: _common_pb2.Address
    resource_mapping: _containers.RepeatedCompositeFieldContainer[_common_pb2.ResourceMapEntry]
    canceled: bool
    worker_pid: int
    rejected: bool
    resources_data: _gcs_pb2.ResourcesData
    failure_type: RequestWorkerLeaseReply.SchedulingFailureType
    scheduling_failure_message: str
    def __init__(self, worker_address: _Optional[_Union[_common_pb2.Address, _Mapping]] = ..., retry_at_raylet_address: _Optional[_Union[_common_pb2.Address, _Mapping]] = ..., resource_mapping: _Optional[_Iterable[_Union[_common_pb2.ResourceMapEntry, _Mapping]]] = ..., canceled: _Optional[bool] = ..., worker_pid: _Optional[int] = ..., rejected: _Optional[bool] = ..., resources_data: _Optional[_Union[_gcs_pb2.ResourcesData, _Mapping]] = ..., failure_type: _Optional[_Union[RequestWorkerLeaseReply.SchedulingFailureType, str]] = ..., scheduling_failure_message: _Optional[str] = ...) -> None: ...

class PrestartWorkersRequest(_message.Message):
    __slots__ = ("language", "job_id", "runtime_env_info", "keep_alive_duration_secs", "num_workers")
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_ENV_INFO_FIELD_NUMBER: _ClassVar[int]
    KEEP_ALIVE_DURATION_SECS_FIELD_NUMBER: _ClassVar[int]
    NUM_WORKERS_FIELD_NUMBER: _ClassVar[int]
    language: _common_pb2.Language
    job_id: bytes
    runtime_env_info: _runtime_environment_pb2.RuntimeEnvInfo
    keep_alive_duration_secs: int
    num_workers: int
    def __init__(self, language: _Optional[_Union[_common_pb2.Language, str]] = ..., job_id: _Optional[bytes] = ..., runtime_env_info: _Optional[_Union[_runtime_environment_pb2.RuntimeEnvInfo, _Mapping]] = ..., keep_alive_duration_secs: _Optional[int] = ..., num_workers: _Optional[int] = ...) -> None: ...

class PrestartWorkersReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PrepareBundleResourcesRequest(_message.Message):
    __slots__ = ("bundle_specs",)
    BUNDLE_SPECS_FIELD_NUMBER: _ClassVar[int]
    bundle_specs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Bundle]
    def __init__(self, bundle_specs: _Optional[_Iterable[_Union[_common_pb2.Bundle, _Mapping]]] = ...) -> None: ...

class PrepareBundleResourcesReply(_message.Message):
    __slots__ = ("success",)
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    def __init__(self, success: _Optional[bool] = ...) -> None: ...

class CommitBundleResourcesRequest(_message.Message):
    __slots__ = ("bundle_specs",)
    BUNDLE_SPECS_FIELD_NUMBER: _ClassVar[int]
    bundle_specs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Bundle]
    def __init__(self, bundle_specs: _Optional[_Iterable[_Union[_common_pb2.Bundle, _Mapping]]] = ...) -> None: ...

class CommitBundleResourcesReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemovePlacementGroupBundlesRequest(_message.Message):
    __slots__ = ("placement_group_id", "bundle_specs")
    PLACEMENT_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_SPECS_FIELD_NUMBER: _ClassVar[int]
    placement_group_id: bytes
    bundle_specs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Bundle]
    def __init__(self, placement_group_id: _Optional[bytes] = ..., bundle_specs: _Optional[_Iterable[_Union[_common_pb2.Bundle, _Mapping]]] = ...) -> None: ...

class RemovePlacementGroupBundlesReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResizeLocalResourceInstancesRequest(_message.Message):
    __slots__ = ("resources",)
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.ScalarMap[str, float]
    def __init__(self, resources: _Optional[_Mapping[str, float]] = ...) -> None: ...

class ResizeLocalResourceInstancesReply(_message.Message):
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

class ReturnWorkerLeaseRequest(_message.Message):
    __slots__ = ("worker_port", "lease_id", "disconnect_worker", "worker_exiting", "disconnect_worker_error_detail")
    WORKER_PORT_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_WORKER_FIELD_NUMBER: _ClassVar[int]
    WORKER_EXITING_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_WORKER_ERROR_DETAIL_FIELD_NUMBER: _ClassVar[int]
    worker_port: int
    lease_id: bytes
    disconnect_worker: bool
    worker_exiting: bool
    disconnect_worker_error_detail: str
    def __init__(self, worker_port: _Optional[int] = ..., lease_id: _Optional[bytes] = ..., disconnect_worker: _Optional[bool] = ..., worker_exiting: _Optional[bool] = ..., disconnect_worker_error_detail: _Optional[str] = ...) -> None: ...

class ReturnWorkerLeaseReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReleaseUnusedActorWorkersRequest(_message.Message):
    __slots__ = ("worker_ids_in_use",)
    WORKER_IDS_IN_USE_FIELD_NUMBER: _ClassVar[int]
    worker_ids_in_use: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, worker_ids_in_use: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ReleaseUnusedActorWorkersReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ShutdownRayletRequest(_message.Message):
    __slots__ = ("graceful",)
    GRACEFUL_FIELD_NUMBER: _ClassVar[int]
    graceful: bool
    def __init__(self, graceful: _Optional[bool] = ...) -> None: ...

class ShutdownRayletReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelWorkerLeaseRequest(_message.Message):
    __slots__ = ("lease_id",)
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: bytes
    def __init__(self, lease_id: _Optional[bytes] = ...) -> None: ...

class CancelWorkerLeaseReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PinObjectIDsRequest(_message.Message):
    __slots__ = ("owner_address", "object_ids", "generator_id")
    OWNER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    OBJECT_IDS_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    owner_address: _common_pb2.Address
    object_ids: _containers.RepeatedScalarFieldContainer[bytes]
    generator_id: bytes
    def __init__(self, owner_address: _Optional[_Union[_common_pb2.Address, _Mapping]] = ..., object_ids: _Optional[_Iterable[bytes]] = ..., generator_id: _Optional[bytes] = ...) -> None: ...

class PinObjectIDsReply(_message.Message):
    __slots__ = ("successes",)
    SUCCESSES_FIELD_NUMBER: _ClassVar[int]
    successes: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, successes: _Optional[_Iterable[bool]] = ...) -> None: ...

class GetNodeStatsRequest(_message.Message):
    __slots__ = ("include_memory_info",)
    INCLUDE_MEMORY_INFO_FIELD_NUMBER: _ClassVar[int]
    include_memory_info: bool
    def __init__(self, include_memory_info: _Optional[bool] = ...) -> None: ...

class ObjectStoreStats(_message.Message):
    __slots__ = ("spill_time_total_s", "spilled_bytes_total", "spilled_objects_total", "restore_time_total_s", "restored_bytes_total", "restored_objects_total", "object_store_bytes_used", "object_store_bytes_avail", "object_store_bytes_primary_copy", "object_store_bytes_fallback", "num_local_objects", "object_pulls_queued", "num_object_store_primary_copies", "cumulative_created_objects", "cumulative_created_bytes")
    SPILL_TIME_TOTAL_S_FIELD_NUMBER: _ClassVar[int]
    SPILLED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    SPILLED_OBJECTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    RESTORE_TIME_TOTAL_S_FIELD_NUMBER: _ClassVar[int]
    RESTORED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    RESTORED_OBJECTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    OBJECT_STORE_BYTES_USED_FIELD_NUMBER: _ClassVar[int]
    OBJECT_STORE_BYTES_AVAIL_FIELD_NUMBER: _ClassVar[int]
    OBJECT_STORE_BYTES_PRIMARY_COPY_FIELD_NUMBER: _ClassVar[int]
    OBJECT_STORE_BYTES_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    NUM_LOCAL_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    OBJECT_PULLS_QUEUED_FIELD_NUMBER: _ClassVar[int]
    NUM_OBJECT_STORE_PRIMARY_COPIES_FIELD_NUMBER: _ClassVar[int]
    CUMULATIVE_CREATED_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    CUMULATIVE_CREATED_BYTES_FIELD_NUMBER: _ClassVar[int]
    spill_time_total_s: float
    spilled_bytes_total: int
    spilled_objects_total: int
    restore_time_total_s: float
    restored_bytes_total: int
    restored_objects_total: int
    object_store_bytes_used: int
    object_store_bytes_avail: int
    object_store_bytes_primary_copy: int
    object_store_bytes_fallback: int
    num_local_objects: int
    object_pulls_queued: bool
    num_object_store_primary_copies: int
    cumulative_created_objects: int
    cumulative_created_bytes: int
    def __init__(self, spill_time_total_s: _Optional[float] = ..., spilled_bytes_total: _Optional[int] = ..., spilled_objects_total: _Optional[int] = ..., restore_time_total_s: _Optional[float] = ..., restored_bytes_total: _Optional[int] = ..., restored_objects_total: _Optional[int] = ..., object_store_bytes_used: _Optional[int] = ..., object_store_bytes_avail: _Optional[int] = ..., object_store_bytes_primary_copy: _Optional[int] = ..., object_store_bytes_fallback: _Optional[int] = ..., num_local_objects: _Optional[int] = ..., object_pulls_queued: _Optional[bool] = ..., num_object_store_primary_copies: _Optional[int] = ..., cumulative_created_objects: _Optional[int] = ..., cumulative_created_bytes: _Optional[int] = ...) -> None: ...

class GetNodeStatsReply(_message.Message):
    __slots__ = ("core_workers_stats", "num_workers", "store_stats")
    CORE_WORKERS_STATS_FIELD_NUMBER: _ClassVar[int]
    NUM_WORKERS_FIELD_NUMBER: _ClassVar[int]
    STORE_STATS_FIELD_NUMBER: _ClassVar[int]
    core_workers_stats: _containers.RepeatedCompositeFieldContainer[_common_pb2.CoreWorkerStats]
    num_workers: int
    store_stats: ObjectStoreStats
    def __init__(self, core_workers_stats: _Optional[_Iterable[_Union[_common_pb2.CoreWorkerStats, _Mapping]]] = ..., num_workers: _Optional[int] = ..., store_stats: _Optional[_Union[ObjectStoreStats, _Mapping]] = ...) -> None: ...

class GlobalGCRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GlobalGCReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FormatGlobalMemoryInfoRequest(_message.Message):
    __slots__ = ("include_memory_info",)
    INCLUDE_MEMORY_INFO_FIELD_NUMBER: _ClassVar[int]
    include_memory_info: bool
    def __init__(self, include_memory_info: _Optional[bool] = ...) -> None: ...

class FormatGlobalMemoryInfoReply(_message.Message):
    __slots__ = ("memory_summary", "store_stats")
    MEMORY_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    STORE_STATS_FIELD_NUMBER: _ClassVar[int]
    memory_summary: str
    store_stats: ObjectStoreStats
    def __init__(self, memory_summary: _Optional[str] = ..., store_stats: _Optional[_Union[ObjectStoreStats, _Mapping]] = ...) -> None: ...

class ReleaseUnusedBundlesRequest(_message.Message):
    __slots__ = ("bundles_in_use",)
    BUNDLES_IN_USE_FIELD_NUMBER: _ClassVar[int]
    bundles_in_use: _containers.RepeatedCompositeFieldContainer[_common_pb2.Bundle]
    def __init__(self, bundles_in_use: _Optional[_Iterable[_Union[_common_pb2.Bundle, _Mapping]]] = ...) -> None: ...

class ReleaseUnusedBundlesReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSystemConfigRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSystemConfigReply(_message.Message):
    __slots__ = ("system_config",)
    SYSTEM_CONFIG_FIELD_NUMBER: _ClassVar[int]
    system_config: str
    def __init__(self, system_config: _Optional[str] = ...) -> None: ...

class GetObjectsInfoRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class GetObjectsInfoReply(_message.Message):
    __slots__ = ("core_workers_stats", "total")
    CORE_WORKERS_STATS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    core_workers_stats: _containers.RepeatedCompositeFieldContainer[_common_pb2.CoreWorkerStats]
    total: int
    def __init__(self, core_workers_stats: _Optional[_Iterable[_Union[_common_pb2.CoreWorkerStats, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class GetResourceLoadRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetResourceLoadReply(_message.Message):
    __slots__ = ("resources",)
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _gcs_pb2.ResourcesData
    def __init__(self, resources: _Optional[_Union[_gcs_pb2.ResourcesData, _Mapping]] = ...) -> None: ...

class CancelLeasesWithResourceShapesRequest(_message.Message):
    __slots__ = ("resource_shapes",)
    class ResourceShape(_message.Message):
        __slots__ = ("resource_shape",)
        class ResourceShapeEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: float
            def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
        RESOURCE_SHAPE_FIELD_NUMBER: _ClassVar[int]
        resource_shape: _containers.ScalarMap[str, float]
        def __init__(self, resource_shape: _Optional[_Mapping[str, float]] = ...) -> None: ...
    RESOURCE_SHAPES_FIELD_NUMBER: _ClassVar[int]
    resource_shapes: _containers.RepeatedCompositeFieldContainer[CancelLeasesWithResourceShapesRequest.ResourceShape]
    def __init__(self, resource_shapes: _Optional[_Iterable[_Union[CancelLeasesWithResourceShapesRequest.ResourceShape, _Mapping]]] = ...) -> None: ...

class CancelLeasesWithResourceShapesReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NotifyGCSRestartRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NotifyGCSRestartReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetWorkerFailureCauseRequest(_message.Message):
    __slots__ = ("lease_id",)
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: bytes
    def __init__(self, lease_id: _Optional[bytes] = ...) -> None: ...

class GetWorkerFailureCauseReply(_message.Message):
    __slots__ = ("failure_cause", "fail_task_immediately")
    FAILURE_CAUSE_FIELD_NUMBER: _ClassVar[int]
    FAIL_TASK_IMMEDIATELY_FIELD_NUMBER: _ClassVar[int]
    failure_cause: _common_pb2.RayErrorInfo
    fail_task_immediately: bool
    def __init__(self, failure_cause: _Optional[_Union[_common_pb2.RayErrorInfo, _Mapping]] = ..., fail_task_immediately: _Optional[bool] = ...) -> None: ...

class DrainRayletRequest(_message.Message):
    __slots__ = ("reason", "reason_message", "deadline_timestamp_ms")
    REASON_FIELD_NUMBER: _ClassVar[int]
    REASON_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    reason: _autoscaler_pb2.DrainNodeReason
    reason_message: str
    deadline_timestamp_ms: int
    def __init__(self, reason: _Optional[_Union[_autoscaler_pb2.DrainNodeReason, str]] = ..., reason_message: _Optional[str] = ..., deadline_timestamp_ms: _Optional[int] = ...) -> None: ...

class DrainRayletReply(_message.Message):
    __slots__ = ("is_accepted", "rejection_reason_message")
    IS_ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTION_REASON_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    is_accepted: bool
    rejection_reason_message: str
    def __init__(self, is_accepted: _Optional[bool] = ..., rejection_reason_message: _Optional[str] = ...) -> None: ...

class RegisterMutableObjectRequest(_message.Message):
    __slots__ = ("writer_object_id", "num_readers", "reader_object_id")
    WRITER_OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_READERS_FIELD_NUMBER: _ClassVar[int]
    READER_OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    writer_object_id: bytes
    num_readers: int
    reader_object_id: bytes
    def __init__(self, writer_object_id: _Optional[bytes] = ..., num_readers: _Optional[int] = ..., reader_object_id: _Optional[bytes] = ...) -> None: ...

class RegisterMutableObjectReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PushMutableObjectRequest(_message.Message):
    __slots__ = ("writer_object_id", "total_data_size", "total_metadata_size", "offset", "chunk_size", "data", "metadata")
    WRITER_OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DATA_SIZE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_METADATA_SIZE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    writer_object_id: bytes
    total_data_size: int
    total_metadata_size: int
    offset: int
    chunk_size: int
    data: bytes
    metadata: bytes
    def __init__(self, writer_object_id: _Optional[bytes] = ..., total_data_size: _Optional[int] = ..., total_metadata_size: _Optional[int] = ..., offset: _Optional[int] = ..., chunk_size: _Optional[int] = ..., data: _Optional[bytes] = ..., metadata: _Optional[bytes] = ...) -> None: ...

class PushMutableObjectReply(_message.Message):
    __slots__ = ("done",)
    DONE_FIELD_NUMBER: _ClassVar[int]
    done: bool
    def __init__(self, done: _Optional[bool] = ...) -> None: ...

class IsLocalWorkerDeadRequest(_message.Message):
    __slots__ = ("worker_id",)
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    worker_id: bytes
    def __init__(self, worker_id: _Optional[bytes] = ...) -> None: ...

class IsLocalWorkerDeadReply(_message.Message):
    __slots__ = ("is_dead",)
    IS_DEAD_FIELD_NUMBER: _ClassVar[int]
    is_dead: bool
    def __init__(self, is_dead: _Optional[bool] = ...) -> None: ...

class GetWorkerPIDsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetWorkerPIDsReply(_message.Message):
    __slots__ = ("pids",)
    PIDS_FIELD_NUMBER: _ClassVar[int]
    pids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, pids: _Optional[_Iterable[int]] = ...) -> None: ...

class GetAgentPIDsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetAgentPIDsReply(_message.Message):
    __slots__ = ("dashboard_agent_pid", "runtime_env_agent_pid")
    DASHBOARD_AGENT_PID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_ENV_AGENT_PID_FIELD_NUMBER: _ClassVar[int]
    dashboard_agent_pid: int
    runtime_env_agent_pid: int
    def __init__(self, dashboard_agent_pid: _Optional[int] = ..., runtime_env_agent_pid: _Optional[int] = ...) -> None: ...

class KillLocalActorRequest(_message.Message):
    __slots__ = ("intended_actor_id", "worker_id", "force_kill", "death_cause")
    INTENDED_ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    FORCE_KILL_FIELD_NUMBER: _ClassVar[int]
    DEATH_CAUSE_FIELD_NUMBER: _ClassVar[int]
    intended_actor_id: bytes
    worker_id: bytes
    force_kill: bool
    death_cause: _common_pb2.ActorDeathCause
    def __init__(self, intended_actor_id: _Optional[bytes] = ..., worker_id: _Optional[bytes] = ..., force_kill: _Optional[bool] = ..., death_cause: _Optional[_Union[_common_pb2.ActorDeathCause, _Mapping]] = ...) -> None: ...

class KillLocalActorReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelLocalTaskRequest(_message.Message):
    __slots__ = ("intended_task_id", "force_kill", "recursive", "caller_worker_id", "executor_worker_id")
    INTENDED_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FORCE_KILL_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    CALLER_WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    intended_task_id: bytes
    force_kill: bool
    recursive: bool
    caller_worker_id: bytes
    executor_worker_id: bytes
    def __init__(self, intended_task_id: _Optional[bytes] = ..., force_kill: _Optional[bool] = ..., recursive: _Optional[bool] = ..., caller_worker_id: _Optional[bytes] = ..., executor_worker_id: _Optional[bytes] = ...) -> None: ...

class CancelLocalTaskReply(_message.Message):
    __slots__ = ("requested_task_running", "attempt_succeeded")
    REQUESTED_TASK_RUNNING_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    requested_task_running: bool
    attempt_succeeded: bool
    def __init__(self, requested_task_running: _Optional[bool] = ..., attempt_succeeded: _Optional[bool] = ...) -> None: ...

class FreeLocalObjectsRequest(_message.Message):
    __slots__ = ("object_ids",)
    OBJECT_IDS_FIELD_NUMBER: _ClassVar[int]
    object_ids: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, object_ids: _Optional[_Iterable[bytes]] = ...) -> None: ...

class FreeLocalObjectsReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
