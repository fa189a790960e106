"""KubeRay mode: which RayWorkerGroup holds a RayCluster group that several of them name.

Each RayWorkerGroup names one group of the RayCluster (``spec.groupName``), and the HPA of each
writes that RayWorkerGroup's ``spec.replicas``. Two naming one group both moved it: a later
claim's HPA raised the group to its own count, the rightful one's then waited for victims.

The oldest claim holds the group: the RayWorkerGroup created first (``creationTimestamp``, which
the API server sets), then the first by name (:func:`holders`, pure). Every other is refused: not
applied, its ``Ready`` condition False with reason ``GroupClaimedByAnother`` naming the holder,
counted (``ray_scaler_kuberay_decisions_total{action="claimed"}``, each round) and logged once
(:class:`GroupClaims`). When the holder goes, the next oldest holds the group.

Why not refuse both: whoever may create a RayWorkerGroup could then stop any group's scaling
by naming it. With the oldest kept, a later claim changes nothing; a claim made before the
rightful one takes the group, and the rightful one's status names it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import structlog

log = structlog.get_logger(__name__)

#: a claim without a readable creationTimestamp comes after every dated one
_UNDATED = float("inf")


def _name(rwg: Mapping[str, Any]) -> str:
    return str((rwg.get("metadata") or {}).get("name") or "")


def _group(rwg: Mapping[str, Any]) -> str:
    return str((rwg.get("spec") or {}).get("groupName") or "")


def _created_s(rwg: Mapping[str, Any]) -> float:
    stamp = (rwg.get("metadata") or {}).get("creationTimestamp")
    if not isinstance(stamp, str):
        return _UNDATED
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return _UNDATED


def holders(rwgs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """For each RayWorkerGroup's name, the name of the one that holds its group: the oldest
    claim, then the first by name (itself when it holds it). Pure; the order of ``rwgs`` does
    not matter. One naming no group holds nothing but itself (it is ``no_group``)."""
    held: dict[str, str] = {}
    for rwg in sorted(rwgs, key=lambda r: (_created_s(r), _name(r))):
        held.setdefault(_group(rwg), _name(rwg))
    return {_name(rwg): held[_group(rwg)] if _group(rwg) else _name(rwg) for rwg in rwgs}


class GroupClaims:
    """The claims of one RayCluster's groups as the last round read them; a refused one logged
    once (per RayWorkerGroup and holder)."""

    def __init__(self, *, cluster: str) -> None:
        self._refused: dict[str, str] = {}  # refused RayWorkerGroup -> the holder of its group
        self._log = log.bind(cluster=cluster)

    def read(self, rwgs: Sequence[Mapping[str, Any]]) -> None:
        """One round's RayWorkerGroups: which are refused, and by whom; a new refusal logged."""
        refused = {name: holder for name, holder in holders(rwgs).items() if name != holder}
        groups = {_name(r): _group(r) for r in rwgs}
        for name, holder in refused.items():
            if self._refused.get(name) != holder:
                self._log.error(
                    "RayWorkerGroup refused: its group is claimed by another",
                    rayworkergroup=name,
                    worker_group=groups[name],
                    holder=holder,
                    reason="GroupClaimedByAnother",
                )
        self._refused = refused

    def holder_of(self, rayworkergroup: str) -> str:
        """The RayWorkerGroup holding the group ``rayworkergroup`` names, when another one
        does; "" when it holds it (as last read)."""
        return self._refused.get(rayworkergroup, "")
