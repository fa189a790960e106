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

import copy
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from control_plane import build_binaries, wait_until
from prometheus_client.parser import text_string_to_metric_families
from ray_on_node import require_bed
from real_loop import (
    GROUP,
    REAL_LOOP_MARKS,
    Docs,
    RealLoop,
    images_json,
    real_loop,
)

pytestmark = REAL_LOOP_MARKS

SPOT, BROKEN = "spot", "broken"
#: the test's back-off: 10 s doubling to 40 s (defaults 30 s and 600 s: minutes per case)
BACKOFF_INITIAL_S = 10
AGENT_FLAGS = [f"--backoff-initial={BACKOFF_INITIAL_S}", "--backoff-max=40"]
#: one removal cycle on the bed: victim marks + 1 s settle, KEDA's 2 s poll, the HPA's 10 s
#: scale-down window and sync, the kubelet's stop; with margin for two busy loops
REMOVAL_CYCLE_S = 60.0
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
    ]
    spec_map["data"]["cluster.yaml"] = yaml.safe_dump(spec, sort_keys=False)
    head = _named(docs, "Deployment", "ray-demo-head")
    (agent,) = [c for c in head["spec"]["template"]["spec"]["containers"] if c["name"] == "agent"]
    agent["args"] += AGENT_FLAGS
    return [*docs, spot, broken, _as_group(scaled, SPOT), _as_group(scaled, BROKEN)]


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
def loop() -> Iterator[RealLoop]:
    """The real loop with the fault groups, once for the module; every group at zero."""
    require_bed()
    bin_dir = Path(os.environ["KRS_E2E_BIN"]) if os.environ.get("KRS_E2E_BIN") else build_binaries()
    FAULT_FIGURES["node"] = "real"
    with real_loop(bin_dir, images_json(), transform=fault_groups) as started:
        for group in (GROUP, SPOT, BROKEN):  # KEDA's fallback may give each a pod at start
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
        lambda: _victims_before_deletion(loop, SPOT, since),
        timeout_s=detected + REMOVAL_CYCLE_S,
        what=f"{pod} deleted",
    )
    assert [p for p, _ in deleted] == [pod]
    assert loop.pods.most_alive(SPOT, since) == 1
    assert loop.timeline is not None and loop.timeline.agent[-1].wrong_victims == 0
    for group in (SPOT, GROUP):
        loop.wait_replicas(0, 180, ready=False, name=_deployment(group))
    FAULT_FIGURES["unschedulable"] = (
        f"detected {detected:.1f} s, removed {deleted[0][1] - created_at:.1f} s after creation, "
        f"task done on {GROUP} {done['end'] - since:.1f} s after submission, "
        f"1 spot pod at peak, tasks 1/0 done/failed"
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
