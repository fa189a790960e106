"""KubeRay mode, the whole loop against a real control plane, real KEDA and the real KubeRay
operator (see ``real_kuberay``): KEDA's HPA scales a RayWorkerGroup, the agent applies it to the
RayCluster, KubeRay creates and deletes the worker pods.

One ordered story over one loop and one seed workload (the module-scoped ``loop``, ``seed``,
``timeline`` and ``recorder``): run the whole module, in file order; a seed test picked alone
(``-k``, a node id) fails.

- ``test_seed_reaches_exactly_ten_pods_through_the_hpa_on_the_rayworkergroup`` scales to 10
  pods and starts the seed's short tasks;
- ``test_exactly_the_drained_idle_pods_go_while_someone_edits_the_raycluster`` follows it (it
  starts the short tasks too, so it also runs alone);
- ``test_held_tasks_end_and_the_group_goes_to_zero`` needs the short tasks started by one of the
  two above (it waits for all 20 tasks done).

``test_an_edited_group_is_planned_with_its_new_bounds_without_a_restart`` and
``test_in_tree_autoscaling_is_refused`` each stand alone on the loop (the refusal last: it leaves
the RayCluster refused). The suite's summary ends with one ``e2e-kuberay:`` line. Every pod (head
with the agent sidecar, workers, the scaler) runs on the real node from the product's own images.
``make e2e-local`` runs the module (with the other real-node modules); alone, inside the bed (as
the Makefile's ``BED``)::

    KRS_E2E_BIN="$(bash e2e/build.sh)" KRS_E2E_IMAGES="$(.venv/bin/python e2e/images.py)" \\
      bash e2e/netns.sh .venv/bin/pytest -q -n 0 tests/real/control_plane/test_real_kuberay.py

Build: ``e2e/build.sh`` (the ``kuberay`` component: ray-operator v1.5.1 from its Go module,
``KRS_KUBERAY_VERSION`` for another) and
``e2e/images.py``; run inside ``e2e/netns.sh``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from bed import Bed
from control_plane import wait_until
from kubernetes import client
from real_kuberay import (
    CLUSTER,
    FIGURES,
    GROUP,
    NAMESPACE,
    RC,
    RWG,
    WORKER_GROUP,
    Editor,
    GroupRecorder,
    KubeRayLoop,
    kuberay_loop,
)
from real_loop import (
    EXPECTED_PODS,
    IDLE_TIMEOUT_S,
    RAY_TASK_RETRIES,
    REAL_LOOP_MARKS,
    SEED_SHORT,
    SEED_TASKS,
    SEED_WAVES,
    SHORT_S,
    Timeline,
    Workload,
)

pytestmark = REAL_LOOP_MARKS


@pytest.fixture(scope="module")
def loop(bed: Bed) -> Iterator[KubeRayLoop]:
    """The KubeRay loop on the real node, once for the module; the RayWorkerGroup reconciled
    at 0 pods."""
    FIGURES["node"] = "real"
    with kuberay_loop(bed) as started:
        wait_until(
            lambda: (started.worker_group().get("status") or {}).get("selector"),
            timeout_s=120,
            what="the RayWorkerGroup's status.selector",
        )
        yield started


@pytest.fixture(scope="module")
def timeline(loop: KubeRayLoop) -> Iterator[Timeline]:
    """The agent's /metrics sampled in the background (victims and busy pods)."""
    started = Timeline(loop.base.apps, loop.base.agent_url).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def recorder(loop: KubeRayLoop) -> Iterator[GroupRecorder]:
    """Every name KubeRay is told to delete, and the largest replicas."""
    started = GroupRecorder(loop).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def seed(loop: KubeRayLoop, timeline: Timeline, recorder: GroupRecorder) -> Iterator[Workload]:
    """20 tasks of {CPU: 5}: 16 of SHORT_S seconds once started (by the seed test, when its
    10 pods are there: see test_real_control_plane's seed), 4 held until released."""
    workload = loop.base.submit(SEED_WAVES, wait_for_start=True, retries=RAY_TASK_RETRIES)
    yield workload
    workload.release()
    workload.stop()


def _deleted_since(loop: KubeRayLoop, since: float) -> list[tuple[str, float]]:
    """Pods of the workload's group whose deletion began since ``since``, with the time.

    Only the cpu group's: the example's gpu group is not pinned to the real node and asks for
    ``nvidia.com/gpu``, so a pod KEDA's fallback gives it is unschedulable: the agent says so
    and KubeRay deletes it by name (pods that do not join, issue "faults"), a deletion of its
    own that this count is not about."""
    return loop.pod_watch.deleted_since(since, GROUP)


def test_seed_reaches_exactly_ten_pods_through_the_hpa_on_the_rayworkergroup(
    loop: KubeRayLoop, seed: Workload, recorder: GroupRecorder
) -> None:
    """20 pending {CPU: 5} tasks on 10-CPU pods: KEDA's HPA on the RayWorkerGroup, the agent's
    patch and KubeRay's operator make exactly 10 worker pods."""
    try:
        _seed_reaches_ten(loop, recorder)
    finally:
        seed.start()  # the short tasks run now, whatever happened


def _seed_reaches_ten(loop: KubeRayLoop, recorder: GroupRecorder) -> None:
    started = time.monotonic()
    loop.wait_pods(EXPECTED_PODS, 300)
    FIGURES["demand to 10 Ray nodes"] = f"{time.monotonic() - started:.1f} s"
    time.sleep(5)  # a target above 10 would show within an HPA sync or two
    # healthy pods are never taken for pods that will not join (that would cost capacity)
    failures = loop.base.agent_counter("ray_scaler_agent_join_failures_total", group=GROUP)
    FIGURES["join failures"] = f"{failures:.0f}"
    assert failures == 0
    assert len(loop.pods()) == EXPECTED_PODS
    assert loop.group_spec()["replicas"] == EXPECTED_PODS
    assert recorder.max_replicas == EXPECTED_PODS
    hpas = client.AutoscalingV2Api(
        loop.base.core.api_client
    ).list_namespaced_horizontal_pod_autoscaler(NAMESPACE)
    refs = {(h.spec.scale_target_ref.kind, h.spec.scale_target_ref.name) for h in hpas.items}
    assert ("RayWorkerGroup", WORKER_GROUP) in refs
    wait_until(
        lambda: loop.worker_group()["status"]["replicas"] == EXPECTED_PODS,
        timeout_s=30,
        what="status.replicas 10",
    )


def test_exactly_the_drained_idle_pods_go_while_someone_edits_the_raycluster(
    loop: KubeRayLoop, seed: Workload, timeline: Timeline, recorder: GroupRecorder
) -> None:
    """After the short tasks: KubeRay deletes exactly the drained victims named in
    workersToDelete, no pod with a task; another writer's edits (every 50 ms) all survive."""
    seed.start()  # done by the seed test; again here so this test also runs alone
    wait_until(
        lambda: seed.count("done") >= SEED_SHORT, timeout_s=SHORT_S + 180, what="short tasks"
    )
    assert seed.count("failed") == 0
    # The edits start with the scale-down (the idle pods' 5 s idle timeout runs from now), not
    # while pods start: 20 writes/s each reconciled by KubeRay starved ten raylets starting on
    # two cores past ray start's 30 s limit, again and again (CI, stop 25)
    editor = Editor(loop).start()
    try:
        # a held task whose first pod went before it ran (a raylet that timed out at start)
        # is placed again: the held tasks' pods are the busy ones once all four run
        wait_until(
            lambda: seed.running(range(SEED_SHORT, SEED_TASKS)),
            timeout_s=180,
            what="the held tasks running",
        )
        busy = seed.busy_pods()  # pods running a held task now (the workload's own markers)
        assert 2 <= len(busy) <= 4, busy  # 4 held tasks of 5 CPUs on 10-CPU pods
        idle_at, idle_at_wall = time.monotonic(), time.time()
        wait_until(
            lambda: set(loop.pods()) == set(busy),
            timeout_s=180,
            what="only the busy pods left",
            interval_s=0.2,
        )
        FIGURES["idle to deletion"] = f"{time.monotonic() - idle_at:.1f} s"
    finally:
        editor.stop()
    # a deleted pod is gone once its container ended: up to its grace period (30 s, the
    # default) when ``ray start`` is slow to stop under load, then the kubelet's report
    wait_until(lambda: loop.pod_watch.live_pods(GROUP) == busy, timeout_s=90, what="deletions seen")
    deleted = _deleted_since(loop, 0.0)
    named, randomly = loop.operator_deletions()
    not_named = [pod for pod, _ in deleted if pod not in named]
    FIGURES["non-victim pods deleted"] = str(len(not_named))
    FIGURES["conflicts re-decided"] = (
        f"{loop.base.agent_counter('ray_scaler_kuberay_conflicts_total'):g}"
    )
    # Every pod but the busy ones went, each named and a victim when it went. More pods than 10
    # came when one went before the scale-down (with the test's 5 s idle timeout a pod that
    # joined idle can be drained before Ray hands it a queued task; KubeRay then makes another:
    # seen once in three runs): the figures say which and why.
    created = {pod for pod, _ in loop.pod_watch.created_since(0.0, GROUP)}
    early = [_early(pod, at, seed, timeline) for pod, at in deleted if at < idle_at_wall]
    FIGURES["most pods"] = str(recorder.max_replicas)
    if recorder.max_replicas > EXPECTED_PODS:  # the export the HPA saw (scrape, refresh, sync)
        FIGURES["at the most pods"] = timeline.describe_at(recorder.max_at - 4.0)
    FIGURES["pods created"] = str(len(created))
    FIGURES["pods gone before the scale-down"] = ", ".join(early) or "none"
    assert {pod for pod, _ in deleted} == created - busy, (sorted(created), busy, early)
    assert not_named == [] and randomly == set()
    for pod, at in deleted:
        assert pod not in busy
        assert timeline.ever_victim(pod, before=at), f"{pod} deleted without being a victim"
    annotations = loop.raycluster()["metadata"].get("annotations") or {}
    assert editor.written > 0 and annotations[Editor.KEY] == str(editor.written)
    assert loop.group_spec()["replicas"] == len(busy)
    assert loop.base.agent_counter("ray_scaler_wrong_victims_total") == 0
    wait_until(
        lambda: loop.worker_group()["status"]["replicas"] == len(busy),
        timeout_s=30,
        what="status.replicas = busy pods",
    )


def _early(pod: str, at: float, seed: Workload, timeline: Timeline) -> str:
    """A pod deleted before the scale-down: when, why, and what the agent exported when it
    first named it (a victim) or said it would not join (failing)."""
    if timeline.ever_failing(pod, before=at):
        return f"{pod} at {at - seed.submitted_at:.0f} s (failing)"
    named = timeline.first_victim(pod)
    seen = timeline.describe_at(named) if named is not None else "never seen a victim"
    return f"{pod} at {at - seed.submitted_at:.0f} s (victim; then: {seen})"


def test_held_tasks_end_and_the_group_goes_to_zero(
    loop: KubeRayLoop, seed: Workload, recorder: GroupRecorder
) -> None:
    """The held tasks end: their pods are drained and named; KEDA takes the group to 0."""
    seed.release()
    events = seed.wait(120)
    assert sum(e["event"] == "done" for e in events) == SEED_TASKS
    released = time.monotonic()
    loop.wait_pods(0, 180)
    FIGURES["to zero after the last task"] = f"{time.monotonic() - released:.1f} s"
    named, randomly = loop.operator_deletions()
    assert randomly == set()
    for pod, _ in _deleted_since(loop, 0.0):
        assert pod in named, f"{pod} deleted by KubeRay without being named"


#: The agent's poll count (its poll-duration histogram), and the groups' bounds it exports.
POLLS = "ray_scaler_agent_poll_duration_seconds_count"
MIN, MAX = "ray_scaler_worker_group_min_replicas", "ray_scaler_worker_group_max_replicas"
IDLE = "ray_scaler_node_idle_since_timestamp_seconds"
SNAPSHOT_TIME = "ray_scaler_snapshot_timestamp_seconds"
#: Polls from a RayCluster edit to its values exported: the poll running at the edit (it may
#: have read the groups before), the next one (it plans with the edit), one for the watch
#: event's way through a busy API server.
EDIT_POLLS = 3


def _idle_s(loop: KubeRayLoop) -> dict[str, float]:
    """Each exported pod's idle time: the snapshot's time minus its idle-since time (0: busy).
    The time is read first: a poll between the two reads makes the idle time shorter, never
    longer."""
    now = loop.agent_series(SNAPSHOT_TIME, "cluster").get(CLUSTER, 0.0)
    return {p: now - t if t > 0 else 0.0 for p, t in loop.agent_series(IDLE, "pod").items()}


def _edit(loop: KubeRayLoop, low: int, high: int) -> int:
    """Set the cpu group's minReplicas and maxReplicas in the RayCluster; wait until the
    running agent exports them; the polls it took (asserted within ``EDIT_POLLS``)."""
    loop.patch_group(minReplicas=low, maxReplicas=high)
    before = loop.agent_series(POLLS, "cluster")[CLUSTER]
    wait_until(
        lambda: (
            (
                loop.agent_series(MIN, "group").get(GROUP),
                loop.agent_series(MAX, "group").get(GROUP),
            )
            == (low, high)
        ),
        timeout_s=60,
        what=f"min {low} max {high} exported",
        interval_s=0.1,
    )
    polls = int(loop.agent_series(POLLS, "cluster")[CLUSTER] - before)
    assert polls <= EDIT_POLLS, f"{polls} polls to export min {low} max {high}"
    return polls


def test_an_edited_group_is_planned_with_its_new_bounds_without_a_restart(
    loop: KubeRayLoop, timeline: Timeline
) -> None:
    """The cpu group edited while the agent runs (issue 15): min and max 2 (max lowered from
    50), then min 1, then back to 0 and 50. Each edit is exported within a few polls; the pods
    follow: two kept idle past their idle timeout at min 2 (never victims), exactly one drained
    and named at min 1, the last at min 0; the agent container never restarts and counts each
    change. (maxReplicas is never lowered below the pods there are: KubeRay's operator clamps
    ``replicas`` to it and deletes the excess pods at random, whoever scales the group.)"""
    original = loop.group_spec()
    loop.wait_pods(0, 180)  # the earlier tests' pods gone (none when run alone)
    restarts = loop.agent_restarts()
    changes = loop.base.agent_counter("ray_scaler_agent_spec_changes_total")
    polls: list[int] = []
    try:
        polls.append(_edit(loop, 2, 2))
        loop.wait_pods(2, 300)
        pods = set(loop.pods())
        # both idle past their idle timeout, seen by the agent: at min 2 neither is a victim
        wait_until(
            lambda: all(_idle_s(loop).get(p, 0.0) >= IDLE_TIMEOUT_S + 3 for p in pods),
            timeout_s=120,
            what="both pods idle past their idle timeout",
        )
        assert not any(timeline.ever_victim(p, before=time.time()) for p in pods)
        assert set(loop.pods()) == pods
        polls.append(_edit(loop, 1, 2))
        loop.wait_pods(1, 180)
        (kept,) = loop.pods()
        assert kept in pods
    finally:
        polls.append(_edit(loop, original["minReplicas"], original["maxReplicas"]))
    loop.wait_pods(0, 180)
    FIGURES["polls from an edit to its export"] = ", ".join(map(str, polls))
    assert loop.agent_restarts() == restarts
    assert loop.base.agent_counter("ray_scaler_agent_spec_changes_total") - changes == 3
    named, randomly = loop.operator_deletions()
    assert randomly == set() and pods <= named
    for pod, at in _deleted_since(loop, 0.0):
        if pod in pods:
            assert timeline.ever_victim(pod, before=at), f"{pod} deleted without being a victim"
    wait_until(lambda: loop.group_spec()["replicas"] == 0, timeout_s=60, what="replicas 0")


def _refused(loop: KubeRayLoop) -> float:
    """The scaler's UNAVAILABLE answers to KEDA's polls so far (its own count)."""
    return sum(
        loop.base.scaler_counter("keda_ray_scaler_rpcs_total", method=m, code="UNAVAILABLE")
        for m in ("GetMetrics", "IsActive")
    )


def _answered(loop: KubeRayLoop) -> float:
    """The scaler's OK answers to KEDA's GetMetrics so far."""
    return loop.base.scaler_counter("keda_ray_scaler_rpcs_total", method="GetMetrics", code="OK")


def test_missing_data_at_zero_starts_no_pod(loop: KubeRayLoop) -> None:
    """At zero, Prometheus down: KEDA polls on, is refused each time, and the group stays at
    zero. The KubeRay example's ScaledObjects have no ``fallback``: one, of any behavior, would
    count as active on KEDA 2.19+ and start a pod after ``failureThreshold`` refusals
    (docs/design/keda-fallback.md, Finding 4). After the edits' test: run before it, that test
    once saw a pod named for deletion that the timeline never sampled as a victim (open)."""
    loop.wait_pods(0, 180)
    # No pod's series left in the agent's export before Prometheus stops: a restarted Prometheus
    # forgets which series a target stopped exporting, so those would stay live for its 5 min
    # lookback and, under this agent's origin, fail the scaler's digest check for the next
    # cluster of the name (seen: a victim's 6 series, the labels module refused for 5 min).
    wait_until(lambda: not loop.agent_series(IDLE, "pod"), timeout_s=180, what="no pod exported")
    since, before = time.time(), _refused(loop)
    loop.base.prometheus.stop()
    try:
        wait_until(  # twice the refusals a fallback's failureThreshold (3) waits out
            lambda: _refused(loop) >= before + 6, timeout_s=180, what="KEDA refused 6 times"
        )
    finally:
        loop.base.prometheus.start()
    refused_s = time.time() - since
    answered = _answered(loop)
    wait_until(lambda: _answered(loop) > answered, timeout_s=120, what="the scaler answering")
    assert loop.pod_watch.created_since(since, GROUP) == []
    FIGURES["at zero, data missing"] = (
        f"{_refused(loop) - before:.0f} refusals over {refused_s:.1f} s, pods made 0"
    )


def test_in_tree_autoscaling_is_refused(loop: KubeRayLoop) -> None:
    """enableInTreeAutoscaling true: Ready=False InTreeAutoscaling naming the fix, a log line,
    and the group's replicas untouched while new demand arrives."""
    loop.custom.patch_namespaced_custom_object(
        *RC[:2],
        NAMESPACE,
        RC[2],
        CLUSTER,
        {"spec": {"enableInTreeAutoscaling": True}},
        _content_type="application/merge-patch+json",
    )
    ready = wait_until(
        lambda: (c := loop.condition("Ready")).get("reason") == "InTreeAutoscaling" and c,
        timeout_s=30,
        what="the refusal condition",
    )
    assert ready["status"] == "False"
    assert "enableInTreeAutoscaling: false" in ready["message"]
    log = loop.agent_log()
    assert "RayCluster refused" in log and "enableInTreeAutoscaling: false" in log
    work = loop.base.submit([(0.0, [5.0])])
    try:
        # A pod asked for on the RayWorkerGroup's /scale, as KEDA's HPA asks (written here: at
        # zero KEDA asks only once the scaler answers, and this test is about the agent) ...
        loop.custom.patch_namespaced_custom_object_scale(
            *RWG[:2], NAMESPACE, RWG[2], WORKER_GROUP, {"spec": {"replicas": 1}}
        )
        wait_until(
            lambda: (loop.worker_group().get("spec") or {}).get("replicas", 0) >= 1,
            timeout_s=90,
            what="the RayWorkerGroup asking for a pod",
        )
        # ... and the agent, polling on, never applies it to the refused RayCluster
        polls = loop.agent_series(POLLS, "cluster")[CLUSTER]
        wait_until(
            lambda: loop.agent_series(POLLS, "cluster")[CLUSTER] >= polls + EDIT_POLLS,
            timeout_s=60,
            what=f"{EDIT_POLLS} agent polls after KEDA's ask",
        )
        assert loop.group_spec()["replicas"] == 0
        assert loop.pods() == {}
    finally:
        work.stop()
