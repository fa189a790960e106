"""Why demand stays unplaceable, and equal unplaceable entries counted together; pure.

The reasons, in the order :func:`explain` tries them: no group's labels satisfy the demand's
selectors, no group fits, maxWorkers, backed off, at maxReplicas, upscalingSpeed, competing for
maxReplicas. The groups considered are those whose labels satisfy any of its selectors; the
detail also names those of its selectors no group satisfies.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from keda_ray_scaler.decisions import Unplaceable, UnplaceableReason
from keda_ray_scaler.labels import Selectors, admits, selectors_text
from keda_ray_scaler.model import DemandKind, Resources, Strategy
from keda_ray_scaler.packing.shapes import fit_count, need_of
from keda_ray_scaler.planner.context import Context


def explain(
    u: Unplaceable, ctx: Context, new: Sequence[int], budget: int, speed_left: Sequence[int]
) -> Unplaceable:
    """The reason: no group fits, maxWorkers, upscalingSpeed or maxReplicas.

    maxReplicas also covers demand that a group's remaining room cannot hold together with what
    was placed (a re-run trading it for as many other bundles, or a STRICT_SPREAD group needing
    more distinct pods than are left)."""
    if u.detail:
        return u  # already explained
    wgroups = ctx.groups
    fitting = _fitting(ctx, u.resources, u.selectors)
    if not fitting:
        reason, detail = no_fit(ctx, u.resources, u.selectors)
    elif budget <= 0:
        reason, detail = UnplaceableReason.MAX_WORKERS, "maxWorkers reached"
    else:
        open_ = [i for i in fitting if ctx.hard[i] - new[i] > 0]
        backed_off = [i for i in fitting if ctx.backed_off[i]]
        if not open_ and backed_off:
            names = ", ".join(wgroups[i].name for i in backed_off)
            reason = UnplaceableReason.BACKED_OFF
            detail = f"backed off after pods that did not join Ray: {names}"
        elif not open_:
            names = ", ".join(f"{wgroups[i].name} ({wgroups[i].max_replicas})" for i in fitting)
            reason, detail = UnplaceableReason.MAX_REPLICAS, f"at maxReplicas: {names}"
        elif u.kind is DemandKind.TASK and all(speed_left[i] <= 0 for i in open_):
            names = ", ".join(wgroups[i].name for i in open_)
            reason, detail = UnplaceableReason.UPSCALING_SPEED, f"deferred: pods pending in {names}"
        else:  # room is left, but not enough for this together with what was placed
            names = ", ".join(f"{wgroups[i].name} ({wgroups[i].max_replicas})" for i in open_)
            reason = UnplaceableReason.MAX_REPLICAS
            detail = f"competes with other demand for maxReplicas: {names}"
        detail += _unmatched(ctx, u.selectors)
    return Unplaceable(u.resources, u.count, reason, detail, u.kind, u.strategy, u.selectors)


def _unmatched(ctx: Context, sels: Selectors) -> str:
    """The selectors of a list some group satisfies that no group does, as a detail's end."""
    none = [s for s in sels if not any(s.matches(labels) for labels in ctx.adm.group_labels)]
    return f"; no worker group's labels satisfy {selectors_text(none)}" if none else ""


def _fitting(ctx: Context, res: Resources, sels: Selectors) -> list[int]:
    """Groups whose pods can hold ``res`` and whose labels satisfy one of ``sels``."""
    need = need_of(ctx.index.vec(res))
    return [
        i
        for i, spec in enumerate(ctx.specs)
        if fit_count(spec.capacity, need) > 0 and admits(sels, ctx.adm.group_labels[i])
    ]


def no_fit(ctx: Context, res: Resources, sels: Selectors) -> tuple[UnplaceableReason, str]:
    """Why no group can ever hold ``res`` with ``sels``: no group's labels satisfy them, or no
    satisfying group's pods are big enough."""
    if not sels:
        return UnplaceableReason.NO_GROUP_FITS, f"no worker group has pods that can hold {res}"
    text = selectors_text(sels)
    if not any(admits(sels, labels) for labels in ctx.adm.group_labels):
        reason = UnplaceableReason.NO_GROUP_MATCHES
        return reason, f"no worker group's labels satisfy the label selector {text}"
    detail = f"no worker group whose labels satisfy {text} has pods that can hold {res}"
    return UnplaceableReason.NO_GROUP_FITS, detail


_Key = tuple[Resources, UnplaceableReason, str, DemandKind, str, Selectors]


def merge(items: Sequence[Unplaceable]) -> tuple[Unplaceable, ...]:
    """Unplaceable demand with equal shape, reason, kind, strategy and selectors counted
    together."""
    counts: dict[_Key, int] = defaultdict(int)
    for u in items:
        counts[(u.resources, u.reason, u.detail, u.kind, u.strategy or "", u.selectors)] += u.count
    return tuple(
        Unplaceable(res, n, reason, detail, kind, Strategy(strat) if strat else None, sels)
        for (res, reason, detail, kind, strat, sels), n in sorted(counts.items())
    )
