"""The one exception hierarchy; library errors are wrapped (``raise ... from``) at the edges."""

from __future__ import annotations

import enum


class ScalerError(Exception):
    """Base of every error this project raises on purpose."""


class ConfigProblem(enum.Enum):
    """What is wrong with a piece of configuration: a fixed set (the scaler's metric label).

    The offending key's *name* is in the message, never in a label: metadata comes from any
    namespace that can create a ScaledObject, and a label taking its text would let it create
    series at will.
    """

    #: a key that is not allowed (trigger metadata)
    UNKNOWN_KEY = "unknown_key"
    #: a required value is absent (``rayCluster``, ``workerGroup``, the ScaledObject's namespace)
    MISSING = "missing"
    #: a name that is not an RFC 1123 label
    BAD_NAME = "bad_name"
    #: a number that does not parse or is out of its range
    BAD_NUMBER = "bad_number"
    #: anything else (flags, files)
    INVALID = "invalid"


class ConfigError(ScalerError):
    """Bad input: a file, flag or metadata key. The message names where and what.

    ``problem_kind`` classifies it (a fixed set, for metrics); ``field`` names the key.
    """

    def __init__(
        self,
        where: str,
        field: str,
        problem: str,
        problem_kind: ConfigProblem = ConfigProblem.INVALID,
    ) -> None:
        self.where = where
        self.field = field
        self.problem = problem
        self.problem_kind = problem_kind
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


class BindError(ScalerError):
    """A listening port could not be bound; ``setting`` names the settings field (``port``)."""

    def __init__(self, setting: str, address: str, problem: str) -> None:
        self.setting = setting
        self.address = address
        self.problem = problem
        super().__init__(f"cannot listen on {address}: {problem}")


class NotFound(ScalerError):
    """A Ray cluster or worker group the scaler does not know."""


class DemandUnavailable(ScalerError):
    """Demand or node data is missing, failed, empty or stale: never read as zero."""


class Refusal(enum.Enum):
    """Why the scaler refused to answer from a cluster's data: a fixed set (a metric label)."""

    #: a ScaledObject asked for a Ray cluster in another namespace without a grant
    CROSS_NAMESPACE = "cross_namespace"
    #: more than one scrape target exports the same (namespace, cluster)
    TWO_ORIGINS = "two_origins"
    #: the agent's snapshot time is ahead of the scaler's clock by more than the allowed skew
    FUTURE_SNAPSHOT = "future_snapshot"
    #: a client certificate from the CA that does not name the caller served (``--client-identity``)
    CLIENT_IDENTITY = "client_identity"
    #: the cluster's series do not match the agent's snapshot digest (a series added, missing or
    #: altered: written by something other than the agent, e.g. through a job honouring labels)
    DIGEST_MISMATCH = "digest_mismatch"
    #: the cluster's series carry no snapshot digest (an agent older than the digest), refused
    #: unless ``--accept-agents-without-digest``
    NO_DIGEST = "no_digest"


class Limit(enum.Enum):
    """A bound on what others can make the scaler spend: a fixed set (a metric label)."""

    #: the scaler already refreshes ``--max-clusters`` Ray clusters
    MAX_CLUSTERS = "max_clusters"
    #: the Ray clusters' namespace already has ``--max-clusters-per-namespace`` refreshed
    NAMESPACE_QUOTA = "namespace_quota"
    #: a ``grpc.health.v1.Health/Watch`` beyond the streams allowed (or on the probe port)
    HEALTH_WATCH = "health_watch"
    #: an ExternalScaler stream beyond ``--max-streams-per-peer`` open from one client address
    STREAMS_PER_PEER = "streams_per_peer"
    #: an ExternalScaler stream beyond ``--max-streams-per-connection`` open on one connection
    STREAMS_PER_CONNECTION = "streams_per_connection"


class LimitReached(DemandUnavailable):
    """A call refused because a bound is reached (gRPC UNAVAILABLE): KEDA holds the replicas."""

    def __init__(self, limit: Limit, message: str) -> None:
        self.limit = limit
        super().__init__(message)


class AccessDenied(ScalerError):
    """A ScaledObject may not read this Ray cluster (gRPC PERMISSION_DENIED)."""

    def __init__(self, reason: Refusal, message: str) -> None:
        self.reason = reason
        super().__init__(message)


class UntrustedData(DemandUnavailable):
    """Data that is there but cannot be trusted as the cluster's own: unknown, never zero."""

    def __init__(self, reason: Refusal, message: str) -> None:
        self.reason = reason
        super().__init__(message)


class KubernetesError(ScalerError):
    """A Kubernetes API call failed after retries."""


class RayError(ScalerError):
    """A Ray GCS call failed."""


class PreconditionFailed(KubernetesError):
    """The RayCluster changed since it was read (or the group moved): read and decide again."""


class SchemaError(ScalerError, ValueError):
    """Series that do not decode into a snapshot (missing, malformed or absurd values).

    Also a ValueError: the sources class every ValueError of an answer as ``bad_data``.
    """


class ShapeError(ScalerError, ValueError):
    """A shape label or resource name that does not decode.

    Not a SchemaError: the decoder adds the cluster it was reading before it says so.
    """


class HttpStatusError(ScalerError):
    """A non-2xx answer; ``status`` is the HTTP code. Classified (retried or not) by the
    source's transport, which wraps it in a :class:`FetchError`; never leaves a source."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        super().__init__(f"HTTP {status}: {detail[:200]}")


class FetchError(DemandUnavailable):
    """A fetch that failed for good; ``kind`` is one of the sources' ``ERROR_KINDS``."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(f"{kind}: {message}")


class DeadlineExceeded(ScalerError, TimeoutError):
    """The fetch's deadline is spent: no further attempt. Also a TimeoutError (it is one);
    never leaves a source (wrapped in a :class:`FetchError` of kind ``timeout``)."""


class Cap(enum.Enum):
    """Which bound a cluster's series exceeded: a fixed set (a metric label)."""

    SERIES = "series"
    WORKER_GROUPS = "worker_groups"
    SHAPES = "shapes"
    PLACEMENT_GROUPS = "placement_groups"
    BUNDLES = "bundles_per_placement_group"
    RESOURCE_NAMES = "resource_names"
    NAME_CHARS = "name_chars"
    #: a ``selector`` or ``labels`` label longer than the contract lets an agent write
    LABEL_CHARS = "label_chars"


class CapExceeded(ScalerError, ValueError):
    """A cluster's series exceed one of the sources' ``DataCaps``; ``cap`` says which. The
    source refuses the cluster (a :class:`FetchError`, ``over_cap``): never truncated."""

    def __init__(self, cap: Cap, cluster: str, message: str) -> None:
        self.cap = cap
        self.cluster = cluster
        super().__init__(f"Ray cluster {cluster!r}: {message}: refused")


class Malformed(enum.Enum):
    """What is wrong with a refused ScaledObject's field: a fixed set (a metric label; the
    field is named in the message, never in a label, as for :class:`ConfigProblem`)."""

    NOT_AN_OBJECT = "not_an_object"
    NOT_A_LIST = "not_a_list"
    NOT_A_STRING = "not_a_string"
    NOT_AN_INTEGER = "not_an_integer"
    NOT_A_NUMBER = "not_a_number"
    NEGATIVE = "negative"


class ScaledObjectRefused(ScalerError, ValueError):
    """A ScaledObject the agent refuses to read (KubeRay mode): ``name`` (at ``resourceVersion``
    ``version``), the ``field`` that does not parse and the ``reason``; ``target`` is the
    RayWorkerGroup it names when its ``scaleTargetRef`` parsed ("" otherwise). Also a
    ValueError (it is one)."""

    def __init__(
        self,
        name: str,
        field: str,
        reason: Malformed,
        *,
        got: object = None,
        version: str = "",
        target: str = "",
    ) -> None:
        self.name = name
        self.field = field
        self.reason = reason
        self.version = version
        self.target = target
        shown = repr(got) if len(repr(got)) <= 40 else repr(got)[:37] + "..."
        what = reason.value.replace("_", " ")
        super().__init__(f"ScaledObject {name or '<unnamed>'}: {field}: {what} (got {shown})")
