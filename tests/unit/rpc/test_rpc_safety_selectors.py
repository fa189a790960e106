"""The label selectors a group's target is told with (``rpc.safety.selectors_by_group``)."""

from __future__ import annotations

from keda_ray_scaler.decisions import Placed
from keda_ray_scaler.labels import LabelSelector, selectors_of
from keda_ray_scaler.model import Resources
from keda_ray_scaler.rpc.safety import MAX_SELECTORS_TEXT, selectors_by_group

CPU = (Resources.of(CPU=1),)


def zone(z: str) -> LabelSelector:
    return LabelSelector.from_ray({"zone": z})


def test_each_group_gets_its_distinct_lists_sorted() -> None:
    """Two placements of one list count once; new and existing pods alike; lists sorted."""
    spot = LabelSelector.from_ray({"market-type": "spot"})
    anywhere = selectors_of((spot, LabelSelector()))
    placed = [
        Placed("cpu", 2, (spot,), spot, CPU),
        Placed("cpu", 1, (spot,), spot, CPU, existing=True),
        Placed("cpu", 3, anywhere, spot, CPU),
        Placed("gpu", 1, (zone("a"),), zone("a"), CPU),
    ]
    assert selectors_by_group(placed) == {
        "cpu": "market-type=spot|market-type=spot;*",
        "gpu": "zone=a",
    }


def test_a_long_text_is_cut_at_a_lists_end() -> None:
    """200 zones do not fit: the text stops at the last whole list, then ``|...``."""
    placed = [Placed("cpu", 1, (zone(f"z{i:03}"),), zone(f"z{i:03}"), CPU) for i in range(200)]
    text = selectors_by_group(placed)["cpu"]
    assert len(text) <= MAX_SELECTORS_TEXT
    assert text.startswith("zone=z000|zone=z001|") and text.endswith("|...")
    assert all(part.startswith("zone=z") and len(part) == 9 for part in text.split("|")[:-1])
