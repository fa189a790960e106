"""A worker group's count fields belong to the agent: kept when anyone else rewrites them. Pure.

In an autoscaled RayCluster, ``replicas`` and ``scaleStrategy.workersToDelete`` of every worker
group are the agent's to write (it names its drained victims there, then lowers ``replicas``).
KubeRay's RayService controller rewrites a live cluster's whole spec from the RayService's own
(``modifyRayCluster``: ``currentCluster.Spec = goalCluster.Spec``) when worker groups are
appended or the KubeRay operator was upgraded, which resets both fields to what the RayService
says: KubeRay would then delete pods at random to meet a lower ``replicas``, busy ones included,
or forget the victims it was told. On such an UPDATE, by any writer but the cluster's own agent,
:func:`kept_counts` gives the JSON Patch operations that put back, for each group the old object
already had (matched by ``groupName``), the values the old object held, and one warning line
per group changed back (``kubectl`` prints it to whoever wrote). A group appended keeps what the
writer gave it. The hash KubeRay compares excludes both fields, so it writes no more: no loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

WORKER_GROUPS_PATH = "/spec/workerGroupSpecs"


@dataclass(frozen=True, slots=True)
class KeptCounts:
    """The operations that restore the agent's fields, and a warning per group restored."""

    patch: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...]


NOTHING_KEPT = KeptCounts((), ())


def agent_user(namespace: str, service_account: str) -> str:
    """The API server's name for the agent's ServiceAccount."""
    return f"system:serviceaccount:{namespace}:{service_account}"


def kept_counts(
    new: Mapping[str, Any], old: Mapping[str, Any] | None, writer: str, agent: str
) -> KeptCounts:
    """What to restore in ``new`` (an UPDATE of ``old`` by ``writer``); nothing for a CREATE,
    the agent's own writes, or a change that leaves both fields as they were."""
    if old is None or writer == agent:
        return NOTHING_KEPT
    before = {g.get("groupName"): g for g in _groups(old)}
    patch: list[Mapping[str, Any]] = []
    warnings: list[str] = []
    for index, group in enumerate(_groups(new)):
        name = group.get("groupName")
        was = before.get(name) if isinstance(name, str) else None
        if was is None:
            continue
        ops = _restore(f"{WORKER_GROUPS_PATH}/{index}", group, was)
        if ops:
            patch += ops
            warnings.append(
                f"keda-ray-scaler: worker group {str(name)[:63]!r}: replicas and "
                "workersToDelete are the agent's (autoscaled); kept as they were"
            )
    return KeptCounts(tuple(patch), tuple(warnings))


def _restore(path: str, group: Mapping[str, Any], was: Mapping[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    if group.get("replicas") != was.get("replicas"):
        if "replicas" in was:
            op = "replace" if "replicas" in group else "add"
            ops.append({"op": op, "path": f"{path}/replicas", "value": was["replicas"]})
        else:
            ops.append({"op": "remove", "path": f"{path}/replicas"})
    victims, had = _victims(group), _victims(was)
    if victims != had:
        strategy = group.get("scaleStrategy")
        if isinstance(strategy, Mapping):
            op = "replace" if "workersToDelete" in strategy else "add"
            ops.append({"op": op, "path": f"{path}/scaleStrategy/workersToDelete", "value": had})
        else:
            value = {"workersToDelete": had}
            ops.append({"op": "add", "path": f"{path}/scaleStrategy", "value": value})
    return ops


def _victims(group: Mapping[str, Any]) -> list[Any]:
    strategy = group.get("scaleStrategy")
    victims = strategy.get("workersToDelete") if isinstance(strategy, Mapping) else None
    return list(victims) if isinstance(victims, list) else []


def _groups(cluster: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    spec = cluster.get("spec")
    groups = spec.get("workerGroupSpecs") if isinstance(spec, Mapping) else None
    if not isinstance(groups, list):
        return ()
    return [g for g in groups if isinstance(g, Mapping)]
