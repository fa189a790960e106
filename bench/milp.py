"""The exact optimum of a planning instance, as an integer program (``scipy.optimize.milp``).

Formulation (all amounts in Ray's fixed point, each capacity row divided by the pod's capacity
so coefficients are at most 1):

Pods ``p``: every existing pod that can take demand (running or pending; draining pods and
victims hold nothing but still count against the bounds), and for each worker group ``g``
``K_g`` candidate new pods with a binary ``y[g,k]`` (pod ``k`` of ``g`` is bought).
``K_g = min(max_g - current_g, max(min_g - current_g, FFD_g))`` where ``FFD_g`` is the number
of pods of ``g`` a first-fit-decreasing packing of every item ``g`` can hold needs: any
optimum can move the items on its ``g`` pods into that packing, so it never buys more.
Symmetry is cut with ``y[g,k] >= y[g,k+1]``.

Demand, with unplaced demand allowed but penalised by ``M`` (more than every candidate pod
together) per bundle, so the solver first places all it can, then minimises cost:

* task/actor bundles of one shape ``s`` with count ``n_s``: integers ``x[s,p] >= 0``,
  ``sum_p x[s,p] + u_s = n_s``;
* PACK and SPREAD placement groups (Ray's autoscaler sets no constraint on them; a group is
  placed whole or not at all): ``c`` identical groups share an integer ``v`` in ``[0, c]``
  of groups placed and ``sum_p x[pg,s,p] = m_s v`` for each shape ``s`` of multiplicity ``m_s``;
* STRICT_PACK placement groups: all bundles on one pod, i.e. one item of the summed shape,
  ``sum_p x[pg,p] = v``;
* STRICT_SPREAD placement groups: per group ``j`` a binary ``w_j``, per bundle ``b`` binaries
  ``z[j,b,p]`` with ``sum_p z[j,b,p] = w_j`` and, per pod, ``sum_b z[j,b,p] <= 1``;
* request_resources constraints: one binary ``w_c`` for the whole floor (Ray's semantics: the
  constraint is met or infeasible as a whole), ``sum_p xc[s,p] = n_s w_c``, packed against the
  pods' TOTAL capacity in rows of their own (demand rows use the AVAILABLE capacity).

Capacity, per pod and resource ``r``: ``sum_items a_r x <= avail_r`` (existing pod) or
``<= cap_r y[g,k]`` (new pod). A variable exists only where the item's shape fits the pod.
Bounds: ``sum_k y[g,k] >= min_g - current_g`` and ``sum_{g,k} y[g,k] <= maxWorkers - pods``.
Objective: ``min sum cost_g y[g,k] + M (unplaced bundles)``.

A bundle no group's pod can ever hold is left out of the program and reported as ``unfit``.
Solutions are re-checked in exact integer arithmetic before they are returned.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from keda_ray_scaler.model import NodeStatus, PlanningInput, Resources, Strategy


@dataclass(frozen=True, slots=True)
class Optimum:
    """The solver's answer for one instance."""

    status: str  # "optimal", "infeasible" (bounds contradict) or scipy's message
    cost: float  # total cost of the new pods
    new: Mapping[str, int]  # new pods per group
    unplaced: int  # placeable bundles left without a pod (blocked by max bounds)
    unfit: int  # bundles no pod of any group can hold (outside the program)
    seconds: float = 0.0
    size: tuple[int, int] = (0, 0)  # variables, constraints
    #: The optimum's packing: (pod, source, shape, count), pod being an existing pod's name or
    #: ``<group>+<k>`` for the k-th new pod, source ``demand`` or ``constraint``.
    placements: tuple[tuple[str, str, Resources, int], ...] = ()

    @property
    def pods(self) -> int:
        """New pods in all."""
        return sum(self.new.values())


@dataclass(slots=True)
class _Pod:
    name: str
    group: str
    avail: Resources  # for demand
    total: Resources  # for request_resources constraints
    y: int | None = None  # index of the purchase variable of a candidate new pod


@dataclass(slots=True)
class _Item:
    """A class of identical items sharing one count equation."""

    shape: Resources
    source: str  # "demand" or "constraint"
    vars: dict[int, int] = field(default_factory=dict)  # pod index -> variable index


class _Program:
    """Accumulates variables and sparse rows."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.integer: list[int] = []
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, cost: float, lo: float, hi: float, integer: bool = True) -> int:
        self.cost.append(cost)
        self.integer.append(1 if integer else 0)
        self.lo.append(lo)
        self.hi.append(hi)
        return len(self.cost) - 1

    def row(self, coef: dict[int, float], lo: float, hi: float) -> None:
        if coef:
            self.rows.append((coef, lo, hi))


def _ffd(shapes: list[tuple[Resources, int]], cap: Resources) -> int:
    """Pods of capacity ``cap`` a first-fit-decreasing packing needs (bundles: shape, tag).

    Bundles with the same non-zero tag must go to distinct pods (STRICT_SPREAD).
    """
    capd = dict(cap.units)

    def size(r: Resources) -> float:
        return max((v / capd[k] for k, v in r.units), default=0.0)

    bins: list[tuple[dict[str, int], set[int]]] = []
    for shape, tag in sorted(shapes, key=lambda st: -size(st[0])):
        for free, tags in bins:
            if (tag == 0 or tag not in tags) and all(v <= free.get(k, 0) for k, v in shape):
                for k, v in shape:
                    free[k] -= v
                tags.add(tag)
                break
        else:
            free = dict(capd)
            for k, v in shape:
                free[k] -= v
            bins.append((free, {tag}))
    return len(bins)


def solve(
    inp: PlanningInput,
    *,
    fixed_new: Mapping[str, int] | None = None,
    time_limit_s: float = 30.0,
) -> Optimum:
    """Solve ``inp`` exactly; with ``fixed_new``, the fewest unplaced bundles for those counts.

    ``fixed_new`` (new pods per group, e.g. a plan's) checks a plan: the answer's ``unplaced``
    is the least demand those purchases leave without a pod.
    """
    started = time.perf_counter()
    groups = inp.cluster.worker_groups
    demand = inp.demand
    fits_any = [g.resources for g in groups]

    def fits_some_group(r: Resources) -> bool:
        return any(r.fits_in(c) for c in fits_any)

    # ---- items: (shape, source, strict-spread tag) for the FFD bound, and the classes
    unfit = 0
    tasks = [(b.resources, b.count) for b in demand.bundles if b.count > 0]
    unfit += sum(n for r, n in tasks if not fits_some_group(r))
    tasks = [(r, n) for r, n in tasks if fits_some_group(r)]
    loose: list[tuple[dict[Resources, int], int]] = []  # PACK/SPREAD: shape multiplicities, count
    packs: list[tuple[Resources, int, int]] = []  # STRICT_PACK: summed shape, count, bundles
    spreads: list[tuple[tuple[Resources, ...], int]] = []  # STRICT_SPREAD: bundles, count
    for pg in demand.placement_groups:
        if pg.count <= 0 or not pg.bundles:
            continue
        if pg.strategy == Strategy.STRICT_PACK:
            total = Resources()
            for r in pg.bundles:
                total = total + r
            if fits_some_group(total):
                packs.append((total, pg.count, len(pg.bundles)))
            else:
                unfit += len(pg.bundles) * pg.count
        elif not all(fits_some_group(r) for r in pg.bundles):
            unfit += len(pg.bundles) * pg.count
        elif pg.strategy == Strategy.STRICT_SPREAD:
            spreads.append((pg.bundles, pg.count))
        else:
            mult: dict[Resources, int] = {}
            for r in pg.bundles:
                mult[r] = mult.get(r, 0) + 1
            loose.append((mult, pg.count))
    floor = [(b.resources, b.count) for b in demand.constraints if b.count > 0]
    floor_unfit = not all(fits_some_group(r) for r, _ in floor)
    if floor_unfit:
        unfit += sum(n for _, n in floor)
        floor = []

    # ---- pods
    current: dict[str, int] = {g.name: 0 for g in groups}
    pods: list[_Pod] = []
    for node in inp.nodes:
        current[node.group] = current.get(node.group, 0) + 1
        if node.status in (NodeStatus.RUNNING, NodeStatus.PENDING):
            pods.append(_Pod(node.pod, node.group, node.available, node.total))
    prog = _Program()
    total_cost_bound = 0.0
    y_by_group: dict[str, list[int]] = {}
    headroom_total = (
        inp.cluster.max_workers - len(inp.nodes) if inp.cluster.max_workers is not None else None
    )
    for g in groups:
        cap = g.resources
        need_min = max(0, g.min_replicas - current[g.name])
        headroom = max(0, g.max_replicas - current[g.name])
        d_items: list[tuple[Resources, int]] = []
        for r, n in tasks:
            if r.fits_in(cap):
                d_items += [(r, 0)] * n
        for mult, c in loose:
            for r, m in mult.items():
                if r.fits_in(cap):
                    d_items += [(r, 0)] * (m * c)
        for r, c, _ in packs:
            if r.fits_in(cap):
                d_items += [(r, 0)] * c
        tag = 0
        for bundles, c in spreads:
            for _ in range(c):
                tag += 1
                d_items += [(r, tag) for r in bundles if r.fits_in(cap)]
        c_items = [(r, 0) for r, n in floor for _ in range(n) if r.fits_in(cap)]
        k = max(need_min, _ffd(d_items, cap), _ffd(c_items, cap))
        if fixed_new is not None:
            k = max(k, fixed_new.get(g.name, 0))
        k = min(k, headroom)
        if headroom_total is not None:
            k = min(k, max(0, headroom_total))
        ys = []
        for j in range(k):
            idx = prog.var(g.cost, 0, 1)
            ys.append(idx)
            pods.append(_Pod(f"{g.name}+{j}", g.name, cap, cap, y=idx))
        y_by_group[g.name] = ys
        total_cost_bound += g.cost * k
        for a, b in itertools.pairwise(ys):
            prog.row({a: 1.0, b: -1.0}, 0.0, np.inf)
        if fixed_new is not None:
            want = fixed_new.get(g.name, 0)
            if want > k:
                return Optimum("infeasible", 0.0, {}, 0, unfit, time.perf_counter() - started)
            prog.row({i: 1.0 for i in ys}, want, want)
        elif need_min:
            if need_min > k:
                return Optimum("infeasible", 0.0, {}, 0, unfit, time.perf_counter() - started)
            prog.row({i: 1.0 for i in ys}, need_min, np.inf)
    if headroom_total is not None:
        all_y = {i: 1.0 for ys in y_by_group.values() for i in ys}
        prog.row(all_y, -np.inf, max(0, headroom_total))
    if fixed_new is not None:
        for i in range(len(prog.cost)):
            prog.cost[i] = 0.0
    penalty = total_cost_bound + 1.0

    # ---- variables per item class; capacity terms collected per (pod, source, resource)
    cap_terms: dict[tuple[int, str, str], dict[int, float]] = {}
    where: list[tuple[int, int, str, Resources]] = []  # variable, pod, source, shape

    def place(shape: Resources, source: str, hi: float, binary: bool = False) -> dict[int, int]:
        out: dict[int, int] = {}
        for p, pod in enumerate(pods):
            room = pod.avail if source == "demand" else pod.total
            if not shape.fits_in(room if pod.y is None else pod.total):
                continue
            idx = prog.var(0.0, 0, 1 if binary else hi)
            out[p] = idx
            where.append((idx, p, source, shape))
            for name, amount in shape:
                key = (p, source, name)
                cap_terms.setdefault(key, {})[idx] = float(amount)
        return out

    # (variable, weight): weight -1 marks an unplaced-task count, a positive weight the bundles
    # one unit of a "placed" variable stands for.
    unplaced_terms: list[tuple[int, float]] = []
    constant_bundles = 0
    for r, n in tasks:
        xs = place(r, "demand", n)
        u = prog.var(penalty, 0, n)
        unplaced_terms.append((u, -1.0))
        prog.row({**{i: 1.0 for i in xs.values()}, u: 1.0}, n, n)
    for mult, c in loose:
        v = prog.var(-penalty * sum(mult.values()), 0, c)
        constant_bundles += sum(mult.values()) * c
        unplaced_terms.append((v, float(sum(mult.values()))))
        for r, m in mult.items():
            xs = place(r, "demand", m * c)
            prog.row({**{i: 1.0 for i in xs.values()}, v: -float(m)}, 0, 0)
    for r, c, nb in packs:
        v = prog.var(-penalty * nb, 0, c)
        constant_bundles += nb * c
        unplaced_terms.append((v, float(nb)))
        xs = place(r, "demand", c)
        prog.row({**{i: 1.0 for i in xs.values()}, v: -1.0}, 0, 0)
    for bundles, c in spreads:
        for _ in range(c):
            w = prog.var(-penalty * len(bundles), 0, 1)
            constant_bundles += len(bundles)
            unplaced_terms.append((w, float(len(bundles))))
            per_pod: dict[int, dict[int, float]] = {}
            for r in bundles:
                zs = place(r, "demand", 1, binary=True)
                prog.row({**{i: 1.0 for i in zs.values()}, w: -1.0}, 0, 0)
                for p, i in zs.items():
                    per_pod.setdefault(p, {})[i] = 1.0
            for coef in per_pod.values():
                if len(coef) > 1:
                    prog.row(coef, -np.inf, 1)
    floor_var: int | None = None
    if floor:
        nb = sum(n for _, n in floor)
        floor_var = prog.var(-penalty * nb, 0, 1)
        constant_bundles += nb
        unplaced_terms.append((floor_var, float(nb)))
        for r, n in floor:
            xs = place(r, "constraint", n)
            prog.row({**{i: 1.0 for i in xs.values()}, floor_var: -float(n)}, 0, 0)

    for (p, source, name), coef in cap_terms.items():
        pod = pods[p]
        space = pod.avail if (source == "demand" and pod.y is None) else pod.total
        amount = space.get(name)
        row = {i: a / amount for i, a in coef.items()}
        if pod.y is None:
            prog.row(row, -np.inf, 1.0)
        else:
            row[pod.y] = row.get(pod.y, 0.0) - 1.0
            prog.row(row, -np.inf, 0.0)

    # ---- solve
    nvar = len(prog.cost)
    if nvar == 0:
        return Optimum("optimal", 0.0, {g.name: 0 for g in groups}, 0, unfit, 0.0)
    data: list[float] = []
    ri: list[int] = []
    ci: list[int] = []
    lo: list[float] = []
    hi: list[float] = []
    for r_i, (coef, lb, ub) in enumerate(prog.rows):
        for c_i, val in coef.items():
            ri.append(r_i)
            ci.append(c_i)
            data.append(val)
        lo.append(lb)
        hi.append(ub)
    constraints = []
    if prog.rows:
        a_mat = coo_array((data, (ri, ci)), shape=(len(prog.rows), nvar)).tocsr()
        constraints.append(LinearConstraint(a_mat, np.array(lo), np.array(hi)))
    res = milp(
        c=np.array(prog.cost),
        integrality=np.array(prog.integer),
        bounds=Bounds(np.array(prog.lo), np.array(prog.hi)),
        constraints=constraints,
        options={"time_limit": time_limit_s, "mip_rel_gap": 0.0},
    )
    elapsed = time.perf_counter() - started
    if res.x is None:
        status = "infeasible" if res.status == 2 else str(res.message)
        return Optimum(status, 0.0, {}, 0, unfit, elapsed, (nvar, len(prog.rows)))
    x = np.rint(res.x).astype(int)
    new = {g.name: int(sum(x[i] for i in y_by_group[g.name])) for g in groups}
    placed = sum(int(x[i]) * int(w) for i, w in unplaced_terms if w > 0)
    unplaced_tasks = sum(int(x[i]) for i, w in unplaced_terms if w < 0)
    unplaced = unplaced_tasks + constant_bundles - placed
    _check(pods, cap_terms, x)
    cost = sum(g.cost * new[g.name] for g in groups)
    status = "optimal" if res.status == 0 else str(res.message)
    placed_on: dict[tuple[int, str, Resources], int] = {}
    for idx, p, source, shape in where:
        if x[idx]:
            key = (p, source, shape)
            placed_on[key] = placed_on.get(key, 0) + int(x[idx])
    placements = tuple(
        (pods[p].name, source, shape, n) for (p, source, shape), n in sorted(placed_on.items())
    )
    return Optimum(status, cost, new, unplaced, unfit, elapsed, (nvar, len(prog.rows)), placements)


def _check(
    pods: list[_Pod], cap_terms: Mapping[tuple[int, str, str], Mapping[int, float]], x: np.ndarray
) -> None:
    """Re-check every capacity row in exact integers; a violation is a formulation bug."""
    for (p, source, name), coef in cap_terms.items():
        pod = pods[p]
        used = sum(int(x[i]) * int(a) for i, a in coef.items())
        if pod.y is None:
            room = (pod.avail if source == "demand" else pod.total).get(name)
        else:
            room = pod.total.get(name) * int(x[pod.y])
        if used > room:
            raise AssertionError(f"MILP solution overfills pod {p} ({pod.group}) on {name}")
