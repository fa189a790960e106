"""The fault matrix on the real node (issue "faults"): pods that never become Ray nodes.

One real loop (``real_loop``: control plane, KEDA, the real node, Prometheus, the scaler's and
the agent's own images; Deployment mode) with the example's ``cpu`` group and two more that the
overlay adds (:func:`fault_groups`):

- ``spot``: the same pods as ``cpu`` at half the price, pinned to a node that does not exist:
  the scheduler answers ``PodScheduled=False/Unschedulable``, as for spot capacity or a quota
  that never comes. The planner takes the cheaper group first.
- ``broken``: pods whose start command fails (``exit 3``): a real ``CrashLoopBackOff`` under the
  kubelet's back-off (capped at ``real_node.CRASH_LOOP_MAX_S``); only tasks asking the custom
  resource ``broken`` fit it.

The agent runs with a short back-off (``AGENT_FLAGS``) so that a test takes minutes. Each test
asserts: no task fails, no pod that runs a task is deleted, every pod that never joined is gone
within its detection plus one removal cycle and was a published victim first, the group never
holds more than one such pod at a time, and the groups end at their minimum. Figures go to the
``e2e-faults:`` summary line.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from bed import Bed
from containers import container_id, container_pids, signal_container
from control_plane import wait_until
from prometheus_client.parser import text_string_to_metric_families
from ray_on_node import SHARE_MOUNT
from real_loop import (
    GROUP,
    NAMESPACE,
    REAL_LOOP_MARKS,
    Docs,
    RealLoop,
    Workload,
    real_loop,
)

pytestmark = REAL_LOOP_MARKS

SPOT, BROKEN, SILENT = "spot", "broken", "silent"
WORKER_CONTAINER, HEAD_CONTAINER = "ray-worker", "ray-head"
#: the test's back-off: 10 s doubling to 40 s (defaults 30 s and 600 s: minutes per case)
BACKOFF_INITIAL_S = 10
#: the silent group's join timeout (default 300 s, Ray v2's)
SILENT_JOIN_TIMEOUT_S = 20
AGENT_FLAGS = [
    f"--backoff-initial={BACKOFF_INITIAL_S}",
    "--backoff-max=40",
    f"--join-timeout={SILENT}={SILENT_JOIN_TIMEOUT_S}",
    "--log-level=debug",  # each poll's demand as read and filtered, in KRS_AGENT_LOG
]
#: one removal cycle on the bed: victim marks + 1 s settle, KEDA's 2 s poll, the HPA's 10 s
#: scale-down window and sync, the kubelet's stop; with margin for two busy loops
REMOVAL_CYCLE_S = 60.0
#: the cpu trigger's maxAgeSeconds: under the 20 s GCS outage of case (d)
MAX_AGE_S = 10
GCS_OUTAGE_S, APISERVER_OUTAGE_S, START_DELAY_S = 20.0, 30.0, 30.0
FAULT_FIGURES: dict[str, str] = {}


# --- the overlay's additions ------------------------------------------------------------------


def _deployment(group: str) -> str:
    return f"ray-demo-{group}"


def _named(docs: Docs, kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def _as_group(doc: dict[str, Any], group: str) -> dict[str, Any]:
    """A copy of the cpu group's Deployment or ScaledObject for ``group``."""
    out = copy.deepcopy(doc)
    name = _deployment(group)
    out["metadata"]["name"] = name
    out["metadata"].setdefault("labels", {})["ray.io/group"] = group
    spec = out["spec"]
    if doc["kind"] == "Deployment":
        spec["selector"]["matchLabels"]["ray.io/group"] = group
        template = spec["template"]
        template["metadata"]["labels"]["ray.io/group"] = group
        for e in template["spec"]["containers"][0]["env"]:
            if e["name"] == "RAY_NODE_TYPE_NAME":
                e["value"] = group
    else:
        spec["scaleTargetRef"]["name"] = name
        spec["maxReplicaCount"] = 2
        spec["triggers"][0]["metadata"]["workerGroup"] = group
    return out


def fault_groups(docs: Docs) -> Docs:
    """The overlay plus the ``spot`` and ``broken`` groups and the agent's test flags."""
    deployment = _named(docs, "Deployment", f"ray-demo-{GROUP}")
    scaled = _named(docs, "ScaledObject", f"ray-demo-{GROUP}")
    spot, broken = _as_group(deployment, SPOT), _as_group(deployment, BROKEN)
    silent = _as_group(deployment, SILENT)
    quiet = silent["spec"]["template"]["spec"]["containers"][0]
    # Running, never a Ray node; it leaves at SIGTERM (a shell as PID 1 ignores it otherwise)
    quiet["command"] = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    quiet["args"] = []
    spot["spec"]["template"]["spec"]["nodeSelector"] = {"keda-ray-scaler.io/node": "nowhere"}
    worker = broken["spec"]["template"]["spec"]["containers"][0]
    worker["command"] = ["sh", "-c", "echo 'broken start command' >&2; exit 3"]
    worker["args"] = []
    (spec_map,) = [d for d in docs if d["kind"] == "ConfigMap" and "cluster.yaml" in d["data"]]
    spec = yaml.safe_load(spec_map["data"]["cluster.yaml"])
    cpu = next(g for g in spec["workerGroups"] if g["name"] == GROUP)
    spec["workerGroups"] += [
        {**cpu, "name": SPOT, "maxReplicas": 2, "cost": cpu["cost"] / 2},
        {
            **cpu,
            "name": BROKEN,
            "maxReplicas": 2,
            "resources": {**cpu["resources"], BROKEN: 1},
            "cost": cpu["cost"] * 2,  # never the choice for tasks cpu can run
        },
        {
            **cpu,
            "name": SILENT,
            "maxReplicas": 2,
            "resources": {**cpu["resources"], SILENT: 1},
            "cost": cpu["cost"] * 2,
        },
    ]
    spec_map["data"]["cluster.yaml"] = yaml.safe_dump(spec, sort_keys=False)
    # stale data turns UNAVAILABLE (KEDA holds the replicas) within the GCS outage
    scaled["spec"]["triggers"][0]["metadata"]["maxAgeSeconds"] = str(MAX_AGE_S)
    head = _named(docs, "Deployment", "ray-demo-head")
    (agent,) = [c for c in head["spec"]["template"]["spec"]["containers"] if c["name"] == "agent"]
    agent["args"] += AGENT_FLAGS
    extra = [spot, broken, silent]
    return [*docs, *extra, *(_as_group(scaled, g) for g in (SPOT, BROKEN, SILENT))]


# --- reading the agent --------------------------------------------------------------------------


def agent_series(loop: RealLoop) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of the agent's /metrics now: (name, labels, value)."""
    text = requests.get(loop.agent_url, timeout=2).text
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def failing_pods(loop: RealLoop, group: str) -> dict[str, str]:
    """The group's pods the agent exports as failing: pod -> reason."""
    return {
        labels["pod"]: labels.get("reason", "")
        for name, labels, _ in agent_series(loop)
        if name == "ray_scaler_node_info"
        and labels.get("group") == group
        and labels.get("state") == "failing"
    }


def agent_value(loop: RealLoop, metric: str, **labels: str) -> float:
    """The sum of ``metric``'s samples whose labels include ``labels``."""
    return sum(
        value
        for name, have, value in agent_series(loop)
        if name == metric and all(have.get(k) == v for k, v in labels.items())
    )


@pytest.fixture(scope="module")
def loop(bed: Bed) -> Iterator[RealLoop]:
    """The real loop with the fault groups, once for the module; every group at zero."""
    FAULT_FIGURES["node"] = "real"
    with real_loop(bed, transform=fault_groups) as started:
        for group in (GROUP, SPOT, BROKEN, SILENT):  # KEDA's fallback may give each a pod
            started.wait_replicas(0, 240, ready=False, name=_deployment(group))
            wait_until(
                lambda group=group: not started.pods.live_pods(group),
                timeout_s=120,
                what=f"no {group} pod left",
            )
        yield started
        if os.environ.get("KRS_AGENT_LOG"):  # a place to keep the agent's log, for a human
            Path(os.environ["KRS_AGENT_LOG"]).write_text(started.agent_log())


def _victims_before_deletion(loop: RealLoop, group: str, since: float) -> list[tuple[str, float]]:
    assert loop.timeline is not None
    deleted = loop.pods.deleted_since(since, group)
    for pod, at in deleted:
        assert loop.timeline.ever_victim(pod, before=at), f"{pod} deleted without being a victim"
    return deleted


def test_unschedulable_pods_go_and_their_demand_moves_to_a_group_that_can_run_it(
    loop: RealLoop,
) -> None:
    """(a) One {CPU: 5} task: the planner takes the cheaper spot group, whose pod cannot be
    scheduled; the agent says so at once, the demand moves to cpu, the stuck pod goes."""
    wait_until(  # a start-up fallback pod's back-off (if any) over: spot is the first choice
        lambda: agent_value(loop, "ray_scaler_agent_backoff_seconds", group=SPOT) == 0,
        timeout_s=120,
        what="no spot back-off running",
    )
    wait_until(  # a start-up fallback pod (unschedulable too) goes first: the test's pod alone
        lambda: not loop.pods.live_pods(SPOT),
        timeout_s=120,
        what="no spot pod left from start-up",
    )
    # nor a cpu pod that would run the task at once (a KEDA fallback pod: on a busy machine the
    # data went stale past the trigger's 10 s maxAgeSeconds after the module's start, and the
    # task ran on such a pod 1 s after its submission, no spot pod ever asked for)
    wait_until(lambda: not loop.pods.live_pods(GROUP), timeout_s=180, what="no cpu pod left")
    since = time.time()
    work = loop.submit([(0.0, [5.0])])
    created = wait_until(
        lambda: loop.pods.created_since(since, SPOT), timeout_s=120, what="a spot pod"
    )
    pod, created_at = created[0]
    wait_until(
        lambda: failing_pods(loop, SPOT).get(pod) == "unschedulable",
        timeout_s=60,
        what=f"the agent to see {pod} unschedulable",
    )
    detected = time.time() - created_at
    events = work.wait(300)
    assert [e["event"] for e in events if e["event"] in ("done", "failed")] == ["done"]
    (done,) = [e for e in events if e["event"] == "done"]
    assert done["pod"].startswith(_deployment(GROUP)), done
    deleted = wait_until(
        lambda: d if pod in dict(d := _victims_before_deletion(loop, SPOT, since)) else None,
        timeout_s=detected + REMOVAL_CYCLE_S,
        what=f"{pod} deleted",
    )
    # Where the task still waits when spot's back-off ends (the cpu pod not joined yet: a busy
    # CI machine), spot, the cheaper, is tried again: each try only after the back-off, never
    # two at once, each a victim first
    tries = loop.pods.created_since(since, SPOT)
    gaps = [b - a for (_, a), (_, b) in itertools.pairwise(tries)]
    assert all(gap >= BACKOFF_INITIAL_S for gap in gaps), tries
    assert loop.pods.most_alive(SPOT, since) == 1
    assert loop.timeline is not None and loop.timeline.agent[-1].wrong_victims == 0
    for group in (SPOT, GROUP):
        loop.wait_replicas(0, 180, ready=False, name=_deployment(group))
    FAULT_FIGURES["unschedulable"] = (
        f"detected {detected:.1f} s, "
        f"removed {dict(deleted)[pod] - created_at:.1f} s after creation, "
        f"task done on {GROUP} {done['end'] - since:.1f} s after submission, "
        f"{len(tries)} spot pod(s) tried, 1 at peak, tasks 1/0 done/failed"
    )


def test_a_group_whose_start_command_fails_costs_one_pod_at_a_time_and_backs_off(
    loop: RealLoop,
) -> None:
    """(b) A task only the broken group fits: its pods crash-loop; each is seen failing, named
    a victim and removed, one at a time, the waits between them doubling."""
    since = time.time()
    # KEDA's fallback may have given the group a pod at start that failed too: count from now
    failed = "ray_scaler_agent_join_failures_total"
    before = agent_value(loop, failed, group=BROKEN, reason="container_failing")
    work = loop.submit([(0.0, [-600.0])], {BROKEN: 1})
    try:
        tried = wait_until(
            lambda: d if len(d := loop.pods.deleted_since(since, BROKEN)) >= 2 else None,
            timeout_s=300,
            what="two broken pods tried and removed",
        )
        assert loop.pods.most_alive(BROKEN, since) == 1
        _victims_before_deletion(loop, BROKEN, since)
        created = loop.pods.created_since(since, BROKEN)
        failures = agent_value(loop, failed, group=BROKEN, reason="container_failing") - before
        assert 2 <= failures <= len(created)  # each pod counted once, however often it crashed
        # the second pod came only after the back-off that the first one's failure started
        assert created[1][1] - created[0][1] >= BACKOFF_INITIAL_S, (created, tried)
        assert work.count("failed") == 0 and not work.finished()
    finally:
        work.stop()
    loop.wait_replicas(0, 180, ready=False, name=_deployment(BROKEN))
    assert loop.timeline is not None and loop.timeline.agent[-1].wrong_victims == 0
    lifetimes = [f"{gone - made:.1f}" for (_, made), (_, gone) in zip(created, tried, strict=False)]
    FAULT_FIGURES["broken start"] = (
        f"{len(created)} pods in {time.time() - since:.0f} s, never 2 at once, "
        f"each removed {'/'.join(lifetimes)} s after creation, "
        f"next pod {created[1][1] - created[0][1]:.1f} s after the first came, "
        f"{failures:.0f} container_failing"
    )


def test_a_pod_that_runs_but_never_joins_ray_goes_after_its_join_timeout(loop: RealLoop) -> None:
    """(a') A task only the silent group fits: its pod runs (``sleep``) but never starts Ray.
    After the group's join timeout (20 s here, 300 s by default) it is ``not_joined``, named a
    victim and removed within one removal cycle; the next pod waits out the back-off."""
    since = time.time()
    work = loop.submit([(0.0, [-600.0])], {SILENT: 1})
    try:
        pod, created_at = wait_until(
            lambda: loop.pods.created_since(since, SILENT), timeout_s=120, what="a silent pod"
        )[0]
        wait_until(
            lambda: failing_pods(loop, SILENT).get(pod) == "not_joined",
            timeout_s=SILENT_JOIN_TIMEOUT_S + 60,
            what=f"the agent to see {pod} not_joined",
        )
        detected = time.time() - created_at
        # the agent counts from creationTimestamp (whole seconds, rounded down), not our watch
        stamp = loop.core.read_namespaced_pod(pod, NAMESPACE).metadata.creation_timestamp
        since_stamp = time.time() - stamp.timestamp()
        assert since_stamp >= SILENT_JOIN_TIMEOUT_S, f"not_joined after {since_stamp:.1f} s"
        deleted = wait_until(
            lambda: _victims_before_deletion(loop, SILENT, since),
            timeout_s=REMOVAL_CYCLE_S,
            what=f"{pod} deleted",
        )
        assert deleted[0][0] == pod
        assert loop.pods.most_alive(SILENT, since) == 1
        assert work.count("failed") == 0 and not work.finished()
    finally:
        work.stop()
    loop.wait_replicas(0, 180, ready=False, name=_deployment(SILENT))
    FAULT_FIGURES["never joins"] = (
        f"not_joined {detected:.1f} s after creation (timeout {SILENT_JOIN_TIMEOUT_S} s), "
        f"removed {deleted[0][1] - created_at:.1f} s after creation, 1 pod at peak"
    )


# --- (c) a raylet killed under its tasks --------------------------------------------------------


def _raylet_pid(pod: Any) -> int:
    """The raylet process in a worker pod's ``ray-worker`` container."""
    for pid in container_pids(container_id(pod, WORKER_CONTAINER)):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                return pid
    raise LookupError(f"no raylet in {pod.metadata.name}")


def _restarts(pod: Any) -> int:
    for status in pod.status.container_statuses or []:
        if status.name == WORKER_CONTAINER:
            return int(status.restart_count)
    return 0


def _both_on_one_pod(work: Workload, since: float, what: str) -> set[str]:
    """Wait until the workload's two tasks run (started since ``since``) on one pod."""
    return wait_until(  # type: ignore[no-any-return]
        lambda: (
            b if len(work.started_after(since)) == 2 and len(b := work.busy_pods()) == 1 else None
        ),
        timeout_s=240,
        what=what,
    )


def _no_busy_pod_deleted(loop: RealLoop, group: str, since: float) -> list[tuple[str, float]]:
    """The group's deletions since ``since``: none busy as it went, each a published victim,
    or a pod that never ran anything and the agent knew would not join (under load a raylet
    can time out at start; the ReplicaSet deletes a pod that is not Ready first, by its own
    ranking, when the HPA scales down: harmless, nothing ran there)."""
    timeline = loop.timeline
    assert timeline is not None
    deleted = loop.pods.deleted_since(since, group)
    busy = [(pod, at) for pod, at in deleted if timeline.busy_at(pod, at, margin_s=0.5)]
    assert not busy, f"pods deleted while Ray used them: {busy}"
    for pod, at in deleted:
        never_ran = timeline.ever_failing(pod, before=at + 5) and not timeline.ever_busy(pod)
        assert timeline.held_nothing(pod, at) or never_ran, f"{pod} deleted, not a victim"
    return deleted


def test_a_raylet_killed_under_its_tasks_loses_no_task(loop: RealLoop) -> None:
    """(c) Two held tasks that Ray may retry on one pod; its raylet is SIGKILLed: ``ray start
    --block`` exits, the kubelet restarts the container (the pod stays Running), Ray reruns
    both tasks; none fails, no pod is deleted while it runs one, the group ends at zero."""
    since = time.time()
    dead_before = loop.agent_counter(
        "ray_scaler_agent_join_failures_total", group=GROUP, reason="ray_node_dead"
    )
    work = loop.submit([(0.0, [-300.0, -300.0])], retries=3)
    try:
        (pod_name,) = _both_on_one_pod(work, since, "both tasks running on one pod")
        pod = loop.worker_pods(GROUP)[pod_name]
        restarts = _restarts(pod)
        os.kill(_raylet_pid(pod), signal.SIGKILL)
        killed = time.time()
        wait_until(
            lambda: _restarts(loop.core.read_namespaced_pod(pod_name, NAMESPACE)) > restarts,
            timeout_s=120,
            what=f"the kubelet restarting {pod_name}'s container",
        )
        restarted = time.time() - killed
        # Ray's owner reruns the tasks once the GCS calls the killed node dead: its health
        # check, 17 s here once and 293 s once (docs/testing.md); not ours to bound, so a
        # wide cap that still fits the test's 900 s
        rerun = wait_until(
            lambda: len(work.started_after(killed)) == 2, timeout_s=480, what="both tasks rerun"
        )
        assert rerun
        rerun_s = time.time() - killed
        work.release()
        events = work.wait(240)
    finally:
        work.stop()
    assert [e["event"] for e in events].count("done") == 2, events
    assert work.count("failed") == 0
    loop.wait_replicas(0, 240, ready=False)
    deleted = _no_busy_pod_deleted(loop, GROUP, since)
    seen_dead = (
        loop.agent_counter(
            "ray_scaler_agent_join_failures_total", group=GROUP, reason="ray_node_dead"
        )
        - dead_before
    )
    FAULT_FIGURES["raylet killed"] = (
        f"container restarted {restarted:.1f} s after the kill, both tasks rerun within "
        f"{rerun_s:.1f} s, tasks 2/0 done/failed, {len(deleted)} pods removed after the work, "
        f"0 busy, pod named ray_node_dead {seen_dead:.0f} times"
    )


# --- (d) (e) (f): an outage in the middle of a scale-down ------------------------------------


def _freeze_head(loop: RealLoop, seconds: float) -> tuple[float, float | None]:
    """Every process of the Ray head container stopped (SIGSTOP) for ``seconds``, then resumed:
    the GCS is gone for its clients (the agent, the raylets, Ray Client) as over a head restart
    that keeps its state (GCS fault tolerance); the agent in the same pod keeps running.
    Returns how long it was out and when, into it, KEDA showed the failure (None if never)."""
    head = loop.head_pod()
    signal_container(head, HEAD_CONTAINER, signal.SIGSTOP)
    stopped = time.monotonic()
    seen: float | None = None
    try:
        while time.monotonic() - stopped < seconds:  # the fault's length; KEDA watched meanwhile
            if seen is None and loop.keda_sees_the_failure():
                seen = time.monotonic() - stopped
            time.sleep(0.5)
    finally:
        signal_container(head, HEAD_CONTAINER, signal.SIGCONT)
    return time.monotonic() - stopped, seen


OUTAGES = {
    "gcs": f"(d) the Ray head's GCS unreachable {GCS_OUTAGE_S:.0f} s",
    "apiserver": f"(e) the API server down {APISERVER_OUTAGE_S:.0f} s",
    "keda": "(f) KEDA's operator restarted",
}


@pytest.mark.parametrize("outage", list(OUTAGES))
def test_an_outage_in_the_middle_of_a_scale_down_removes_nothing_busy(
    loop: RealLoop, outage: str
) -> None:
    """Two pods, each running two held tasks; ``first``'s are released. As ``first`` goes
    idle (GCS case: before the agent could name it) or once it is a published victim (API
    server, KEDA), the outage starts. Meanwhile nothing is removed (the GCS case: the agent
    says its data failed, the scaler answers UNAVAILABLE and KEDA falls back to the replicas it
    has); after it, ``first`` goes as a victim, ``second`` stays while its tasks run, no task
    fails, the group ends at zero."""
    timeline = loop.timeline
    assert timeline is not None
    since = time.time()
    short = loop.submit([(0.0, [-300.0, -300.0])])  # released once the second pod runs
    held: Workload | None = None
    try:
        (first,) = _both_on_one_pod(short, since, "the short tasks running on one pod")
        held = loop.submit([(0.0, [-400.0, -400.0])])
        (second,) = _both_on_one_pod(held, since, "the held tasks running on a second pod")
        assert second != first
        short.release()  # first goes idle: the scale-down begins
        seen: float | None = None
        if outage == "gcs":
            wait_until(lambda: short.count("done") == 2, timeout_s=120, what="the short tasks done")
            start = time.time()
            down, seen = _freeze_head(loop, GCS_OUTAGE_S)
        else:
            wait_until(
                lambda: timeline.first_victim(first), timeout_s=120, what=f"{first} a victim"
            )
            start = time.time()
            down = (
                loop.cp.restart("kube-apiserver", APISERVER_OUTAGE_S)
                if outage == "apiserver"
                else loop.cp.restart("keda-operator")
            )
        end = time.time()
        gone = wait_until(
            lambda: dict(loop.pods.deleted_since(since, GROUP)).get(first),
            timeout_s=REMOVAL_CYCLE_S + 60,
            what=f"{first} deleted after the outage",
        )
        assert second in loop.worker_pods(GROUP), f"{second} went while its tasks ran"
        held.release()
        events = held.wait(240) + short.wait(60)
    finally:
        short.stop()
        if held is not None:
            held.stop()
    assert [e["event"] for e in events].count("done") == 4, events
    assert not [e for e in events if e["event"] == "failed"]
    samples = [s for s in list(timeline.agent) if start <= s.at <= end]
    figures = f"out {down:.1f} s, {first} removed {gone - end:+.1f} s after it ended"
    if outage == "gcs":
        victim = timeline.first_victim(first)
        assert victim is not None and not start < victim <= end, "named a victim on stale data"
        assert gone > end or victim <= start, f"{first} removed in the outage, on stale data"
        failed = [s.at for s in samples if not s.success]
        assert failed, "the agent never said its Ray data failed"
        assert seen is not None, "the scaler never answered UNAVAILABLE (KEDA saw no failure)"
        wait_until(loop.keda_recovered, timeout_s=60, what="KEDA to recover")
        figures += (
            f", agent data failed {failed[0] - start:.1f} s and KEDA saw it {seen:.1f} s into it"
        )
    loop.wait_replicas(0, 240, ready=False)
    deleted = _no_busy_pod_deleted(loop, GROUP, since)
    FAULT_FIGURES[OUTAGES[outage]] = (
        f"{figures}, {len(deleted)} pods removed, 0 busy, tasks 4/0 done/failed"
    )


# --- (g) a 30 s worker start ---------------------------------------------------------------


SLOW_START = """import os, time


def slow_start():
    time.sleep(float(os.environ["KRS_WORKER_START_DELAY"]))
"""


def test_a_30_s_worker_start_still_peaks_at_ten_pods(loop: RealLoop) -> None:
    """(g) The seed example, 20 x {CPU: 5}, whose every worker process takes 30 s to start (a
    setup hook that sleeps, as a ``runtime_env`` that installs packages makes it wait): the
    group peaks at 10 pods, every task is done, only victims go, the group ends at zero.

    Each task's 10 s begin once all 20 run (``wait_for_start``), as in the seed test: else how
    many pods 20 tasks need depends on how fast pods join (beside busy loops the first tasks
    ended before the last pods joined, and 9 pods were enough)."""
    timeline = loop.timeline
    assert timeline is not None
    (loop.share / "krs_slow_start.py").write_text(SLOW_START)
    runtime_env = {
        "env_vars": {"PYTHONPATH": SHARE_MOUNT, "KRS_WORKER_START_DELAY": str(START_DELAY_S)},
        "worker_process_setup_hook": "krs_slow_start.slow_start",
    }
    since = time.time()
    work = loop.submit([(0.0, [10.0] * 20)], runtime_env=runtime_env, wait_for_start=True)
    try:
        wait_until(lambda: work.running(range(20)), timeout_s=600, what="all 20 tasks running")
        work.start()
        events = work.wait(300)
    finally:
        work.stop()
    done = [e for e in events if e["event"] == "done"]
    assert len(done) == 20 and work.count("failed") == 0, events[-3:]
    first_start = min(e["start"] for e in done) - since
    peak = loop.pods.most_alive(GROUP, since)
    replicas = max(s.replicas for s in timeline.replicas(since=since))
    loop.wait_replicas(0, 300, ready=False)
    deleted = _no_busy_pod_deleted(loop, GROUP, since)
    # a pod whose raylet timed out at start (seen beside busy loops) is replaced: one more
    failed = {p for p, _ in loop.pods.created_since(since, GROUP) if timeline.ever_failing(p, 1e12)}
    FAULT_FIGURES["30 s worker start"] = (
        f"peak {peak} pods (replicas {replicas}), first task began {first_start:.0f} s after "
        f"submission, tasks 20/0 done/failed, {len(deleted)} removed, 0 busy, "
        f"{len(failed)} never joined"
    )
    assert replicas <= 10 + len(failed) and peak <= 10 + len(failed), (peak, replicas, failed)
    if not failed:
        assert (peak, replicas) == (10, 10)
