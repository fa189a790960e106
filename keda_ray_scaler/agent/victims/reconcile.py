"""The victim protocol's reconcile: victim marks and published victims squared with Ray's nodes.

Stale victim marks restored, drained ones adopted, a victim whose pod runs a new Ray node
unpublished; each step of :class:`~keda_ray_scaler.agent.victims.controller.VictimController`
starts here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.victims.cost_marks import CostMarks
from keda_ray_scaler.agent.victims.ledger import VictimLedger
from keda_ray_scaler.agent.victims.marks import has_mark
from keda_ray_scaler.agent.victims.verdicts import Outcome, Verdict
from keda_ray_scaler.model import NodeStatus, WorkerNode


async def reconcile_marks(
    pods: Iterable[PodInfo],
    nodes: Sequence[WorkerNode],
    ledger: VictimLedger,
    marks: CostMarks,
) -> list[Verdict]:
    """Restore stale victim marks, adopt drained ones, unpublish resurrected victims."""
    settings = marks.settings
    by_pod = {n.pod: n for n in nodes}
    verdicts: list[Verdict] = []
    for pod in pods:
        node = by_pod.get(pod.name)
        node_id = ledger.node_of(pod.name)
        if node_id is not None:
            if node is not None and node.status == NodeStatus.RUNNING and node.node_id != node_id:
                ledger.unpublish(pod.name)
                verdicts.append(
                    await marks.restore(pod, Outcome.RESURRECTED, f"new Ray node {node.node_id}")
                )
            continue
        if not pod.active or not has_mark(pod, settings.victim_cost, settings):
            continue
        if node is None or node.status == NodeStatus.DRAINING:
            ledger.publish(pod.name, pod.group, node.node_id if node else "")
            state = "draining" if node else "gone"
            verdicts.append(
                Verdict(pod.group, pod.name, Outcome.VICTIM, f"adopted: Ray node {state}")
            )
            continue
        verdicts.append(await marks.restore(pod, Outcome.RESTORED, "victim mark without a drain"))
    return verdicts
