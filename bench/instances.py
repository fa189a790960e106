"""Planning instances for the benchmarks: seeded random small ones, and large scenarios.

``random_instance(seed)`` draws a small heterogeneous instance (up to 4 worker groups out of
CPU-only, GPU inference, GPU training and custom-resource kinds, each with its own pod size,
cost, minReplicas and maxReplicas; up to 40 pending bundles counting task bundles, the bundles
of placement groups of all four strategies and request_resources constraints; sometimes a few
existing pods with free capacity). The same seed always gives the same instance: randomness
comes only from a ``random.Random(seed)``.

The large scenarios (``pr64175``, ``free_capacity``, ``many_shapes``) are the speed targets of
issue 2; they are deterministic too.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)

GIB = 1024**3

#: Upscaling speed that never defers a pod: the quality benchmark compares packing only.
NO_UPSCALING_LIMIT = 1_000_000.0

#: Largest number of pending bundles (tasks + placement-group bundles + constraints).
MAX_BUNDLES = 40


KINDS = ("cpu-small", "cpu-large", "gpu-inference", "gpu-training", "custom")


def _group(rng: random.Random, kind: str) -> WorkerGroup:
    """One worker group of ``kind`` with a drawn pod size, cost and bounds."""
    if kind == "cpu-small":
        cpu = rng.choice([2, 4, 8])
        res = Resources.of(CPU=cpu, memory=cpu * 4 * GIB)
        cost = round(cpu * rng.uniform(0.22, 0.30), 2)
    elif kind == "cpu-large":
        cpu = rng.choice([10, 16, 32])
        res = Resources.of(CPU=cpu, memory=cpu * 4 * GIB)
        cost = round(cpu * rng.uniform(0.18, 0.26), 2)
    elif kind == "gpu-inference":
        gpus = rng.choice([1, 2])
        res = Resources.of(
            {"CPU": 8 * gpus, "GPU": gpus, "memory": 32 * gpus * GIB, "accelerator_type:T4": 1}
        )
        cost = round(gpus * rng.uniform(3.0, 4.0), 2)
    elif kind == "gpu-training":
        gpus = rng.choice([4, 8])
        res = Resources.of(
            {"CPU": 8 * gpus, "GPU": gpus, "memory": 64 * gpus * GIB, "accelerator_type:A100": 1}
        )
        cost = round(gpus * rng.uniform(3.5, 4.5), 2)
    else:  # custom resource
        res = Resources.of(CPU=8, memory=32 * GIB, fpga=rng.choice([1, 2, 4]))
        cost = round(rng.uniform(2.0, 3.0), 2)
    tight = rng.random() < 0.2
    max_replicas = rng.randint(1, 4) if tight else rng.choice([10, 50, 1000])
    min_replicas = rng.choice([0, 0, 0, 1])
    return WorkerGroup(
        name=kind,
        resources=res,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        cost=cost,
    )


def _shape(rng: random.Random, kinds: Sequence[str]) -> Resources:
    """A pending demand shape that targets one of ``kinds`` (rarely, one no pod can hold)."""
    if rng.random() < 0.03:
        return Resources.of(CPU=rng.choice([48, 64, 128]))  # bigger than every pod
    kind = rng.choice(list(kinds))
    if kind in ("cpu-small", "cpu-large"):
        cpu = rng.choice([0.5, 1, 1, 2, 2, 3, 4, 5, 6, 8])
        amounts: dict[str, float | int] = {"CPU": cpu}
        if rng.random() < 0.4:
            amounts["memory"] = rng.choice([1, 2, 4, 8, 16]) * GIB
        return Resources.of(amounts)
    menu: list[dict[str, float]]
    if kind == "gpu-inference":
        menu = [
            {"GPU": 1, "CPU": 1},
            {"GPU": 0.5},
            {"GPU": 1, "CPU": 4, "memory": 16 * GIB},
            {"GPU": 1, "accelerator_type:T4": 0.001},
        ]
    elif kind == "gpu-training":
        menu = [
            {"GPU": 2, "CPU": 8},
            {"GPU": 4, "CPU": 16, "memory": 128 * GIB},
            {"GPU": 1, "accelerator_type:A100": 0.001},
            {"GPU": 8},
        ]
    else:
        menu = [{"fpga": 1, "CPU": 2}, {"fpga": 1}, {"fpga": 2, "CPU": 4}]
    return Resources.of(dict(rng.choice(menu)))


def _existing_nodes(rng: random.Random, groups: Sequence[WorkerGroup]) -> list[WorkerNode]:
    """A few current pods (running with some free capacity, or pending), within each max."""
    nodes: list[WorkerNode] = []
    for g in groups:
        n = min(g.max_replicas, rng.choice([0, 0, 1, 2, 3]))
        for i in range(n):
            pending = rng.random() < 0.25
            if pending:
                free = g.resources
            else:
                num = rng.choice([0, 1, 2, 3, 4])  # free share of the pod, in quarters
                free = Resources.from_units({k: v * num // 4 for k, v in g.resources})
            nodes.append(
                WorkerNode(
                    pod=f"{g.name}-{i}",
                    group=g.name,
                    total=g.resources,
                    available=free,
                    status=NodeStatus.PENDING if pending else NodeStatus.RUNNING,
                    node_id="" if pending else f"{len(nodes):056x}",
                )
            )
    return nodes


def random_instance(seed: int) -> PlanningInput:
    """A seeded random small heterogeneous instance (see the module docstring)."""
    rng = random.Random(seed)
    kinds = rng.sample(KINDS, rng.randint(1, 4))
    groups = tuple(_group(rng, k) for k in kinds)
    budget = rng.randint(3, MAX_BUNDLES)

    pgs: list[PlacementGroup] = []
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        size = rng.randint(2, 4)
        count = rng.choice([1, 1, 2])
        if size * count > budget - 1:
            continue
        strategy = rng.choice(list(Strategy))
        if rng.random() < 0.5:
            shape = _shape(rng, kinds)
            pg_bundles = (shape,) * size
        else:
            pg_bundles = tuple(_shape(rng, kinds) for _ in range(size))
        pgs.append(PlacementGroup(strategy=strategy, bundles=pg_bundles, count=count))
        budget -= size * count

    constraints: list[Bundle] = []
    if rng.random() < 0.15 and budget > 2:
        n = rng.randint(1, min(4, budget - 1))
        constraints.append(Bundle(_shape(rng, kinds), n))
        budget -= n

    bundles: dict[Resources, int] = {}
    for _ in range(rng.randint(1, 6)):
        if budget <= 0:
            break
        n = rng.randint(1, budget)
        shape = _shape(rng, kinds)
        bundles[shape] = bundles.get(shape, 0) + n
        budget -= n

    nodes = _existing_nodes(rng, groups) if rng.random() < 0.5 else []
    max_workers = None
    if rng.random() < 0.1:
        max_workers = len(nodes) + rng.randint(2, 12)
    cluster = ClusterSpec(
        name=f"random-{seed}",
        worker_groups=groups,
        max_workers=max_workers,
        upscaling_speed=NO_UPSCALING_LIMIT,
    )
    demand = Demand(
        bundles=tuple(Bundle(r, n) for r, n in bundles.items()),
        placement_groups=tuple(pgs),
        constraints=tuple(constraints),
    )
    return PlanningInput(cluster=cluster, demand=demand, nodes=tuple(nodes))


def bundle_total(inp: PlanningInput) -> int:
    """How many pending bundles an instance holds (tasks, placement-group bundles, floor)."""
    d = inp.demand
    return (
        sum(b.count for b in d.bundles)
        + sum(len(pg.bundles) * pg.count for pg in d.placement_groups)
        + sum(b.count for b in d.constraints)
    )


# --------------------------------------------------------------------------- large scenarios

_OTHER_GROUPS = (
    WorkerGroup(
        "gpu-inference",
        Resources.of({"CPU": 8, "GPU": 1, "memory": 32 * GIB, "accelerator_type:T4": 1}),
        max_replicas=200,
        cost=3.5,
    ),
    WorkerGroup(
        "gpu-training",
        Resources.of({"CPU": 64, "GPU": 8, "memory": 512 * GIB, "accelerator_type:A100": 1}),
        max_replicas=32,
        cost=32.0,
    ),
    WorkerGroup("custom", Resources.of(CPU=8, memory=32 * GIB, fpga=2), max_replicas=50, cost=2.5),
)


def _running(group: WorkerGroup, i: int, available: Resources) -> WorkerNode:
    return WorkerNode(
        pod=f"{group.name}-{i:05d}",
        group=group.name,
        total=group.resources,
        available=available,
        node_id=f"{i:056x}",
    )


def pr64175() -> PlanningInput:
    """ray-project/ray PR #64175: 1,337 busy worker pods, 13,315 pending ``{CPU: 2}`` bundles.

    Plus three other groups (GPU inference, GPU training, custom resource) with a few pods,
    GPU tasks and placement groups of every strategy.
    """
    worker = WorkerGroup("cpu-worker", Resources.of(CPU=16, memory=64 * GIB), max_replicas=5000)
    nodes = [
        _running(worker, i, Resources.of(CPU=i % 2, memory=(i % 8) * GIB)) for i in range(1337)
    ]
    gi, gt, cu = _OTHER_GROUPS
    nodes += [_running(gi, i, Resources.of(CPU=7, memory=31 * GIB)) for i in range(20)]
    nodes += [_running(gt, i, Resources.of(CPU=8, memory=64 * GIB)) for i in range(4)]
    nodes += [_running(cu, i, Resources.of(CPU=4, memory=16 * GIB, fpga=1)) for i in range(6)]
    demand = Demand(
        bundles=(
            Bundle(Resources.of(CPU=2), 13_315),
            Bundle(Resources.of(GPU=1, CPU=1), 40),
            Bundle(Resources.of(fpga=1, CPU=2), 12),
        ),
        placement_groups=(
            PlacementGroup(Strategy.STRICT_SPREAD, (Resources.of(GPU=8, CPU=32),) * 2, 2),
            PlacementGroup(Strategy.STRICT_PACK, (Resources.of(GPU=1, CPU=4),) * 4, 3),
            PlacementGroup(Strategy.PACK, (Resources.of(CPU=4),) * 8, 5),
            PlacementGroup(Strategy.SPREAD, (Resources.of(CPU=1),) * 4, 5),
        ),
    )
    cluster = ClusterSpec("pr64175", (worker, *_OTHER_GROUPS), upscaling_speed=NO_UPSCALING_LIMIT)
    return PlanningInput(cluster=cluster, demand=demand, nodes=tuple(nodes))


FREE_SHAPES = (
    Resources.of(CPU=1),
    Resources.of(CPU=2),
    Resources.of(CPU=3, memory=4 * GIB),
    Resources.of(CPU=4, memory=8 * GIB),
)


def free_capacity(pods: int, demands: int) -> PlanningInput:
    """``pods`` running 16-CPU pods, each with 0 to 15 CPUs free, and ``demands`` pending bundles.

    The shape of input for which Ray 2.60's v2 scheduler grows super-linearly (it tries every
    existing node for every node it picks). Demands cycle through four shapes.
    """
    worker = WorkerGroup("cpu-worker", Resources.of(CPU=16, memory=64 * GIB), max_replicas=10_000)
    nodes = tuple(
        _running(worker, i, Resources.of(CPU=(i * 7) % 16, memory=((i * 5) % 60) * GIB))
        for i in range(pods)
    )
    counts = [demands // len(FREE_SHAPES)] * len(FREE_SHAPES)
    counts[0] += demands - sum(counts)
    demand = Demand(bundles=tuple(Bundle(s, n) for s, n in zip(FREE_SHAPES, counts, strict=True)))
    cluster = ClusterSpec("free", (worker,), upscaling_speed=NO_UPSCALING_LIMIT)
    return PlanningInput(cluster=cluster, demand=demand, nodes=nodes)


def distinct_shapes(n: int) -> list[Resources]:
    """``n`` distinct demand shapes spread over CPU, GPU and custom-resource groups."""
    out: list[Resources] = []
    i = 0
    while len(out) < n:
        kind = i % 5
        step = i // 5 + 1
        if kind in (0, 1):
            r = Resources.of(CPU=0.25 * step, memory=((step * 3) % 16 + 1) * GIB // 2)
        elif kind == 2:
            r = Resources.of(GPU=1, CPU=step % 8 + 0.5)
        elif kind == 3:
            r = Resources.of(GPU=[0.25, 0.5, 1, 2, 4][step % 5], CPU=step % 16 + 1)
        else:
            r = Resources.of(fpga=1, CPU=step % 8 + 0.5)
        if r not in out:
            out.append(r)
        i += 1
    return out


def many_shapes(pods: int, bundles: int, shapes: int) -> PlanningInput:
    """``pods`` existing pods over four groups and ``bundles`` pending bundles in ``shapes`` shapes.

    A fifth of the pods have free capacity; counts are spread evenly over the shapes.
    """
    cpu = WorkerGroup("cpu-worker", Resources.of(CPU=32, memory=128 * GIB), max_replicas=100_000)
    gi, gt, cu = _OTHER_GROUPS
    gi = WorkerGroup(gi.name, gi.resources, max_replicas=100_000, cost=gi.cost)
    gt = WorkerGroup(gt.name, gt.resources, max_replicas=100_000, cost=gt.cost)
    cu = WorkerGroup(cu.name, cu.resources, max_replicas=100_000, cost=cu.cost)
    groups = (cpu, gi, gt, cu)
    nodes: list[WorkerNode] = []
    for i in range(pods):
        g = groups[i % 4] if i % 10 == 0 else cpu
        if i % 5 == 0:
            free = Resources.from_units({k: v * (i % 3) // 4 for k, v in g.resources})
        else:
            free = Resources()
        nodes.append(_running(g, i, free))
    sh = distinct_shapes(shapes)
    counts = [bundles // shapes] * shapes
    counts[0] += bundles - sum(counts)
    demand = Demand(bundles=tuple(Bundle(s, n) for s, n in zip(sh, counts, strict=True) if n))
    cluster = ClusterSpec("many", groups, upscaling_speed=NO_UPSCALING_LIMIT)
    return PlanningInput(cluster=cluster, demand=demand, nodes=tuple(nodes))


def describe(inp: PlanningInput) -> str:
    """A compact one-paragraph description of an instance, for reports."""

    def res(r: Resources) -> str:
        parts = []
        for k, v in r.to_float_dict().items():
            if k in ("memory", "object_store_memory"):
                parts.append(f"{k[:3]}={v / GIB:g}G")
            else:
                parts.append(f"{k.removeprefix('accelerator_type:')}={v:g}")
        return "{" + ",".join(parts) + "}"

    c = inp.cluster
    groups = "; ".join(
        f"{g.name}{res(g.resources)} ${g.cost:g} [{g.min_replicas},{g.max_replicas}]"
        for g in c.worker_groups
    )
    d = inp.demand
    tasks = " ".join(f"{b.count}x{res(b.resources)}" for b in d.bundles)
    pgs = " ".join(
        f"{pg.count}x{pg.strategy.value}[{' '.join(res(r) for r in pg.bundles)}]"
        for pg in d.placement_groups
    )
    floor = " ".join(f"{b.count}x{res(b.resources)}" for b in d.constraints)
    nodes = " ".join(f"{n.group}:{n.status.value[0]}{res(n.available)}" for n in inp.nodes)
    out = [f"groups: {groups}", f"tasks: {tasks or '-'}"]
    if pgs:
        out.append(f"pgs: {pgs}")
    if floor:
        out.append(f"request_resources: {floor}")
    if nodes:
        out.append(f"nodes(free): {nodes}")
    if c.max_workers is not None:
        out.append(f"maxWorkers: {c.max_workers}")
    return "\n    ".join(out)
