"""The side-by-side benchmark's hop probe (bench/vs_ray_hops.py), without a bed: its reads stop
once their hop is seen, so the probe charges our side no CPU beyond the hop it measures."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bench.vs_ray_hops import HopProbe


def _probe() -> HopProbe:
    return HopProbe(SimpleNamespace(), group="cpu", needed=10)  # type: ignore[arg-type]


def test_every_read_goes_on_until_the_agent_exports_demand() -> None:
    probe: Any = _probe()
    probe._agent_polls += [(100.0, 0.0), (105.0, 0.0)]
    probe._scrapes += [(104.0, 1.0)]  # a scrape before any demand: not the hop
    assert probe._seen() == set()


def test_the_agent_read_stops_at_its_first_demand_prometheus_at_the_scrape_after() -> None:
    probe: Any = _probe()
    probe._agent_polls += [(100.0, 0.0), (110.0, 20.0)]
    probe._scrapes += [(104.0, 1.0)]
    assert probe._seen() == {"agent"}
    probe._scrapes += [(112.0, 1.0)]
    assert probe._seen() == {"agent", "prometheus"}
