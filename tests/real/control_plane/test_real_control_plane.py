"""The whole loop against a real Kubernetes control plane and real KEDA (see ``real_loop``).

One ordered story over one loop and one seed workload (the module-scoped ``loop`` and ``seed``):
run the whole module, in file order; a seed test picked alone (``-k``, a node id) fails.

- ``test_seed_example_scales_the_deployment_to_exactly_ten`` scales to 10 pods and starts the
  seed's short tasks;
- ``test_idle_pods_go_and_busy_pods_stay`` follows it (it starts the short tasks too, so it also
  runs alone);
- ``test_missing_data_never_lowers_the_replicas`` needs the pods one of the two above leaves
  (at least 2 replicas to hold);
- ``test_keda_takes_the_group_to_zero_once_every_pod_is_a_victim`` needs the short tasks started
  by one of the first two (it waits for all 20 tasks done).

The tests after them (from zero by polling and by push, random cycles, the lowered maximum, the
cost race) each stand alone on the loop. ``make e2e-local`` runs the module (with the other
real-node modules); alone, inside the bed (as the Makefile's ``BED``)::

    KRS_E2E_BIN="$(bash e2e/build.sh)" KRS_E2E_IMAGES="$(.venv/bin/python e2e/images.py)" \\
      bash e2e/netns.sh .venv/bin/pytest -q -n 0 tests/real/control_plane/test_real_control_plane.py

Real: etcd, kube-apiserver (RBAC, Node authorization, aggregation), kube-controller-manager
(HPA, ReplicaSet, Deployment controllers), kube-scheduler, a real node (kubelet, containerd,
runc) running the head pod with the agent sidecar, the worker pods and the scaler's pod from
the product's own images, KEDA's operator and metrics adapter, Prometheus, Ray, mTLS. Not real:
KEDA and Prometheus run as processes beside the node (in its network namespace), and so do
kube-proxy and CoreDNS, which this Ray cluster does not use (see ``ray_on_node``). Each step
prints its figures, and the suite's summary ends with one ``e2e-local:`` line.

Build: ``e2e/build.sh`` and ``e2e/images.py`` (run by ``make e2e-local`` / ``make test``; cached
outside the repository); run inside ``e2e/netns.sh``.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator

import pytest
from bed import Bed
from control_plane import wait_until
from real_loop import (
    EXPECTED_PODS,
    FIGURES,
    GROUP,
    HOLD_S,
    IDLE_TIMEOUT_S,
    POLLING_INTERVAL_S,
    RAY_TASK_RETRIES,
    REAL_LOOP_MARKS,
    SEED_SHORT,
    SEED_TASKS,
    SEED_WAVES,
    SHORT_S,
    RealLoop,
    Workload,
    real_loop,
)

pytestmark = REAL_LOOP_MARKS

FAULT_S = 8.0  # > KEDA's cooldownPeriod (5 s in the overlay): a scale to zero would show
CYCLES = 7  # waves 6 s apart: about 40 s of waves (tasks 1-5 s, idle timeout 5 s)
RNG_SEED = int(os.environ.get("KRS_E2E_SEED", "20261123"))


@pytest.fixture(scope="module")
def loop(bed: Bed) -> Iterator[RealLoop]:
    """The real loop on the real node, once for the module."""
    FIGURES["node"] = "real"
    with real_loop(bed) as started:
        # each Deployment's default replica, drained and scaled in by KEDA
        started.wait_replicas(0, 180)
        yield started


@pytest.fixture(scope="module")
def seed(loop: RealLoop) -> Iterator[Workload]:
    """20 tasks of {CPU: 5}: 16 of SHORT_S seconds once started, 4 held until released.

    The short tasks' seconds begin when the seed test has seen its 10 pods (``start``): how
    many pods 20 tasks need must not depend on how fast pods join (on a loaded node the short
    tasks used to finish on 6 or 7 pods before the others came, and 10 were never needed)."""
    workload = loop.submit(SEED_WAVES, wait_for_start=True, retries=RAY_TASK_RETRIES)
    yield workload
    workload.release()
    workload.stop()


def _max_replicas(loop: RealLoop, since: float) -> int:
    assert loop.timeline is not None
    return max((s.replicas for s in loop.timeline.replicas(since=since)), default=0)


def _why_above_ten(loop: RealLoop, since: float) -> str:
    """The replica changes above 10 and what the agent saw around them (for a failure)."""
    assert loop.timeline is not None
    timeline = loop.timeline
    above = [s for s in timeline.replicas(since=since) if s.replicas > EXPECTED_PODS]
    if not above:
        return ""
    first = above[0].at
    near = [a for a in timeline.agent if first - 30 <= a.at <= first]
    seen = near[-1] if near else None
    changes = [(round(s.at - since, 1), s.replicas, s.ready) for s in above]
    lines = [f"replicas above {EXPECTED_PODS} (s after the demand, replicas, Ready): {changes}"]
    if seen is not None:
        lines.append(
            f"agent {first - seen.at:.1f} s before: pods {len(seen.pods)}, busy {len(seen.busy)}, "
            f"victims {sorted(seen.victims)}, failing {sorted(seen.failing)}, "
            f"live {len(seen.live)}, their CPUs {seen.cpus:g}, demand {list(seen.demand)}, "
            f"poll ok {seen.success}"
        )
    failing = sorted({pod for a in near for pod in a.failing})
    lines.append(f"failing within 30 s before: {failing}")
    changes_seen: list[tuple[float, int, int, float]] = []  # (s before, pods, live, tasks)
    for a in near:
        now = (len(a.pods), len(a.live), sum(n for _, n in a.demand))
        if not changes_seen or changes_seen[-1][1:] != now:
            changes_seen.append((round(first - a.at, 1), *now))
    lines.append(f"agent 30 s before (s before, pods, live, pending bundles): {changes_seen}")
    return "; ".join(lines)


def _deleted_since(loop: RealLoop, since: float) -> list[tuple[str, float]]:
    """Pods of the workload's group whose deletion began since ``since``, with the time.

    Only the cpu group's: during each fault, KEDA's fallback (``replicas: 1``) gives the gpu
    group, at zero, a pod that KEDA takes away again on recovery, often before it joined Ray
    (see docs/testing.md: what the real node showed)."""
    return loop.pods.deleted_since(since, GROUP)


def test_seed_example_scales_the_deployment_to_exactly_ten(loop: RealLoop, seed: Workload) -> None:
    """20 pending {CPU: 5} tasks on 10-CPU pods: KEDA's HPA takes the Deployment to 10 Ready."""
    try:
        _seed_reaches_ten(loop, seed)
    finally:
        seed.start()  # the short tasks run now, whatever happened


def _seed_reaches_ten(loop: RealLoop, seed: Workload) -> None:
    loop.wait_replicas(EXPECTED_PODS, 300)
    assert loop.timeline is not None
    timeline = loop.timeline

    def first_ready() -> float | None:  # the watch may deliver it a moment after the read
        samples = timeline.replicas(since=seed.submitted_at)
        return min((s.at for s in samples if s.ready == EXPECTED_PODS), default=None)

    ready_at = wait_until(first_ready, timeout_s=15, what="the watch to show 10 Ready")
    FIGURES["seed: 10 Ready pods after"] = f"{ready_at - seed.submitted_at:.1f} s"
    wait_until(
        lambda: len(loop.pods.running_pods(GROUP) & loop.ray_pods()) == EXPECTED_PODS,
        timeout_s=60,
        what="10 Ready pods that are Ray nodes",
    )
    time.sleep(5)  # a target above 10 would show within an HPA sync or two
    memory = loop.node.rss_mb()
    FIGURES["memory at 10 pods"] = (
        f"pods {memory['pods']:.0f} MB, kubelet {memory['kubelet']:.0f} MB, "
        f"containerd {memory['containerd']:.0f} MB, shims {memory['shims']:.0f} MB"
    )
    assert loop.deployment() == (EXPECTED_PODS, EXPECTED_PODS)
    assert _max_replicas(loop, seed.submitted_at) == EXPECTED_PODS, _why_above_ten(
        loop, seed.submitted_at
    )
    # healthy pods are never taken for pods that will not join (that would cost capacity)
    failures = loop.agent_counter("ray_scaler_agent_join_failures_total", group=GROUP)
    FIGURES["join failures"] = f"{failures:.0f}"
    assert failures == 0


def test_idle_pods_go_and_busy_pods_stay(loop: RealLoop, seed: Workload) -> None:
    """After the short tasks, exactly the drained victims are deleted; pods with tasks stay."""
    seed.start()  # done by the seed test; again here so this test also runs alone
    wait_until(
        lambda: seed.count("done") >= SEED_SHORT, timeout_s=SHORT_S + 180, what="short tasks"
    )
    assert seed.count("failed") == 0
    assert loop.timeline is not None
    timeline = loop.timeline
    # a held task whose first pod went before it ran (a raylet that timed out at start)
    # is placed again: the held tasks' pods are the busy ones once all four run
    wait_until(
        lambda: seed.running(range(SEED_SHORT, SEED_TASKS)),
        timeout_s=180,
        what="the held tasks running",
    )
    busy = seed.busy_pods()
    assert 2 <= len(busy) <= 4, busy  # 4 held tasks of 5 CPUs on 10-CPU pods
    done_at = time.time()
    loop.wait_replicas(len(busy), 120)
    FIGURES["idle pods removed after"] = f"{time.time() - done_at:.1f} s"
    assert set(loop.worker_pods()) == set(busy)
    wait_until(lambda: loop.pods.live_pods(GROUP) == busy, timeout_s=30, what="deletions seen")
    deleted = _deleted_since(loop, seed.submitted_at)
    # At least the ten less the busy ones; more when a pod came and went idle in between (KEDA's
    # start-up fallback pod, or a pod that joined after the demand had moved): each still a victim.
    assert len(deleted) >= EXPECTED_PODS - len(busy), deleted
    for pod, at in deleted:
        assert timeline.held_nothing(pod, at), f"{pod} deleted without being a victim"
        assert pod not in busy
    assert _max_replicas(loop, seed.submitted_at) == EXPECTED_PODS, _why_above_ten(
        loop, seed.submitted_at
    )
    assert timeline.agent[-1].wrong_victims == 0


@pytest.mark.parametrize("fault", ["agent", "prometheus", "scaler"])
def test_missing_data_never_lowers_the_replicas(loop: RealLoop, seed: Workload, fault: str) -> None:
    """Agent, Prometheus or scaler down: replicas hold while KEDA sees it; they recover after."""
    assert loop.timeline is not None
    held = loop.deployment()[0]
    assert held >= 2
    start = time.time()
    stop, restart = {
        "agent": (loop.stop_agent, loop.start_agent),
        "prometheus": (loop.prometheus.stop, loop.prometheus.start),
        "scaler": (loop.stop_scaler, loop.start_scaler),
    }[fault]
    stop()
    seen = wait_until(loop.keda_sees_the_failure, timeout_s=60, what="KEDA to see it")
    seen_after = time.time() - start
    time.sleep(max(0.0, FAULT_S - seen_after))
    assert loop.deployment()[0] == held
    restart()
    restarted = time.time()
    wait_until(loop.keda_recovered, timeout_s=90, what="KEDA to recover")
    FIGURES[f"{fault} down"] = (
        f"{seen} after {seen_after:.1f} s, recovered {time.time() - restarted:.1f} s after restart"
    )
    time.sleep(2 * POLLING_INTERVAL_S)
    assert min(s.replicas for s in loop.timeline.replicas(since=start)) == held
    assert loop.deployment()[0] == held


def test_keda_takes_the_group_to_zero_once_every_pod_is_a_victim(
    loop: RealLoop, seed: Workload
) -> None:
    """The held tasks end: their pods are drained and KEDA (IsActive false) scales to 0."""
    released = time.time()
    seed.release()
    events = seed.wait(120)
    assert sum(e["event"] == "done" for e in events) == SEED_TASKS
    assert not [e for e in events if e["event"] == "failed"]
    loop.wait_replicas(0, 180)
    FIGURES["to zero after the last task"] = f"{time.time() - released:.1f} s"
    assert loop.worker_pods() == {}
    for pod, at in _deleted_since(loop, seed.submitted_at):
        assert loop.timeline is not None and loop.timeline.held_nothing(pod, at), pod


def _time_to_first_ready(loop: RealLoop) -> float:
    """One 2 s task at zero: seconds until a pod of the group is Ready; the task then ends."""
    workload = loop.submit([(0.0, [2.0])])
    workload.wait(180)
    assert workload.count("done") == 1
    assert loop.timeline is not None
    timeline = loop.timeline

    def first_ready() -> float | None:  # from the watch: the pod may come and go between reads
        samples = timeline.replicas(since=workload.submitted_at)
        return min((s.at for s in samples if s.ready >= 1), default=None)

    first = wait_until(first_ready, timeout_s=15, what="the watch to show a Ready pod")
    return float(first) - workload.submitted_at


def test_new_demand_brings_the_group_back_from_zero_by_polling(loop: RealLoop) -> None:
    """At zero, one task: KEDA's IsActive poll (every 2 s) activates the group."""
    FIGURES["from zero, polling"] = f"{_time_to_first_ready(loop):.1f} s"
    loop.wait_replicas(0, 180)


def _streams_opened(loop: RealLoop) -> float:
    """``StreamIsActive`` streams the scaler pod has opened (its own count of the calls)."""
    return loop.scaler_counter("keda_ray_scaler_rpcs_total", method="StreamIsActive", code="OK")


def test_new_demand_brings_the_group_back_from_zero_by_push(loop: RealLoop) -> None:
    """With the external-push trigger and a 60 s polling interval, StreamIsActive wakes KEDA."""
    original = loop.scaled_object()["spec"]
    triggers = [dict(t, type="external-push") for t in original["triggers"]]
    opened = _streams_opened(loop)
    loop.patch_scaled_object({"spec": {"pollingInterval": 60, "triggers": triggers}})
    try:
        wait_until(
            lambda: (
                loop.scaled_object()["status"].get("externalMetricNames")
                and loop.condition("Ready") == "True"
            ),
            timeout_s=60,
            what="the push trigger ready",
        )
        wait_until(  # KEDA opens the stream when it (re)builds the scaler
            lambda: _streams_opened(loop) > opened,
            timeout_s=60,
            what="KEDA's StreamIsActive stream open on the scaler",
        )
        took = _time_to_first_ready(loop)
        FIGURES["from zero, push"] = f"{took:.1f} s"
        assert took < 45, "slower than a poll: the push did not wake KEDA"
    finally:
        loop.patch_scaled_object(
            {
                "spec": {
                    "pollingInterval": original["pollingInterval"],
                    "triggers": original["triggers"],
                }
            }
        )
    # Back to zero under the 2 s polling trigger: with the push trigger's 60 s polling interval
    # the way down waits for KEDA's next IsActive poll, which is not what this test measures.
    loop.wait_replicas(0, 180)


def test_random_cycles_delete_only_published_victims(loop: RealLoop) -> None:
    """Waves of random tasks: every deleted pod was a published victim; the agent agrees."""
    rng = random.Random(RNG_SEED)
    waves = [
        (n * 6.0, [round(rng.uniform(1.0, 5.0), 1) for _ in range(rng.randint(1, 6))])
        for n in range(CYCLES)
    ]
    workload = loop.submit(waves)
    events = workload.wait(CYCLES * 6.0 + 240)
    assert not [e for e in events if e["event"] == "failed"]
    assert sum(e["event"] == "done" for e in events) == sum(len(d) for _, d in waves)
    loop.wait_replicas(0, 180)
    assert loop.timeline is not None
    deleted = _deleted_since(loop, workload.submitted_at)
    not_victims = [p for p, at in deleted if not loop.timeline.held_nothing(p, at)]
    runs = [e for e in events if e["event"] == "done"]
    under_task = [
        p for p, at in deleted for r in runs if r["pod"] == p and r["start"] <= at <= r["end"]
    ]
    wrong = loop.timeline.agent[-1].wrong_victims
    FIGURES["cycles"] = (
        f"{CYCLES} waves (seed {RNG_SEED}), {len(runs)} tasks, {len(deleted)} pods deleted, "
        f"{len(not_victims)} not victims (agent: {wrong:g})"
    )
    assert deleted
    assert not_victims == []
    assert under_task == []
    assert wrong == 0


def test_a_lowered_max_replicas_removes_idle_pods_never_busy_ones(loop: RealLoop) -> None:
    """4 pods (1-2 busy), maxReplicas lowered to 2: idle pods above the cap go, busy ones stay."""
    assert loop.timeline is not None
    loop.restart_agent_with(idleTimeoutSeconds=600)  # idle pods stay unless a cap removes them
    try:
        # 8 held tasks need exactly 4 pods; released, the 4 pods stay (idle timeout 600 s)
        warm = loop.submit([(0.0, [-HOLD_S] * 8)])
        loop.wait_replicas(4, 180)
        wait_until(lambda: len(list(warm.markers.iterdir())) == 8, timeout_s=120, what="warm")
        warm.release()
        warm.wait(60)
        assert warm.count("done") == 8
        held = loop.submit([(0.0, [-HOLD_S] * 2)])
        wait_until(lambda: len(list(held.markers.iterdir())) == 2, timeout_s=60, what="held")
        busy = held.busy_pods()
        lowered = time.time()
        loop.restart_agent_with(maxReplicas=2)
        wait_until(
            lambda: len(loop.timeline.last_agent().victims) >= 2,  # type: ignore[union-attr]
            timeout_s=60,
            what="victims above the cap",
        )
        loop.patch_scaled_object({"spec": {"maxReplicaCount": 2}})
        loop.wait_replicas(2, 90)
        wait_until(lambda: len(loop.pods.live_pods(GROUP)) == 2, timeout_s=30, what="deletions")
        FIGURES["cap lowered 4 -> 2"] = f"{time.time() - lowered:.1f} s"
        assert busy <= set(loop.worker_pods())
        deleted = _deleted_since(loop, lowered)
        assert len(deleted) == 2
        assert all(loop.timeline.held_nothing(pod, at) for pod, at in deleted)
        assert held.count("failed") == 0
        held.release()
        held.wait(60)
        assert held.count("done") == 2
    finally:
        loop.patch_scaled_object({"spec": {"maxReplicaCount": 50}})
        loop.restart_agent_with(idleTimeoutSeconds=IDLE_TIMEOUT_S, maxReplicas=50)
    loop.wait_replicas(0, 180)


def test_pod_deletion_cost_race(loop: RealLoop) -> None:
    """How often the ReplicaSet takes another pod than the marked one, by delay; 0 with confirm."""
    from race import RaceResult, deletion_cost_race

    results: list[RaceResult] = deletion_cost_race(loop.cp, trials=5, delays_s=(1.0, 0.01, 0.0))
    FIGURES["cost race (wrong/trials by delay)"] = ", ".join(
        f"{r.label}: {r.wrong}/{r.trials}" for r in results
    )
    confirmed = [r for r in results if r.label == "confirm+settle"]
    assert confirmed and confirmed[0].wrong == 0
    assert all(r.trials == 5 for r in results)
