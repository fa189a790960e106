"""The loop's choices: a watch event queues a round only when what a round reads changed (not
KubeRay's status writes); work is queued once; a stale cluster is looked at again, later each
time it stays stale; a watch that ends is opened again; a round that crashes is counted failed
and the loop goes on."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import pytest
from controller_input import raycluster, worker
from controller_store import FakeStore
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from keda_ray_scaler.controller.metrics import ControllerMetrics
from keda_ray_scaler.controller.reconcile import Outcome, Reconciler
from keda_ray_scaler.controller.runner import Runner, fingerprint
from keda_ray_scaler.controller.settings import ControllerSettings
from keda_ray_scaler.controller.template import ControllerTemplate


def runner(
    store: FakeStore | None = None, slept: list[float] | None = None
) -> tuple[Runner, CollectorRegistry]:
    """A runner on ``store`` whose sleeps are recorded in ``slept`` and return at once."""
    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry)
    store = store or FakeStore()
    reconciler = Reconciler(store, ControllerTemplate(), metrics, lambda: 0.0)
    settings = ControllerSettings(namespaces=("ray",), requeue_s=1.0, resync_s=30.0)

    async def sleep(s: float) -> None:
        (slept if slept is not None else []).append(s)

    return Runner(reconciler, store, settings, metrics, sleep=sleep), registry  # type: ignore[arg-type]


def queued(r: Runner) -> list[tuple[str, str]]:
    """What is queued, in order."""
    out = []
    while not r._queue.empty():
        out.append(r._queue.get_nowait())
    r._queued.clear()
    return out


def edited(rc: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """``rc`` with these metadata fields changed."""
    out = copy.deepcopy(rc)
    out["metadata"].update(meta)
    return out


async def test_only_changes_a_round_reads_queue_the_cluster() -> None:
    """The spec (generation), annotations, uid or a deletion queue it; a status write does not."""
    r, _ = runner()
    rc = edited(raycluster(worker("cpu")), generation=1, resourceVersion="5")
    r._changed("ray", "ADDED", rc)
    assert queued(r) == [("ray", "demo")]
    status_only = edited(rc, resourceVersion="6")
    status_only["status"] = {"state": "ready"}
    r._changed("ray", "MODIFIED", status_only)
    assert queued(r) == []
    for change in (
        {"generation": 2},
        {"annotations": {"keda-ray-scaler.io/autoscaling": "yes"}},
        {"deletionTimestamp": "t"},
    ):
        r._changed("ray", "MODIFIED", edited(rc, **change))
        assert queued(r) == [("ray", "demo")], change
    assert fingerprint(rc) == fingerprint(edited(rc, resourceVersion="99"))


async def test_work_is_queued_once_and_a_deleted_cluster_is_forgotten() -> None:
    """The same key twice: once; DELETED queues nothing and a re-created cluster is queued."""
    r, _ = runner()
    r.enqueue(("ray", "demo"))
    r.enqueue(("ray", "demo"))
    assert queued(r) == [("ray", "demo")]
    rc = edited(raycluster(worker("cpu")), generation=1)
    r._changed("ray", "ADDED", rc)
    assert queued(r) == [("ray", "demo")]
    r._changed("ray", "DELETED", rc)
    assert queued(r) == []
    r._changed("ray", "ADDED", rc)  # the same name made again
    assert queued(r) == [("ray", "demo")]


async def test_a_stale_cluster_is_requeued_later_each_time_it_stays_stale() -> None:
    """1 s, 2 s, 4 s ...; a round that is not stale resets it."""
    slept: list[float] = []
    r, _ = runner(slept=slept)
    for _ in range(3):
        r._after(("ray", "demo"), Outcome.STALE)
    await asyncio.gather(*r._later)
    assert sorted(slept) == [1.0, 2.0, 4.0]
    assert queued(r) == [("ray", "demo")]
    r._after(("ray", "demo"), Outcome.UNCHANGED)
    r._after(("ray", "demo"), Outcome.STALE)
    await asyncio.gather(*r._later)
    assert slept[-1] == 1.0


def test_a_round_that_crashes_is_counted_failed_and_the_others_go_on() -> None:
    """A bug in one round: logged, counted failed, the unit of work ends normally."""
    store = FakeStore(raycluster(worker("cpu")))

    def broken(namespace: str, name: str) -> None:
        raise KeyError("bug")

    store.get_cluster = broken  # type: ignore[method-assign,assignment]
    r, registry = runner(store)
    assert r._do(("ray", "demo")) == {("ray", "demo"): Outcome.FAILED}
    labels = {"outcome": "failed"}
    assert registry.get_sample_value("ray_scaler_controller_rounds_total", labels) == 1
    assert r._do(("ray", "")) == {("ray", "demo"): Outcome.CHANGED}


async def test_a_watch_that_ends_is_opened_again_and_the_namespace_passed() -> None:
    """410 Gone: listed and opened again at once; any other failure: after 0.2 s, then 0.4 s;
    each counted, each followed by a pass of the namespace (events may have been missed)."""
    slept: list[float] = []
    r, registry = runner(slept=slept)
    ends: Iterator[BaseException] = iter(
        [
            k8s.ApiException(status=410, reason="Expired"),
            k8s.ApiException(status=500),
            ConnectionResetError(),
            asyncio.CancelledError(),
        ]
    )

    def stream(*args: Any) -> str:
        raise next(ends)

    r._stream = stream  # type: ignore[method-assign,assignment]
    with pytest.raises(asyncio.CancelledError):
        await r._watch("ray")
    assert slept == [0.0, 0.2, 0.4]
    labels = {"namespace": "ray"}
    assert registry.get_sample_value("ray_scaler_controller_watch_restarts_total", labels) == 3
    assert queued(r) == [("ray", "")]
