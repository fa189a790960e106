"""Bin packing of resource shapes onto existing and new worker pods; pure, no I/O.

Everything works on ``(shape, count)`` pairs and on *classes* of interchangeable pods (same
group, same total, same free vector): placing ``k`` copies of a shape on a class is arithmetic,
so the cost grows with distinct shapes and distinct pod classes, never with the bundle count.

- :mod:`.shapes`: vectors, group capacities, the injected strategies (orderer, scorer);
- :mod:`.limits`: how many new pods may still be opened (maxReplicas, maxWorkers, pace);
- :mod:`.existingpods`: pods that run, as classes of identical free space;
- :mod:`.newpods`: planned pods as classes of identical free space;
- :mod:`.packer`: the packer (first-fit decreasing with rollouts), :mod:`.patterns` (cutting
  stock) and :mod:`.spread` (STRICT_SPREAD gangs).
"""

from keda_ray_scaler.packing.limits import Limits
from keda_ray_scaler.packing.newpods import NewPods
from keda_ray_scaler.packing.packer import Packer
from keda_ray_scaler.packing.shapes import (
    Candidate,
    GroupScorer,
    GroupSpec,
    Need,
    ResourceFirstOrderer,
    ShapeOrderer,
    Strategies,
    Vec,
    dominant_share_orderer,
    fit_count,
    need_of,
    ray_scorer,
    scarcity_orderer,
    scarcity_rank,
    smallest_first_orderer,
)
from keda_ray_scaler.packing.spread import place_spread, place_spread_copies

__all__ = [
    "Candidate",
    "GroupScorer",
    "GroupSpec",
    "Limits",
    "Need",
    "NewPods",
    "Packer",
    "ResourceFirstOrderer",
    "ShapeOrderer",
    "Strategies",
    "Vec",
    "dominant_share_orderer",
    "fit_count",
    "need_of",
    "place_spread",
    "place_spread_copies",
    "ray_scorer",
    "scarcity_orderer",
    "scarcity_rank",
    "smallest_first_orderer",
]
