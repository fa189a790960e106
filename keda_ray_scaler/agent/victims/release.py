"""The victim protocol's release: published victims no scale-down will take, deleted by uid.

Which ones is :func:`~keda_ray_scaler.agent.victims.choose.to_release` (pure); each is deleted here
with
its uid as a precondition, and the ReplicaSet replaces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from keda_ray_scaler.agent.interfaces import PodSource
from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.victims.verdicts import Outcome, Verdict
from keda_ray_scaler.decisions import GroupPlan
from keda_ray_scaler.errors import KubernetesError


async def release_victims(
    pods: PodSource, gp: GroupPlan, names: Iterable[str], active: Mapping[str, PodInfo]
) -> list[Verdict]:
    """Delete the pods ``names`` of ``gp``'s group (``active``: its pods by name), each if it
    is still the same pod (uid); a verdict for each."""
    verdicts: list[Verdict] = []
    for name in names:
        try:
            deleted = await pods.delete(name, active[name].uid)
        except KubernetesError as exc:
            verdicts.append(Verdict(gp.name, name, Outcome.KUBE_ERROR, f"release: {exc}"))
            continue
        if not deleted:
            verdicts.append(Verdict(gp.name, name, Outcome.POD_GONE, "pod gone"))
            continue
        reason = (
            f"target {gp.target} >= {gp.current} pods: no scale-down takes it; "
            "deleted, the ReplicaSet replaces it"
        )
        verdicts.append(Verdict(gp.name, name, Outcome.RELEASED, reason))
    return verdicts
