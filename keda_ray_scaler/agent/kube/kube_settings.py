"""How the agent reaches the Kubernetes API for its pods: the settings and the client.

The pod cache (:mod:`~keda_ray_scaler.agent.kube.pod_cache`) and the pod calls
(:mod:`~keda_ray_scaler.agent.kube.pod_api`) share :class:`KubeSettings`; the ``CoreV1Api`` both
use (``keda_ray_scaler.cli.kube_client``) is named by :data:`USER_AGENT` in the API server's
audit log. KubeRay's
pod labels are here, once: :data:`GROUP_LABEL` and :func:`worker_selector`.

The ``kubernetes`` client is not imported here at run time, so the agent's flags read their
defaults here without it (:mod:`keda_ray_scaler.cli.agent_flags`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from keda_ray_scaler.agent.kube.pod_owner import DEPLOYMENT_OWNER, WorkerOwner

#: User-Agent of the agent's API calls (shows in audit logs).
USER_AGENT = "keda-ray-scaler"
#: The pod label naming a worker pod's group, as KubeRay labels it.
GROUP_LABEL: Final = "ray.io/group"


def worker_selector(cluster: str, group: str | None = None) -> str:
    """The label selector of ``cluster``'s worker pods (of ``group``'s only, if given), as
    KubeRay labels them."""
    of_group = "" if group is None else f"{GROUP_LABEL}={group},"
    return f"ray.io/cluster={cluster},{of_group}ray.io/node-type=worker"


@dataclass(frozen=True, slots=True)
class KubeSettings:
    """How the agent talks to the Kubernetes API.

    - ``namespace``: where the Ray cluster's worker pods live (the Role is namespaced).
    - ``label_selector``: selects the worker pods of ONE Ray cluster
      (KubeRay's: :func:`worker_selector`).
    - ``group_label``: the pod label naming its worker group (KubeRay's: :data:`GROUP_LABEL`).
    - ``owner``: what must control a pod the selector matches for it to be a worker
      (:mod:`~keda_ray_scaler.agent.kube.pod_owner`): a Deployment's ReplicaSet by default,
      the RayCluster in KubeRay mode; the others are left out, counted and logged.
    - ``retry_attempts``: attempts per API call (1 = no retry); bounded so a broken API server
      stalls one protocol step, not the agent.
    - ``retry_initial_s`` / ``retry_max_s``: exponential backoff with jitter between attempts.
    - ``watch_timeout_s``: server-side watch timeout; the watch is re-opened from the last
      resourceVersion when it ends (Kubernetes caps watches anyway).
    - ``request_timeout_s``: client read timeout for non-watch calls.
    """

    namespace: str
    label_selector: str
    cluster: str = ""
    group_label: str = GROUP_LABEL
    owner: WorkerOwner = DEPLOYMENT_OWNER
    retry_attempts: int = 5
    retry_initial_s: float = 0.5
    retry_max_s: float = 10.0
    watch_timeout_s: int = 300
    request_timeout_s: float = 30.0
