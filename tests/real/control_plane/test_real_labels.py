"""Ray's label selectors on the real node with the real KubeRay operator (issue 37).

A RayCluster of three labelled groups (``real_labels``: ``spot`` and ``on-demand`` cpu groups,
a ``gpu`` group labelled ``ray.io/accelerator-type: A100``; ``spot`` with priority 10 on
KubeRay 1.7) scaled by KEDA through the agent and the scaler; a driver (``label_driver``)
submits demand with selectors. One ordered story over one cluster and one driver: run the
whole module, in file order.

- phase 1: two tasks asking ``spot``, an actor asking the A100, a SPREAD placement group whose
  bundles ask ``spot`` and ``on-demand``, a task asking ``market-type: reserved`` (no group has
  it): exactly 3 ``spot`` pods, 1 ``on-demand``, 1 ``gpu``; the reserved task never runs, makes
  no pod and is listed unplaceable (``no_group_matches_selector``) by the scaler's planner on
  the agent's export (neither the agent nor the scaler exports the unplaceable list itself);
- phase 2 (every pod busy, so nothing can run elsewhere): a task asking ``on-demand`` with a
  fallback to any node gets an ``on-demand`` pod;
- phase 3, on KubeRay 1.7: a task asking ``tier: batch``, which both cpu groups have, gets a
  ``spot`` pod because of its priority (without it: an ``on-demand`` one); KubeRay 1.5's CRD
  has no ``priority`` and prunes it: that case is skipped there.

Each unit of work asks 2 CPUs, one pod's (the actor 1 CPU and the gpu pod's GPU): the pods per
group are exactly the units per group. Figures on one ``e2e-labels:`` line (tests/conftest.py).

    KRS_KUBERAY_VERSION=v1.7.0 KRS_E2E_BIN="$(bash e2e/build.sh)" \\
      KRS_E2E_IMAGES="$(.venv/bin/python e2e/images.py)" bash e2e/netns.sh \\
      .venv/bin/pytest -q -n 0 -p no:cacheprovider tests/real/control_plane/test_real_labels.py
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator

import pytest
import requests
from bed import Bed
from control_plane import wait_until
from real_kuberay import KubeRayLoop, kuberay_loop
from real_labels import (
    FIGURES,
    GROUPS,
    NOWHERE,
    PHASE1,
    PHASE2,
    PRIORITY,
    PRIORITY_GROUP,
    PRIORITY_UNIT,
    LabelDriver,
    labelled_groups,
    unplaceable,
)
from real_loop import REAL_LOOP_MARKS

from keda_ray_scaler.decisions import UnplaceableReason
from keda_ray_scaler.labels import selectors_text

pytestmark = REAL_LOOP_MARKS

KUBERAY = os.environ.get("KRS_KUBERAY_VERSION") or "v1.5.1"  # e2e/build.sh's default
#: KubeRay 1.7's CRD has a worker group's ``priority``; 1.5's prunes it
HAS_PRIORITY = tuple(map(int, KUBERAY.lstrip("v").split(".")[:2])) >= (1, 7)
NO_PRIORITY = f"KubeRay {KUBERAY}'s CRD has no worker-group priority (1.7.0 has): pruned"
#: from demand to every unit running: pods start one at a time (the start gate), two cores
CAPACITY_S = 420


@pytest.fixture(scope="module")
def loop(bed: Bed) -> Iterator[KubeRayLoop]:
    """The labelled cluster on the real node, its RayWorkerGroups reconciled at 0 pods."""
    FIGURES["kuberay"] = KUBERAY
    with kuberay_loop(bed, labelled_groups(HAS_PRIORITY)) as started:
        for group in GROUPS:
            wait_until(
                lambda g=group: (started.worker_group(f"ray-demo-{g}").get("status") or {}).get(
                    "selector"
                ),
                timeout_s=120,
                what=f"RayWorkerGroup ray-demo-{group}'s status.selector",
            )
        yield started


#: when the driver started (time.time(), the pod watch's clock): pods are counted from then
SINCE: list[float] = []


@pytest.fixture(scope="module")
def driver(loop: KubeRayLoop) -> Iterator[LabelDriver]:
    """The driver, phase 1 submitted once no worker pod is left (KEDA's fallback gives each
    group 1 replica until the scaler answers: those pods are drained and go); released and
    stopped at the end."""
    wait_until(
        lambda: not any(loop.pod_watch.live_pods(g) for g in GROUPS),
        timeout_s=180,
        what="no worker pod before the demand",
    )
    FIGURES["pods before the demand"] = str(
        sum(len(loop.pod_watch.created_since(0.0, g)) for g in GROUPS)
    )
    SINCE.append(time.time())
    started = LabelDriver.start(loop.base.workdir, loop.base.share, loop.base.ray_token())
    yield started
    started.stop()


def _since_demand(loop: KubeRayLoop, group: str) -> list[str]:
    """The group's pods created since the driver started."""
    return [p for p, _ in loop.pod_watch.created_since(SINCE[0], group)]


def _group_of(loop: KubeRayLoop, pod: str) -> str:
    for group in GROUPS:
        if pod in _since_demand(loop, group):
            return group
    return "?"


def _created(loop: KubeRayLoop) -> dict[str, int]:
    return {g: len(_since_demand(loop, g)) for g in GROUPS}


def _wait_started(driver: LabelDriver, units: dict[str, str], since: float) -> float:
    """Wait until every unit runs; seconds since ``since``."""

    def all_started() -> bool:
        if not driver.alive():
            raise AssertionError(f"the driver ended: {driver.events()}")
        return set(units) <= set(driver.started())

    try:
        wait_until(all_started, timeout_s=CAPACITY_S, what=f"{sorted(units)} running")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; started {driver.started()}; {driver.events()}") from None
    return time.monotonic() - since


def _settled(loop: KubeRayLoop, expected: dict[str, int]) -> None:
    """Wait until nothing asks for more: per group, the scaler's target, the HPA's replicas on
    the RayWorkerGroup and the RayCluster's replicas equal the pods expected, and so do the
    pods; then two more agent polls."""

    def settled() -> bool:
        for group, count in expected.items():
            target = loop.base.scaler_counter("keda_ray_scaler_target_replicas", group=group)
            rwg = (loop.worker_group(f"ray-demo-{group}").get("spec") or {}).get("replicas", 0)
            spec = loop.group_spec(group).get("replicas", 0)
            if (target, rwg, spec, len(loop.pods(group))) != (count,) * 4:
                return False
        return True

    wait_until(settled, timeout_s=120, what=f"targets and pods settled at {expected}")
    polls = loop.base.agent_counter("ray_scaler_agent_poll_duration_seconds_count")
    wait_until(
        lambda: (
            loop.base.agent_counter("ray_scaler_agent_poll_duration_seconds_count") >= polls + 2
        ),
        timeout_s=60,
        what="two more agent polls",
    )


def _check_units(loop: KubeRayLoop, driver: LabelDriver, units: dict[str, str]) -> None:
    started = driver.started()
    wrong = {u: (started[u], _group_of(loop, started[u])) for u in units}
    wrong = {u: pg for u, pg in wrong.items() if pg[1] != units[u]}
    assert wrong == {}, f"units in a group their selectors did not ask for: {wrong}"


def _expected(*phases: dict[str, str]) -> dict[str, int]:
    out = dict.fromkeys(GROUPS, 0)
    for phase in phases:
        for group in phase.values():
            out[group] += 1
    return out


def _record(loop: KubeRayLoop, driver: LabelDriver, expected: dict[str, int]) -> None:
    created = _created(loop)
    FIGURES["pods per group"] = ", ".join(f"{g} {n}" for g, n in created.items())
    extra = sum(max(0, created[g] - expected[g]) for g in GROUPS)
    working = set(driver.started().values())
    idle = [p for g in GROUPS for p in _since_demand(loop, g) if p not in working]
    FIGURES["pods in a group the demand did not ask for"] = str(extra)
    FIGURES["pods without work"] = str(len(idle))


def _phase(
    loop: KubeRayLoop,
    driver: LabelDriver,
    phase: str,
    before: dict[str, str],
    units: dict[str, str],
) -> None:
    """Submit ``phase`` (``units``) on top of ``before``: exactly one more pod per unit, each
    in the group its selector asks for."""
    since = time.monotonic()
    driver.send(phase)
    took = _wait_started(driver, units, since)
    FIGURES["time to capacity"] += f", {phase.replace('phase', 'phase ')} {took:.1f} s"
    expected = _expected(before, units)
    _settled(loop, expected)
    _record(loop, driver, expected)
    _check_units(loop, driver, before | units)
    assert _created(loop) == expected
    assert "nowhere" not in driver.started()
    assert FIGURES["pods in a group the demand did not ask for"] == "0"


def test_phase_one_makes_exactly_the_pods_its_selectors_ask_for(
    loop: KubeRayLoop, driver: LabelDriver
) -> None:
    """Spot tasks, the A100 actor, the placement group's bundles: 3 spot pods, 1 on-demand,
    1 gpu, each unit in the group its selector asks; the reserved task runs nowhere, makes no
    pod, and the planner lists it unplaceable."""
    took = _wait_started(driver, PHASE1, time.monotonic())
    FIGURES["time to capacity"] = f"phase 1 {took:.1f} s"
    expected = _expected(PHASE1)
    _settled(loop, expected)
    _record(loop, driver, expected)
    _check_units(loop, driver, PHASE1)
    assert _created(loop) == expected
    assert "nowhere" not in driver.started()
    text = requests.get(loop.base.agent_url, timeout=5).text
    listed = [u for u in unplaceable(text) if selectors_text(u.selectors) == NOWHERE]
    assert [u.reason for u in listed] == [UnplaceableReason.NO_GROUP_MATCHES], unplaceable(text)
    FIGURES["unplaceable"] = f"{NOWHERE} ({listed[0].reason.value})"
    refused = "ray_scaler_agent_ray_input_refused_total"
    assert loop.base.agent_counter(refused, reason="label_selector_invalid") == 0
    # Ray gives a node holding a placement-group bundle the dynamic label ``_PG_<group id>=``
    # (deprecated; Ray's v2 reads it for STRICT_SPREAD only): no Kubernetes label key, so the
    # agent refuses it (counted at every poll, logged once a group). Every other label passes.
    values = _refused_node_labels(loop.agent_log())
    FIGURES["node labels refused"] = (
        f"{loop.base.agent_counter(refused, reason='node_label_invalid'):g} "
        f"({', '.join(sorted({v[:4] + '<id>=' for v in values})) or 'none'})"
    )
    assert all(v.startswith("_PG_") for v in values), values


def _refused_node_labels(log: str) -> list[str]:
    """The node labels the agent logged as refused (``value from Ray refused``)."""
    out = []
    for line in log.splitlines():
        with contextlib.suppress(ValueError, AttributeError):
            entry = json.loads(line[line.find("{") :])
            if (entry.get("event"), entry.get("reason")) == (
                "value from Ray refused",
                "node_label_invalid",
            ):
                out.append(str(entry["value"]))
    return out


def test_phase_two_fallback_takes_its_first_selector(
    loop: KubeRayLoop, driver: LabelDriver
) -> None:
    """A task asking on-demand, falling back to any node, while every pod is busy: one more
    on-demand pod (its first selector), none elsewhere."""
    _phase(loop, driver, "phase2", PHASE1, PHASE2)


def test_priority_decides_between_two_groups_that_both_satisfy(
    loop: KubeRayLoop, driver: LabelDriver
) -> None:
    """``tier: batch``, which spot and on-demand both have: a spot pod, its group's priority
    10 over on-demand's 0 (without priorities the planner picks on-demand: equal cost)."""
    if not HAS_PRIORITY:
        FIGURES["priority"] = f"skipped ({NO_PRIORITY})"
        pytest.skip(NO_PRIORITY)
    assert loop.group_spec(PRIORITY_GROUP).get("priority") == PRIORITY  # not pruned
    _phase(loop, driver, "phase3", PHASE1 | PHASE2, PRIORITY_UNIT)
    FIGURES["priority"] = f"tier=batch to {PRIORITY_GROUP} (priority {PRIORITY}) over on-demand (0)"
