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

from collections.abc import Sequence

from keda_ray_scaler.model import RESOURCE_SCALE, Resources
from keda_ray_scaler.packing.shapes import Vec

#: Ray's ``IMPLICIT_RESOURCE_PREFIX``: a resource every node has as much of as asked.
IMPLICIT_RESOURCE_PREFIX = "node:__internal_implicit_resource_"


class Index:
    """Resource names <-> vector positions, sorted so vectors are deterministic; then
    ``labels`` label dimensions (:mod:`.admission`), from position ``width`` on."""

    def __init__(self, names: set[str], labels: int = 0) -> None:
        self.names = tuple(sorted(names))
        self.width = len(self.names)
        self.labels = labels
        self.pos = {n: i for i, n in enumerate(self.names)}
        self._memo: dict[tuple[tuple[str, int], ...], Vec] = {}
        self._capacity_memo: dict[tuple[tuple[str, int], ...], Vec] = {}
        #: What a pod has of each name when it does not list it: 1 of an implicit resource.
        self._implicit: Vec = (
            tuple(
                RESOURCE_SCALE if n.startswith(IMPLICIT_RESOURCE_PREFIX) else 0 for n in self.names
            )
            + (0,) * labels
        )

    def vec(self, res: Resources) -> Vec:
        """``res`` as a vector over this index."""
        units = res.units
        known = self._memo.get(units)
        if known is not None:
            return known
        out = [0] * (self.width + self.labels)
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
        if any(self._implicit):
            vec = tuple(a or d for a, d in zip(vec, self._implicit, strict=True))
        self._capacity_memo[res.units] = vec
        return vec

    def res(self, vec: Vec) -> Resources:
        """A vector over this index as ``Resources`` (its label dimensions left out)."""
        real = vec[: self.width]
        return Resources(tuple((n, a) for n, a in zip(self.names, real, strict=True) if a))

    def labelled(self, vec: Vec, dims: Sequence[int], amount: int) -> Vec:
        """``vec`` with ``amount`` of each label dimension of ``dims``."""
        if not dims:
            return vec
        out = list(vec)
        for d in dims:
            out[self.width + d] = amount
        return tuple(out)
