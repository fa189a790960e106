"""The look between polls as ``bench.agent_poll_bench`` measures it (issue 39): the looks the
agent makes until its next poll, and the look with rule R1 (the default), which reads the head
raylet's queue before the GCS's reply."""

from __future__ import annotations

import time
from typing import Any

from bench.agent_bench import HEAD_ID

#: Looks between two polls at the shipped ``--interval`` 5 s and ``--watch-interval`` 0.5 s.
LOOKS_PER_INTERVAL = 9
#: The head raylet's queue a look reads with rule R1: a few shapes (``bench.agent_bench``'s).
HEAD_SHAPES = 3


async def r1_watch(gcs: Any, reader: Any, raylet: Any) -> Any:
    """The look as the agent makes it with rule R1 (the default): the head raylet's queue, then
    the GCS's reply; the head's queue as the poll read it, read once here."""
    from keda_ray_scaler.agent.ray.status_watch import Seen, StatusWatch
    from keda_ray_scaler.agent.ray.task_load import NodeLoad, node_load, task_load

    node_id = HEAD_ID.hex()
    queued = task_load([node_load(await raylet.resource_load(gcs.get(), node_id, 5.0))], ())

    def seen() -> Seen:
        return Seen(reader.seen.steady, NodeLoad(node_id, queued))

    return StatusWatch(gcs, seen, raylet, every_s=0.5, timeout_s=5.0)


async def looked(watch: Any) -> list[float]:
    """CPU ms of each look until the next poll, as the agent looks."""
    looks = []
    for _ in range(LOOKS_PER_INTERVAL):
        cpu = time.process_time()
        await watch.look()
        looks.append((time.process_time() - cpu) * 1000)
    return looks
