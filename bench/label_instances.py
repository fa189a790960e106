"""The label-heavy planning scenario of issue 37: labelled worker groups, many distinct selectors.

``labelled()``: 1,000 running pods over 20 worker groups labelled as a heterogeneous cluster is
(5 zones x spot / on-demand x CPU / GPU, the GPU groups' accelerator type by zone), 10,000
pending task bundles under 100 distinct selector lists (zones by ``in``, ``!in`` and equality,
market type, accelerator type, a quarter with a fallback), the on-demand CPU groups of one zone
at a higher priority. Five lists no group satisfies (A100 outside zones d and e, T4 inside them):
their 500 bundles are listed unplaceable. Deterministic: no randomness.
"""

from __future__ import annotations

import itertools

from bench.instances import GIB, NO_UPSCALING_LIMIT
from keda_ray_scaler.labels import LabelSelector, Selectors, selectors_of
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    PlanningInput,
    Resources,
    WorkerGroup,
    WorkerNode,
)

ZONES = ("a", "b", "c", "d", "e")
MARKETS = ("spot", "on-demand")
ZONE_KEY = "ray.io/availability-zone"
MARKET_KEY = "ray.io/market-type"
ACCEL_KEY = "ray.io/accelerator-type"

#: Task shapes of the CPU selectors, by selector number modulo 4; GPU selectors ask GPU_SHAPE.
CPU_SHAPES = (
    Resources.of(CPU=1),
    Resources.of(CPU=2, memory=4 * GIB),
    Resources.of(CPU=4, memory=8 * GIB),
    Resources.of(CPU=0.5, memory=GIB),
)
GPU_SHAPE = Resources.of(CPU=4, GPU=1, memory=16 * GIB)

PODS_PER_GROUP = 50
SELECTORS = 100
GPU_SELECTORS = 10
BUNDLES_PER_SELECTOR = 100


def _groups() -> tuple[WorkerGroup, ...]:
    out = []
    for zone, market, gpu in itertools.product(ZONES, MARKETS, (False, True)):
        labels = {ZONE_KEY: f"us-{zone}", MARKET_KEY: market}
        discount = 0.35 if market == "spot" else 1.0
        if gpu:
            labels[ACCEL_KEY] = "A100" if zone in "de" else "T4"
            res = Resources.of(CPU=16, GPU=2, memory=128 * GIB)
            cost = (8.0 if zone in "de" else 3.0) * discount
        else:
            res = Resources.of(CPU=32, memory=128 * GIB)
            cost = 1.6 * discount
        out.append(
            WorkerGroup(
                name=f"{'gpu' if gpu else 'cpu'}-{market}-{zone}",
                resources=res,
                max_replicas=1000,
                cost=round(cost, 3),
                labels=labels,
                priority=1 if zone == "a" and market == "on-demand" and not gpu else 0,
            )
        )
    return tuple(out)


def _zone_options() -> list[dict[str, str]]:
    """Zone constraints: each zone, its negation, and every pair by ``in`` and ``!in``."""
    single = [{ZONE_KEY: f"us-{z}"} for z in ZONES] + [{ZONE_KEY: f"!us-{z}"} for z in ZONES]
    pairs = [f"us-{a},us-{b}" for a, b in itertools.combinations(ZONES, 2)]
    return (
        single + [{ZONE_KEY: f"in({p})"} for p in pairs] + [{ZONE_KEY: f"!in({p})"} for p in pairs]
    )


def _selectors() -> list[tuple[Selectors, bool]]:
    """SELECTORS distinct lists, ``True`` for those asking a GPU (the accelerator type)."""
    out: list[tuple[Selectors, bool]] = []
    for accel in ("A100", "T4"):
        for zone in _zone_options()[: GPU_SELECTORS // 2]:
            out.append((selectors_of([LabelSelector.from_ray({**zone, ACCEL_KEY: accel})]), True))
    cpu = [
        {**zone, **({MARKET_KEY: m} if m else {})}
        for m, zone in itertools.product(("spot", "on-demand", ""), _zone_options())
    ]
    for i, first in enumerate(cpu):
        if len(out) == SELECTORS:
            break
        alts = (
            [first, {k: v for k, v in first.items() if k != MARKET_KEY}] if i % 4 == 0 else [first]
        )
        sels = selectors_of(LabelSelector.from_ray(a) for a in alts)
        if sels not in [s for s, _ in out]:
            out.append((sels, False))
    return out


def labelled() -> PlanningInput:
    """The scenario of the module docstring."""
    groups = _groups()
    nodes = []
    for g in groups:
        for i in range(PODS_PER_GROUP):
            free = (
                Resources.from_units({k: v * (i % 3) // 4 for k, v in g.resources})
                if i % 5 == 0
                else Resources()
            )
            nodes.append(
                WorkerNode(
                    pod=f"{g.name}-{i:03d}",
                    group=g.name,
                    total=g.resources,
                    available=free,
                    node_id=f"{len(nodes):056x}",
                    labels=g.labels,
                )
            )
    bundles = tuple(
        Bundle(GPU_SHAPE if gpu else CPU_SHAPES[i % len(CPU_SHAPES)], BUNDLES_PER_SELECTOR, sels)
        for i, (sels, gpu) in enumerate(_selectors())
    )
    cluster = ClusterSpec("labels", groups, upscaling_speed=NO_UPSCALING_LIMIT)
    return PlanningInput(cluster=cluster, demand=Demand(bundles=bundles), nodes=tuple(nodes))
