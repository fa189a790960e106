"""The side-by-side benchmark's short form (issue 16): the seed example (its short form, ``s``:
5 s tasks) at the bed's fast settings, once with the project's loop (KubeRay mode) and once
with Ray 2.60's own autoscaler v2 as KubeRay's sidecar, each on a fresh RayCluster of the same
bed (``bench/vs_ray_bench.py``): the session's bed (the fixture ``bed``), whose timings are the
fast profile's, so that the real-node chain boots one bed, not two.

The figures are printed (one ``vs-ray:`` line); only what could really go wrong is asserted:
both sides ran the workload to its end with every task done and no pod deleted while a task
ran on it. Run inside ``e2e/netns.sh`` by ``make test`` (CI) and ``make e2e-local``.
"""

from __future__ import annotations

import pytest
from bed import Bed
from real_loop import REAL_LOOP_MARKS

from bench import vs_ray_bench
from bench.vs_ray_figures import Figures
from bench.vs_ray_table import vs_ray_line

#: Both sides in turn, each with its cluster's start and teardown: beside two busy loops ours took
#: 347 s and Ray's about 520 s (2026-11-27), past the real loops' 900 s.
pytestmark = [*(m for m in REAL_LOOP_MARKS if m.name != "timeout"), pytest.mark.timeout(1800)]


def test_seed_side_by_side_with_rays_own_autoscaler(
    bed: Bed, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both sides run the seed to its end: 20 tasks done, none failed, no busy pod deleted."""
    results = vs_ray_bench.run(["fast"], ["s"], on=bed)
    with capsys.disabled():
        print("\n" + vs_ray_line(results))
    sides = results[("fast", "s")]
    for side in ("ours", "ray"):
        figures = sides.get(side)
        assert isinstance(figures, Figures), f"{side}: {figures}"
        assert figures.finished and figures.done == figures.tasks, figures
        assert figures.failed == 0, figures
        assert figures.busy_deleted == 0, figures.notes
