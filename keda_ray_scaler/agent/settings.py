"""The agent's settings, each default declared once here: the loop's, the victim protocol's, the
join tracker's, Ray's. The CLI's flags read their defaults from these types
(:mod:`keda_ray_scaler.cli.agent_flags`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from keda_ray_scaler.agent.joining.join_tracker import JoinSettings
from keda_ray_scaler.agent.loop import LoopSettings
from keda_ray_scaler.agent.ray.ray_state import DemandRead
from keda_ray_scaler.agent.victims.marks import VictimSettings


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Everything tunable: the loop's, the victim protocol's, the join tracker's, Ray's."""

    loop: LoopSettings = field(default_factory=LoopSettings)
    victims: VictimSettings = field(default_factory=VictimSettings)
    joins: JoinSettings = field(default_factory=JoinSettings)
    ray_timeout_s: float = 5.0
    #: the task demand's source: rule R1 (the head raylet read after the snapshot) or the GCS's sum
    demand_read: DemandRead = DemandRead.EXACT
