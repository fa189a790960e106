"""The Ray cluster fixture starts a raylet again when Ray's startup limit ended it, and only then.

``ray start`` gives its raylet 30 s to register with the GCS (Ray's ``node.py``, not
configurable) and exits past it; CI on two busy cores passed it once (stop 47:
``test_labels_ray``'s worker "timed out during startup"). The ``ray`` here is a small script
standing in for ``ray start`` so the exit can be made at will: the fixture's behaviour, not
Ray's, is under test (the real start is tested by every real-Ray test).
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.harness.ray_cluster import RayCluster

_TIMED_OUT = "Exception: The current node timed out during startup. This could happen ..."


def _cluster(tmp_path: Path, fails: int, message: str) -> RayCluster:
    """A cluster whose ``ray`` exits ``fails`` times with ``message``, then runs."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    ray = venv / "bin" / "ray"
    starts = tmp_path / "starts"
    ray.write_text(
        "#!/bin/sh\n"
        f'echo x >> "{starts}"\n'
        f'if [ "$(wc -l < "{starts}")" -le {fails} ]; then echo "{message}"; exit 1; fi\n'
        "exec sleep 300\n"
    )
    ray.chmod(ray.stat().st_mode | stat.S_IXUSR)
    cluster = RayCluster(root=tmp_path, venv=venv)
    cluster.alive_nodes = lambda: []  # type: ignore[method-assign]  # no GCS here
    return cluster


def _starts(tmp_path: Path) -> int:
    return len((tmp_path / "starts").read_text().splitlines())


def _exited(cluster: RayCluster, pod: str) -> None:
    cluster.workers[pod].popen.wait(30)


def test_a_raylet_past_rays_startup_limit_is_started_again_with_its_log_kept(
    tmp_path: Path,
) -> None:
    cluster = _cluster(tmp_path, fails=1, message=_TIMED_OUT)
    try:
        proc = cluster.add_worker("ray-a", "cpu")
        _exited(cluster, "ray-a")
        with pytest.raises(TimeoutError):  # no GCS answers; the process must be alive again
            cluster.wait_for_nodes(2, timeout_s=1.0)
        assert proc.restarts == 1
        assert proc.alive()
        assert _starts(tmp_path) == 2
        assert _TIMED_OUT in proc.log.read_text()  # the first attempt's words stay in the log
        assert "--num-cpus=10" in proc.args
    finally:
        cluster.stop()


def test_restarts_are_bounded(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, fails=99, message=_TIMED_OUT)
    try:
        cluster.add_worker("ray-a", "cpu")
        with pytest.raises(RuntimeError, match=r"ray-a exited: .*timed out during startup"):
            while True:  # each exit is met by the next wait, until the bound
                _exited(cluster, "ray-a")
                cluster.wait_for_nodes(2, timeout_s=1.0)
        assert _starts(tmp_path) == 3  # the first start and two more
    finally:
        cluster.stop()


def test_any_other_exit_fails_at_once_with_the_log(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, fails=1, message="ValueError: bad --labels")
    try:
        cluster.add_worker("ray-a", "cpu")
        _exited(cluster, "ray-a")
        with pytest.raises(RuntimeError, match="ray-a exited: ValueError: bad --labels"):
            cluster.wait_for_nodes(2, timeout_s=1.0)
        assert _starts(tmp_path) == 1
    finally:
        cluster.stop()
