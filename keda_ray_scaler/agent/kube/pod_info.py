"""A worker pod as the agent reads it: :class:`~keda_ray_scaler.agent.pod.PodInfo` from the JSON
the API server serves (pure: no client, no clock)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from keda_ray_scaler.agent.pod import PodInfo

#: Container waiting reasons that need a change of the pod, its image or its config to clear
#: (the kubelet's ``images`` and ``kuberuntime`` errors). A first ``ErrImagePull`` is not one
#: (a registry hiccup); ``ImagePullBackOff`` is (pulls failed again). ContainerCreating and
#: PodInitializing are normal starts.
FAILING_WAITING = frozenset(
    {
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerError",
        "CreateContainerConfigError",
        "RunContainerError",
        "PreStartHookError",
        "PostStartHookError",
    }
)

#: A container that ended with an error this many times is crash-looping. One failed start is
#: no proof: a worker's ``ray start`` can fail once under load and join after the kubelet's
#: restart (seen on the real node under two busy loops, KubeRay mode: counting the first exit
#: removed healthy pods and backed their group off). With the kubelet's default back-off
#: (10, 20, 40 s) the third restart comes about 70 s after the first exit.
CRASH_LOOP_RESTARTS = 3


def _parse_time(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def pod_info(raw: Mapping[str, Any], group_label: str) -> PodInfo:
    """A :class:`PodInfo` from a pod as the API serves it (a JSON dict)."""
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    ready_since: float | None = None
    ready = False
    unschedulable = False
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            ready = True
            ready_since = _parse_time(cond.get("lastTransitionTime"))
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            unschedulable = cond.get("reason") == "Unschedulable"
    sidecars = {
        c.get("name")
        for c in spec.get("initContainers") or ()
        if c.get("restartPolicy") == "Always"
    }
    restarts = max(
        (int(c.get("restartCount", 0)) for c in status.get("containerStatuses") or ()), default=0
    )
    sidecar_restarts = max(
        (
            int(c.get("restartCount", 0))
            for c in status.get("initContainerStatuses") or ()
            if c.get("name") in sidecars
        ),
        default=0,
    )
    owner = ""
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            owner = f"{ref.get('kind', '')}/{ref.get('name', '')}"
    return PodInfo(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        group=str((meta.get("labels") or {}).get(group_label, "")),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or ""),
        ready=ready,
        ready_since_s=ready_since,
        restarts=restarts,
        sidecar_restarts=sidecar_restarts,
        created_s=_parse_time(meta.get("creationTimestamp")),
        deleting=bool(meta.get("deletionTimestamp")),
        owner=owner,
        pod_ips=pod_ips(status),
        resource_version=str(meta.get("resourceVersion") or ""),
        annotations=dict(meta.get("annotations") or {}),
        unschedulable=unschedulable,
        container_failure=container_failure(status),
        serve_endpoint=serve_endpoint(meta, spec),
    )


#: KubeRay's label on a RayService cluster's pods; the serve Service selects ``"true"``
SERVE_LABEL = "ray.io/serve"


def serve_endpoint(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """The pod is a serve Service endpoint while Ready (:attr:`PodInfo.serve_endpoint`): KubeRay
    labels a RayService worker ``ray.io/serve: "true"`` for good and lets its readiness probe
    decide the traffic; without a probe, Ready says nothing of the proxy (nothing to wait for)."""
    labels = meta.get("labels") or {}
    probed = any(c.get("readinessProbe") for c in spec.get("containers") or ())
    return labels.get(SERVE_LABEL) == "true" and probed


def pod_ips(status: Mapping[str, Any]) -> tuple[str, ...]:
    """Every address of ``status.podIPs`` (a dual-stack pod has two, either first), else
    ``status.podIP``; none while the pod has no IP."""
    listed = tuple(
        str(entry.get("ip"))
        for entry in status.get("podIPs") or ()
        if isinstance(entry, Mapping) and entry.get("ip")
    )
    if listed:
        return listed
    single = str(status.get("podIP") or "")
    return (single,) if single else ()


def container_failure(status: Mapping[str, Any]) -> str:
    """Why a container of the pod will not start as it is, else "": a waiting reason that
    needs a change to clear (:data:`FAILING_WAITING`), or a crash
    loop: waiting in ``CrashLoopBackOff`` or ended with an error, after at least
    :data:`CRASH_LOOP_RESTARTS` restarts.

    A crash-looping container shows ``waiting: CrashLoopBackOff`` only now and then: the
    kubelet 1.37 on the real node reported ``terminated`` (reason ``Error``) through most of
    its back-off, so an error exit counts as well as that reason.
    """
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in status.get(key) or ():
            state = c.get("state") or {}
            reason = str((state.get("waiting") or {}).get("reason") or "")
            if reason in FAILING_WAITING:
                return reason
            restarts = int(c.get("restartCount") or 0)
            ended = state.get("terminated") or {}
            crashed = reason == "CrashLoopBackOff" or int(ended.get("exitCode") or 0) != 0
            if crashed and restarts >= CRASH_LOOP_RESTARTS:
                return f"CrashLoopBackOff ({restarts} restarts)"
    return ""
