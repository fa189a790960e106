"""The order in which the agent first saw each Ray node: which of a pod's nodes is its own now.

A pod lists two live Ray nodes when its raylet died and the kubelet restarted the container
before the GCS called the old node dead: the new raylet registers a new node for the same pod
(same instance id, same IP) while the GCS keeps the old one alive. On the test bed's real node
the GCS listed a SIGKILLed raylet's node as alive for 293 s beside its successor (fault (c),
``docs/testing.md``). Ray's ``NodeState`` carries no start time, so the agent remembers when it
first saw each node id (the poll's number): of a pod's live nodes, the one seen last is the
pod's node; the others are superseded (no capacity, no drain, no "new node" for a victim).

A node once superseded stays superseded while the GCS lists it: the restarted raylet's node may
be drained and go DEAD while the GCS still lists the killed one alive (fault (c) on the real
node, 2026-11-27), and the killed one must not then pass for the pod's node. Likewise a pod whose
node seen last is DEAD has no live node, whatever older node is still listed.

Nodes first seen in the same poll (an agent that starts while a pod lists two) are equally
new; :func:`~keda_ray_scaler.agent.ray.ray_status.parse_status` then keeps the one with the larger
node id, an arbitrary but stable choice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType


class NodeAges:
    """The poll number in which each listed node id was first seen (forgets unlisted ids)."""

    def __init__(self) -> None:
        self._first: dict[str, int] = {}
        self._polls = 0
        self._stale: set[str] = set()
        self._listed: tuple[str, ...] = ()  # the last poll's ids, in its order
        self._seen: Mapping[str, int] = MappingProxyType({})  # what it returned

    def observe(self, node_ids: Iterable[str]) -> Mapping[str, int]:
        """Record one poll's node ids; returns every listed id's first poll (the very mapping
        of the poll before when the same ids are listed in the same order: nothing is new)."""
        self._polls += 1
        listed = tuple(node_ids)
        if listed == self._listed and len(self._first) == len(listed):
            return self._seen
        self._listed = listed
        self._first = {nid: self._first.get(nid, self._polls) for nid in listed}
        self._stale &= self._first.keys()
        self._seen = MappingProxyType(dict(self._first))
        return self._seen

    @property
    def stale(self) -> frozenset[str]:
        """Node ids superseded at some poll and listed since."""
        return frozenset(self._stale)

    def supersede(self, node_ids: Iterable[str]) -> None:
        """These nodes were superseded: they stay so while listed."""
        self._stale.update(node_ids)
