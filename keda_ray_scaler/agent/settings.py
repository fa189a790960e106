"""The agent's settings: the loop's, the victim protocol's, the join tracker's, Ray's.

Each default is declared once: in the type, or as the constant of its room that the type's field
reads where the type's own module loads the agent's clients (the poll interval and the Ray
timeout in :mod:`~keda_ray_scaler.agent.ray.ray_state`, the shape cap in
:mod:`~keda_ray_scaler.agent.ray.shape_bound`). The CLI's flags read the same
(:mod:`keda_ray_scaler.cli.agent_flags`); ``tests/unit/cli/test_defaults_agree.py`` holds them
equal."""

from __future__ import annotations

from dataclasses import dataclass, field

from keda_ray_scaler.agent.joining.join_tracker import JoinSettings
from keda_ray_scaler.agent.loop import LoopSettings
from keda_ray_scaler.agent.ray.ray_state import GCS_TIMEOUT_S, DemandRead
from keda_ray_scaler.agent.victims.marks import VictimSettings


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Everything tunable: the loop's, the victim protocol's, the join tracker's, Ray's."""

    loop: LoopSettings = field(default_factory=LoopSettings)
    victims: VictimSettings = field(default_factory=VictimSettings)
    joins: JoinSettings = field(default_factory=JoinSettings)
    ray_timeout_s: float = GCS_TIMEOUT_S
    #: the task demand's source: rule R1 (the head raylet read after the snapshot) or the GCS's sum
    demand_read: DemandRead = DemandRead.EXACT
    #: the cluster's seal key (``--seal-key-file``): the digest keyed with it; None: unkeyed
    seal_key: bytes | None = field(default=None, repr=False)
