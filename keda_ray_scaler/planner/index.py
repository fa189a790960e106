"""Resource names <-> vector positions, and Ray's implicit resources; pure.

Ray's implicit resources (``node:__internal_implicit_resource_*``, Ray Serve's
``max_replicas_per_node``: each replica asks ``1 / max_replicas_per_node`` of one) are kept in
demand and given to every pod as Ray's autoscaler (v1 ``_fits`` / ``_inplace_subtract``, v2
``_can_fit_any_request``) gives them: a node that does not list one has 1 of it. So demand
that asks only for one is planned one such resource per pod, and demand asking more than 1 is
unplaceable with a reason, never dropped. A node's explicit 0 of one cannot be told from an
absent one (``Resources`` drops zeros): read as 1, as Ray reads the node states it gets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from keda_ray_scaler.model import RESOURCE_SCALE, NodeStatus, Resources, WorkerNode
from keda_ray_scaler.packing.shapes import Vec

#: ``(group index, total, free, pod)``: an existing pod as the packer takes it.
Pod = tuple[int, Vec, Vec, str]

#: Ray's ``IMPLICIT_RESOURCE_PREFIX``: a resource every node has as much of as asked.
IMPLICIT_RESOURCE_PREFIX = "node:__internal_implicit_resource_"


class Index:
    """Resource names <-> vector positions, sorted so vectors are deterministic. With
    ``labels`` (the input has label ids, :mod:`.admission`) every vector has one entry more
    after the resources, a pod's admission class (0 in demand and a group's capacity), and
    labelled demand one more after it, its label id (:mod:`~keda_ray_scaler.packing.shapes`)."""

    def __init__(self, names: set[str], labels: bool = False) -> None:
        self.names = tuple(sorted(names))
        self.width = len(self.names)
        self.tail: Vec = (0,) if labels else ()  # the admission class entry
        self.entries = self.width + len(self.tail)  # of a pod vector
        self.pos = {n: i for i, n in enumerate(self.names)}
        self._memo: dict[tuple[tuple[str, int], ...], Vec] = {}
        self._capacity_memo: dict[tuple[tuple[str, int], ...], Vec] = {}
        #: What a pod has of each name when it does not list it: 1 of an implicit resource.
        self._implicit: Vec = (
            tuple(
                RESOURCE_SCALE if n.startswith(IMPLICIT_RESOURCE_PREFIX) else 0 for n in self.names
            )
            + self.tail
        )
        self._any_implicit = any(self._implicit)

    def vec(self, res: Resources) -> Vec:
        """``res`` as a vector over this index."""
        units = res.units
        known = self._memo.get(units)
        if known is not None:
            return known
        out = [0] * self.entries
        for name, amount in units:
            out[self.pos[name]] = amount
        self._memo[units] = vec = tuple(out)
        return vec

    def capacity(self, res: Resources) -> Vec:
        """A pod's (or a group's) ``res`` as a vector, with 1 of each implicit resource unlisted.

        Demand goes through :meth:`vec`: a bundle that does not ask for one needs none.
        """
        known = self._capacity_memo.get(res.units)
        if known is not None:
            return known
        vec = self.vec(res)
        if self._any_implicit:
            vec = tuple(a or d for a, d in zip(vec, self._implicit, strict=True))
        self._capacity_memo[res.units] = vec
        return vec

    def pod(self, res: Resources, cls: int) -> Vec:
        """An existing pod's ``res`` (:meth:`capacity`) in admission class ``cls``."""
        vec = self.capacity(res)
        return (*vec[:-1], cls) if cls else vec

    def res(self, vec: Vec) -> Resources:
        """A vector over this index as ``Resources`` (its class and label id left out)."""
        real = vec[: self.width]
        return Resources(tuple((n, a) for n, a in zip(self.names, real, strict=True) if a))

    def labelled(self, vec: Vec, label: int) -> Vec:
        """Demand ``vec`` with label id ``label`` (none for 0)."""
        return (*vec, label) if label else vec

    def pods(
        self,
        usable: Sequence[tuple[int, WorkerNode]],
        cls: Callable[[int, WorkerNode], int] | None = None,
    ) -> tuple[tuple[Pod, ...], tuple[Pod, ...]]:
        """The ``usable`` ``(group index, pod)`` as the packer takes them, their free space
        (a pending pod wholly free: not yet a Ray node), and again with their total as free
        (request_resources); with ``cls``, each in its admission class (:mod:`.admission`)."""
        pending, cap, pod = NodeStatus.PENDING, self.capacity, self.pod
        if cls is None:
            free = tuple(
                (g, (w := cap(n.total)), w if n.status is pending else cap(n.available), n.pod)
                for g, n in usable
            )
        else:
            free = tuple(
                (
                    g,
                    (w := pod(n.total, c := cls(g, n))),
                    w if n.status is pending else pod(n.available, c),
                    n.pod,
                )
                for g, n in usable
            )
        return free, tuple((g, w, w, p) for g, w, _, p in free)
