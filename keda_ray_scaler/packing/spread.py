"""STRICT_SPREAD placement groups: every bundle of a gang on a distinct pod; pure."""

from __future__ import annotations

from collections.abc import Sequence

from keda_ray_scaler.packing.existingpods import ClassKey
from keda_ray_scaler.packing.packer import Packer
from keda_ray_scaler.packing.shapes import Need, Vec, fit_count, label_of, minus, need_of


def place_spread(packer: Packer, bundles: Sequence[Vec]) -> bool:
    """One STRICT_SPREAD gang: every bundle on a distinct pod. All or nothing."""
    # when every bundle could get a pod of its own, the gang cannot fail: no snapshot
    w = packer.width
    sure = all(
        any(
            packer.new.room(g) >= len(bundles)
            and grp.takes(label_of(b, w))
            and fit_count(grp.capacity, need_of(b, w)) > 0
            for g, grp in enumerate(packer.groups)
        )
        for b in set(bundles)
    )
    state = None if sure else packer.fork()
    used_old: dict[ClassKey, int] = {}
    used_new: dict[tuple[int, Vec], int] = {}
    for shape in (
        packer.strategies.orderer(list(bundles), packer.groups)
        if len(set(bundles)) > 1
        else bundles
    ):
        need = need_of(shape, w)
        if _spread_old(packer, shape, need, used_old) or _spread_new(packer, shape, need, used_new):
            continue
        if state is not None:
            packer.adopt(state)
        return False
    return True


def place_spread_copies(packer: Packer, shape: Vec, size: int, copies: int) -> bool:
    """``copies`` STRICT_SPREAD gangs of ``size`` identical bundles, all at once or none.

    Each gang needs ``size`` distinct pods; copies may share pods. Placing the
    ``size * copies`` bundles with at most ``copies`` on any pod is enough: dealing the
    bundles of each pod to gangs round-robin gives no gang two bundles on one pod.
    """
    state = packer.fork()
    need = need_of(shape, packer.width)
    count = packer.existing.place(shape, need, size * copies, most=copies)
    count = packer.new.fill(shape, need, count, packer.order, most=copies)
    while count:
        g = packer.greedy_group(packer.new, shape, need, min(count, copies))
        if g is None:
            packer.adopt(state)
            return False
        avoid = packer.avoid(g, shape)
        count = packer.new.open_for(g, shape, need, count, False, avoid, most=copies)
    return True


def _spread_old(packer: Packer, shape: Vec, need: Need, used: dict[ClassKey, int]) -> bool:
    existing = packer.existing
    label = label_of(shape, packer.width)
    for key in existing.in_order():
        if existing.count(key) - used.get(key, 0) <= 0 or fit_count(key[2], need) == 0:
            continue
        if not existing.admits(key, label):
            continue
        # pods used by this gang were moved last: the first pod is a fresh one
        dest = existing.take_one(key, shape)
        used[dest] = used.get(dest, 0) + 1
        return True
    return False


def _spread_new(packer: Packer, shape: Vec, need: Need, used: dict[tuple[int, Vec], int]) -> bool:
    new = packer.new
    label = label_of(shape, packer.width)
    for key, n in new.best_fit_classes(packer.order):
        if n - used.get(key, 0) <= 0 or fit_count(key[1], need) == 0:
            continue
        if not packer.groups[key[0]].takes(label):
            continue
        dest = new.take_one(key, shape)
        used[dest] = used.get(dest, 0) + 1
        return True
    g = packer.greedy_group(new, shape, need, 1)
    if g is None:
        return False
    dest = (g, minus(packer.groups[g].capacity, shape, 1))
    new.add(g, 1, dest[1], packer.avoid(g, shape))
    new.tally(label, g, 1)
    used[dest] = used.get(dest, 0) + 1
    return True
