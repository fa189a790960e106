"""The victim protocol's first step on plain values: which removable pods may go now."""

from __future__ import annotations

import pytest

from keda_ray_scaler.agent.pod import DELETION_COST, PodInfo
from keda_ray_scaler.agent.victims.choose import Choice, GroupView, choose, to_release
from keda_ray_scaler.agent.victims.marks import VictimSettings
from keda_ray_scaler.decisions import GroupPlan
from keda_ray_scaler.model import NodeStatus, Resources, WorkerNode

POD = Resources.of(CPU=10)
SETTINGS = VictimSettings()


def node(pod: str, *, idle_s: float = 120.0, used: bool = False) -> WorkerNode:
    """An idle (or busy) Ray node of ``pod``."""
    available = Resources.of(CPU=5) if used else POD
    return WorkerNode(pod, "cpu", POD, available, idle_s, NodeStatus.RUNNING, f"n-{pod}")


def view(removable: tuple[str, ...], over_cap: tuple[str, ...] = (), **kw: object) -> GroupView:
    """Group cpu with pods w-1..w-4; w-1, w-2 idle, w-3 busy, w-4 not in Ray."""
    gp = GroupPlan("cpu", 1, 1, 4, 4, 1, 0, removable=removable, over_cap=over_cap)
    pods = {f"w-{i}": PodInfo(f"w-{i}", group="cpu") for i in range(1, 5)}
    nodes = {"w-1": node("w-1"), "w-2": node("w-2", idle_s=10.0), "w-3": node("w-3", used=True)}
    args: dict[str, object] = {"pods": pods, "nodes": nodes, "idle_timeout_s": 60.0, **kw}
    return GroupView(gp, **args)  # type: ignore[arg-type]


def outcomes(c: Choice) -> tuple[list[str], list[tuple[str, str]]]:
    """Chosen pod names and (pod, outcome) of the verdicts."""
    return [p.name for p in c.chosen], [(v.pod, v.outcome.value) for v in c.verdicts]


def test_only_idle_past_the_timeout_unused_owned_pods_are_chosen() -> None:
    """w-1 goes; w-2 idle too briefly, w-3 busy, w-4 not a Ray node, w-9 not a pod."""
    c = choose(view(("w-1", "w-2", "w-3", "w-4", "w-9")), SETTINGS)
    assert outcomes(c) == (
        ["w-1"],
        [
            ("w-2", "not_idle"),
            ("w-3", "not_idle"),
            ("w-4", "no_node"),
            ("w-9", "pod_gone"),
        ],
    )


def test_over_cap_and_failing_pods_go_at_once_without_a_node_but_never_busy() -> None:
    """Above a cap or failing: no idle timeout, no Ray node needed; a busy node still stays."""
    c = choose(view(("w-2", "w-3", "w-4"), over_cap=("w-2", "w-3", "w-4")), SETTINGS)
    assert outcomes(c) == (["w-2", "w-4"], [("w-3", "not_idle")])


def test_a_ready_serve_endpoint_waits_until_its_proxy_drained() -> None:
    """A RayService worker still Ready (its Serve proxy healthy, the Service sends it requests)
    is not taken, even idle past the timeout or over a cap; once its readiness drops it is."""
    for over_cap in ((), ("w-1",)):
        v = view(("w-1",), over_cap=over_cap)
        serving = PodInfo("w-1", group="cpu", serve_endpoint=True)
        c = choose(
            GroupView(v.plan, {**v.pods, "w-1": serving}, v.nodes, idle_timeout_s=60.0), SETTINGS
        )
        assert outcomes(c) == ([], [("w-1", "serving")])
    drained = PodInfo("w-1", group="cpu", serve_endpoint=True, ready=False)
    c = choose(
        GroupView(v.plan, {**v.pods, "w-1": drained}, v.nodes, idle_timeout_s=60.0), SETTINGS
    )
    assert outcomes(c) == (["w-1"], [])


def test_a_cost_set_by_someone_else_is_never_taken() -> None:
    """A deletion cost without the agent's marker belongs to another owner."""
    v = view(("w-1",))
    pods = {**v.pods, "w-1": PodInfo("w-1", group="cpu", annotations={DELETION_COST: "5"})}
    c = choose(GroupView(v.plan, pods, v.nodes, idle_timeout_s=60.0), SETTINGS)
    assert outcomes(c) == ([], [("w-1", "not_owned")])


@pytest.mark.parametrize(
    ("kw", "outcome"),
    [
        ({"frozen": True}, "frozen"),
        ({"refusal": "in-tree autoscaling is on"}, "refused"),
        ({"waiting": ("w-9",)}, "awaiting_deletion"),
    ],
)
def test_a_frozen_refused_or_waiting_group_takes_nothing(
    kw: dict[str, object], outcome: str
) -> None:
    """Every candidate gets the group's verdict; published victims are no candidates."""
    c = choose(view(("w-1", "w-2"), victims=frozenset({"w-2"}), **kw), SETTINGS)  # type: ignore[arg-type]
    assert outcomes(c) == ([], [("w-1", outcome)])


@pytest.mark.parametrize(
    ("target", "current", "released"),
    [
        (3, 3, ("w-1", "w-2")),  # 1 kept + 2 new wanted: the target keeps both victims' slots
        (4, 3, ("w-1", "w-2")),
        (2, 3, ()),  # a scale-down under way takes one victim first; the other waits
        (1, 3, ()),  # the scale-down takes both
    ],
)
def test_victims_no_scale_down_takes_are_released_only_when_the_target_keeps_the_pods(
    target: int, current: int, released: tuple[str, ...]
) -> None:
    """Two published victims of three pods: released when the target is not below the pods."""
    gp = GroupPlan("cpu", target, target, 1, current, 1, target - 1)
    assert to_release(gp, ("w-1", "w-2")) == released
    assert to_release(gp, ()) == ()


@pytest.mark.parametrize(("limit", "released"), [(None, ("w-1", "w-2")), (1, ("w-1",)), (0, ())])
def test_a_backed_off_group_releases_at_most_its_launch_limit(
    limit: int | None, released: tuple[str, ...]
) -> None:
    """Each victim released is a new pod made: a group backed off after pods that did not join
    releases none while it waits, then one at a time (no create/delete loop at minReplicas)."""
    gp = GroupPlan("cpu", 3, 3, 1, 3, 1, 2)
    assert to_release(gp, ("w-1", "w-2"), limit) == released


def test_a_pod_refused_for_its_idle_time_alone_says_when_it_is_due() -> None:
    """w-2 is idle 10 s of 60 by Ray's own read: due in 50 s; w-3 is busy, w-4 no Ray node:
    neither is due by time; with w-2 not a candidate, nothing is due."""
    c = choose(view(("w-1", "w-2", "w-3", "w-4")), SETTINGS)
    assert c.due_in_s == 50.0
    assert choose(view(("w-1", "w-3", "w-4")), SETTINGS).due_in_s is None
