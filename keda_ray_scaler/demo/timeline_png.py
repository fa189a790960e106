"""The demo's timeline as a PNG: pending demand, the scaler's target and pods by state.

Drawn with matplotlib (the ``demo`` extra: ``pip install 'keda-ray-scaler[demo]'``) on its
non-interactive Agg backend; without matplotlib :func:`draw` raises :class:`PlotUnavailable`
and the demo prints the install hint instead of a path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from keda_ray_scaler.demo.progress import POD_STATES, Sample

_COLORS = ("#c9c9c9", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd")


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def draw(samples: Sequence[Sample], path: Path, title: str) -> Path:
    """Write the timeline of ``samples`` to ``path`` (PNG); return it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError as exc:
        raise PlotUnavailable("pip install 'keda-ray-scaler[demo]' for the timeline PNG") from exc
    t = [s.at_s for s in samples]
    fig, (top, bottom) = pyplot.subplots(
        2, 1, sharex=True, figsize=(10, 6), height_ratios=(1, 2), layout="constrained"
    )
    try:
        top.step(t, [s.pending for s in samples], where="post", color="#1f77b4")
        top.set_ylabel("pending tasks")
        top.set_title(title)
        layers = [[s.pods[i] for s in samples] for i in range(len(POD_STATES))]
        bottom.stackplot(
            t, layers, labels=[f"pods {n}" for n in POD_STATES], colors=_COLORS, step="post"
        )
        target = [math.nan if s.target is None else s.target for s in samples]
        bottom.step(
            t, target, where="post", color="black", linewidth=2, label="target (GetMetrics)"
        )
        bottom.step(
            t,
            [s.replicas for s in samples],
            where="post",
            color="black",
            linestyle=":",
            label="Deployment replicas",
        )
        bottom.set_ylabel("pods")
        bottom.set_xlabel("seconds since start")
        bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
            ax.set_ylim(bottom=0)
        fig.savefig(path, dpi=100)
    finally:
        pyplot.close(fig)
    return path
