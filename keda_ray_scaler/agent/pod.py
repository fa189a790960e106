"""A worker pod as the agent knows it: :class:`PodInfo`, the one pod value every room reads
(built from the API by ``kube.pod_info``, by the demo from its in-memory pods); pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from keda_ray_scaler.model import INT32_MAX, INT32_MIN

#: The annotation the ReplicaSet controller reads.
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


@dataclass(frozen=True, slots=True)
class PodInfo:
    """What the ranking and the victim protocol need from one pod (times in unix seconds)."""

    name: str
    uid: str = ""
    group: str = ""
    node_name: str = ""  # spec.nodeName; empty while unscheduled
    phase: str = "Running"
    ready: bool = True
    ready_since_s: float | None = None  # Ready condition's lastTransitionTime when ready
    restarts: int = 0  # max restartCount over containers
    sidecar_restarts: int = 0  # max restartCount over restartable init containers
    created_s: float | None = None
    deleting: bool = False  # metadata.deletionTimestamp is set
    owner: str = ""  # the controlling owner, "ReplicaSet/<name>"
    pod_ips: tuple[str, ...] = ()  # status.podIPs (podIP without it): the Ray nodes' IP rule
    resource_version: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False  # PodScheduled=False, reason Unschedulable
    container_failure: str = ""  # why a container fails to start (kube.container_failure)
    #: a worker of a RayService's cluster (KubeRay's label ``ray.io/serve: "true"``) whose
    #: readiness follows its Serve proxy (a readiness probe: KubeRay's checks ``/-/healthz``):
    #: while Ready, an endpoint of the serve Service
    serve_endpoint: bool = False

    @property
    def active(self) -> bool:
        """``controller.IsPodActive``: not Succeeded, not Failed, not being deleted."""
        return self.phase not in ("Succeeded", "Failed") and not self.deleting

    @property
    def deletion_cost(self) -> int:
        """The cost the controller reads (``GetDeletionCostFromPodAnnotations``)."""
        return parse_deletion_cost(self.annotations.get(DELETION_COST))


def parse_deletion_cost(value: str | None) -> int:
    """Kubernetes' parsing: an int32 without ``+`` or leading zeros; anything else counts as 0."""
    if value is None or not value:
        return 0
    first = value[0]
    if not (first == "-" or value == "0" or "1" <= first <= "9"):
        return 0
    body = value[1:] if first == "-" else value
    if not body.isdigit() or not body.isascii():
        return 0
    number = int(value)
    return number if INT32_MIN <= number <= INT32_MAX else 0
