"""The safety rules between the planner's target and what KEDA is told, per worker group.

Applied to the planner's ``GroupPlan.target``:

1. clamp to ``[min_replicas, max_replicas]`` of the group;
2. after a restart, until the cluster has a snapshot taken after this process started, never
   below the group's current pods (scale-down held);
3. never below ``floor``: the group's pods that are not confirmed victims (drained and marked
   for deletion). The floor wins over ``max_replicas``: reporting fewer would ask the
   ReplicaSet to delete a pod that may be busy.

Why a module of its own: these rules are what keeps a busy pod from being deleted, whatever
refreshes the clusters; :mod:`keda_ray_scaler.rpc.cluster_refresh` calls them once per plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from keda_ray_scaler.decisions import Placed, Plan, clamp_target
from keda_ray_scaler.labels import selectors_text
from keda_ray_scaler.model import ClusterSpec, NodeStatus, WorkerNode
from keda_ray_scaler.rpc.entry import GroupTarget
from keda_ray_scaler.schema import ClusterSnapshot


def group_targets(
    snapshot: ClusterSnapshot, plan: Plan, *, hold_scale_down: bool
) -> dict[str, GroupTarget]:
    """Apply the safety rules (module docstring) to every worker group of ``snapshot``."""
    spec: ClusterSpec = snapshot.input.cluster
    by_group: dict[str, list[WorkerNode]] = {g.name: [] for g in spec.worker_groups}
    for node in snapshot.input.nodes:
        if node.group in by_group:
            by_group[node.group].append(node)
    out: dict[str, GroupTarget] = {}
    selectors = selectors_by_group(plan.placed)
    for g in spec.worker_groups:
        nodes = by_group[g.name]
        current = len(nodes)
        floor = sum(1 for n in nodes if n.status is not NodeStatus.VICTIM)
        gp = plan.groups.get(g.name)
        planned = gp.target if gp is not None else current  # no decision: keep what runs
        held = hold_scale_down and clamp_target(planned, g, floor=0) < current
        target = clamp_target(planned, g, floor=floor, hold_at=current if held else 0)
        out[g.name] = GroupTarget(
            cluster=spec.name,
            group=g.name,
            target=target,
            planned=planned,
            floor=floor,
            current=current,
            snapshot_time_s=snapshot.snapshot_time_s,
            held=held,
            selectors=selectors.get(g.name, ""),
        )
    return out


#: The most characters of a group's selectors text (trailing metadata of every GetMetrics
#: answer: KEDA ignores it, but it must stay small).
MAX_SELECTORS_TEXT: Final = 512


def selectors_by_group(placed: Iterable[Placed]) -> dict[str, str]:
    """Per group, the distinct selector lists of the demand placed on its pods (canonical
    text, sorted, joined by ``|``), cut to MAX_SELECTORS_TEXT with ``|...`` (at a list's end
    when one fits)."""
    lists: dict[str, set[str]] = {}
    for x in placed:
        lists.setdefault(x.group, set()).add(selectors_text(x.selectors))
    out = {}
    for group, texts in lists.items():
        text = "|".join(sorted(texts))
        if len(text) > MAX_SELECTORS_TEXT:
            head = text[: MAX_SELECTORS_TEXT - 4]
            text = (head.rpartition("|")[0] or head) + "|..."
        out[group] = text
    return out
