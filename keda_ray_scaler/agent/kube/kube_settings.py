"""How the agent reaches the Kubernetes API for its pods: the settings and the client.

The pod cache (:mod:`~keda_ray_scaler.agent.kube.pod_cache`) and the pod calls
(:mod:`~keda_ray_scaler.agent.kube.pod_api`) share :class:`KubeSettings`; :func:`load_api` builds
the ``CoreV1Api`` both use, named by :data:`USER_AGENT` in the API server's audit log. KubeRay's
pod labels are here, once: :data:`GROUP_LABEL` and :func:`worker_selector`.

The ``kubernetes`` client is imported by :func:`load_api` alone, so the agent's flags read their
defaults here without it (:mod:`keda_ray_scaler.cli.agent_flags`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from keda_ray_scaler.agent.kube.pod_owner import DEPLOYMENT_OWNER, WorkerOwner

if TYPE_CHECKING:
    from kubernetes import client as k8s

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


def load_api(kubeconfig: str | None = None, context: str | None = None) -> k8s.CoreV1Api:
    """A CoreV1Api from in-cluster config (``kubeconfig`` None) or a kubeconfig file.

    Called by the CLI only: the choice is the caller's.
    """
    from kubernetes import client as k8s
    from kubernetes import config

    configuration = k8s.Configuration()
    if kubeconfig is None:
        # kubernetes.config ships no annotations.
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]  # no annotations
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
    api_client = k8s.ApiClient(configuration)
    api_client.user_agent = USER_AGENT
    return k8s.CoreV1Api(api_client)
