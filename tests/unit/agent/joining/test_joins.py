"""Pods that will not be Ray nodes: classification, back-off, the loop's export and the plan."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from fake_clock import FakeClock
from prometheus_client import CollectorRegistry

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.joining.join_tracker import JoinSettings, JoinTracker
from keda_ray_scaler.agent.joining.joins import (
    Backoff,
    BackoffSettings,
    PodEntry,
    PodJoinFacts,
    after_failures,
    failed_launches,
    join_failure,
    launch_limit,
)
from keda_ray_scaler.agent.kube.pod_info import pod_info
from keda_ray_scaler.agent.loop import AgentLoop, LoopSettings
from keda_ray_scaler.agent.metric_names import BACKOFF_SECONDS, JOIN_FAILURES
from keda_ray_scaler.agent.ray.ray_status import RayState, parse_status
from keda_ray_scaler.decisions import UnplaceableReason, Why
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    JoinFailure,
    NodeStatus,
    PlanningInput,
    Resources,
    WorkerGroup,
    WorkerNode,
)
from keda_ray_scaler.planner import plan
from keda_ray_scaler.schema import decoding, encoding

CPU = WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=10)
BIG = WorkerGroup("big", Resources.of(CPU=20), max_replicas=10, cost=3.0)
SPEC = ClusterSpec("demo", (CPU, BIG))
FIVE = Bundle(Resources.of(CPU=5), 2)


# --- classification ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "dead", "age_s", "expected"),
    [
        (PodJoinFacts(), False, 10.0, None),  # young, nothing wrong: coming
        (PodJoinFacts(), False, 300.0, JoinFailure.NOT_JOINED),  # the timeout
        (PodJoinFacts(unschedulable=True), False, 1.0, JoinFailure.UNSCHEDULABLE),
        (
            PodJoinFacts(container_failure="ImagePullBackOff"),
            False,
            1.0,
            JoinFailure.CONTAINER_FAILING,
        ),
        (
            PodJoinFacts(container_failure="Error (exit 3)"),
            False,
            1.0,
            JoinFailure.CONTAINER_FAILING,
        ),
        (PodJoinFacts(container_failure="CrashLoopBackOff"), True, 1.0, JoinFailure.RAY_NODE_DEAD),
        # a young pod's raylet died (a start over Ray's 30 s limit): the restart brings it back
        (PodJoinFacts(), True, 60.0, None),
        (PodJoinFacts(), True, 300.0, JoinFailure.RAY_NODE_DEAD),  # an old pod's: replaced
    ],
)
def test_a_pod_not_in_ray_is_coming_until_kubernetes_or_the_timeout_says_otherwise(
    facts: PodJoinFacts, dead: bool, age_s: float, expected: JoinFailure | None
) -> None:
    """At once for unschedulable, failing containers and crash-looping dead nodes; after the
    timeout else (a young pod whose node died included)."""
    facts = PodJoinFacts(1000.0, facts.unschedulable, facts.container_failure)
    got = join_failure(facts, ray_dead=dead, now_s=1000.0 + age_s, timeout_s=300.0)
    assert got == expected


def test_pod_info_reads_the_schedulers_verdict_and_failing_waits() -> None:
    """PodScheduled=False/Unschedulable and a waiting reason from the API's JSON."""
    raw = {
        "metadata": {"name": "w-1", "labels": {"ray.io/group": "cpu"}},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            "initContainerStatuses": [
                {"name": "wait", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
            ],
            "containerStatuses": [
                {"name": "ray", "state": {"waiting": {"reason": "PodInitializing"}}}
            ],
        },
    }
    info = pod_info(raw, "ray.io/group")
    assert (info.unschedulable, info.container_failure) == (True, "ImagePullBackOff")
    raw["status"] = {"conditions": [{"type": "PodScheduled", "status": "True"}]}
    info = pod_info(raw, "ray.io/group")
    assert (info.unschedulable, info.container_failure) == (False, "")


def _container(
    restarts: int, state: dict[str, object], last: dict[str, object] | None = None
) -> dict[str, object]:
    status: dict[str, object] = {"restartCount": restarts, "state": state}
    if last is not None:
        status["lastState"] = last
    return {"containerStatuses": [status]}


ERROR = {"terminated": {"exitCode": 3, "reason": "Error"}}


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        # the kubelet 1.37 between a crash loop's restarts: terminated, not waiting
        (_container(3, ERROR), "CrashLoopBackOff (3 restarts)"),
        (
            _container(4, {"waiting": {"reason": "CrashLoopBackOff"}}, ERROR),
            "CrashLoopBackOff (4 restarts)",
        ),
        (_container(5, {"running": {}}, ERROR), ""),  # running again: maybe it joins this time
        # one or two failed starts are no proof (ray start can fail once under load)
        (_container(0, ERROR), ""),
        (_container(2, {"waiting": {"reason": "CrashLoopBackOff"}}, ERROR), ""),
        (
            {"containerStatuses": [{"state": {"waiting": {"reason": "ImagePullBackOff"}}}]},
            "ImagePullBackOff",
        ),
        ({"containerStatuses": [{"state": {"waiting": {"reason": "ErrImagePull"}}}]}, ""),
        # an init container that completed is a normal start; a running container too
        (
            {
                "initContainerStatuses": [{"state": {"terminated": {"exitCode": 0}}}],
                "containerStatuses": [{"state": {"running": {}}}],
            },
            "",
        ),
        ({"containerStatuses": [{"state": {"waiting": {"reason": "ContainerCreating"}}}]}, ""),
    ],
)
def test_a_container_fails_when_it_waits_for_a_failure_or_exited_with_an_error(
    statuses: dict[str, object], expected: str
) -> None:
    """What the kubelet reports of a container that will not start, and of ones that will."""
    from keda_ray_scaler.agent.kube.pod_info import container_failure

    assert container_failure(statuses) == expected


def test_dead_ray_nodes_name_their_pod_only_by_instance_id_and_only_without_a_live_one() -> None:
    """A restarted pod's new node makes it alive again; a dead node with no name is no pod's."""

    def ns(node_id: bytes, pod: str, status: int, ip: str) -> pb.NodeState:
        total = {"CPU": 10}
        return pb.NodeState(
            node_id=node_id.ljust(28, b"\0"),
            instance_id=pod,
            ray_node_type_name="cpu" if pod else "",
            node_ip_address=ip,
            status=status,
            total_resources=total,
            available_resources=total,
        )

    nodes = [
        ns(b"a", "w-a", pb.DEAD, "10.0.0.1"),
        ns(b"b", "w-b", pb.DEAD, "10.0.0.2"),
        ns(b"c", "w-b", pb.IDLE, "10.0.0.3"),  # w-b restarted: a new live node
        ns(b"d", "", pb.DEAD, "10.0.0.4"),
    ]
    state = pb.GetClusterStatusReply(
        cluster_resource_state=pb.ClusterResourceState(node_states=nodes)
    )
    from keda_ray_scaler.agent.ray.status_nodes import PodRef

    got = parse_status(state, SPEC, pods=[PodRef("w-new", "cpu", ("10.0.0.4",))])
    assert got.dead == frozenset({"w-a"})


def test_a_node_with_resources_in_use_and_no_busy_worker_is_starting() -> None:
    """Leases granted, workers not running yet: Ray's node_activity names no busy worker."""
    from keda_ray_scaler.agent.ray.ray_status import parse_status
    from keda_ray_scaler.agent.ray.status_nodes import BUSY_WORKERS_ACTIVITY
    from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb

    def ns(node_id: bytes, pod: str, free: int, *activity: str) -> pb.NodeState:
        return pb.NodeState(
            node_id=node_id.ljust(28, b"\0"),
            instance_id=pod,
            ray_node_type_name="cpu",
            status=pb.RUNNING,
            total_resources={"CPU": 10},
            available_resources={"CPU": free},
            node_activity=list(activity),
        )

    in_use = "Resource: CPU currently in use."
    nodes = [
        ns(b"a", "w-a", 0, in_use),  # leased, starting
        ns(b"b", "w-b", 0, in_use, BUSY_WORKERS_ACTIVITY),  # running
        ns(b"c", "w-c", 10),  # idle
    ]
    reply = pb.GetClusterStatusReply(
        cluster_resource_state=pb.ClusterResourceState(node_states=nodes)
    )
    assert parse_status(reply, SPEC).starting == frozenset({"w-a"})


# --- back-off ---------------------------------------------------------------------------------


def test_the_back_off_doubles_per_failure_up_to_its_cap_and_then_allows_one_pod() -> None:
    """30, 60, 120 ... 600 s; 0 new pods while it runs or a pod is coming or failing; then 1."""
    s = BackoffSettings(30.0, 100.0)
    b = after_failures(Backoff(), 1, 0.0, s)
    assert b.until_s == 30.0
    assert launch_limit(b, now_s=29.9, coming=0, failing=0) == 0
    assert launch_limit(b, now_s=30.0, coming=0, failing=0) == 1
    assert launch_limit(b, now_s=30.0, coming=1, failing=0) == 0
    assert launch_limit(b, now_s=30.0, coming=0, failing=1) == 0
    b = after_failures(b, 1, 40.0, s)
    assert b.until_s == 100.0  # 40 + 60
    b = after_failures(b, 2, 200.0, s)
    assert b.until_s == 300.0  # 200 + min(30 * 8, 100)
    assert launch_limit(Backoff(), now_s=0.0, coming=0, failing=0) is None


def entry(name: str, group: str = "cpu", created: float = 0.0, **facts: object) -> PodEntry:
    """A pod entry created at ``created``."""
    return PodEntry(name, group, True, PodJoinFacts(created, **facts))  # type: ignore[arg-type]


def test_the_tracker_backs_a_group_off_once_per_new_failing_pod_and_a_join_ends_it() -> None:
    """Failures counted by reason; the back-off shows in the gauge and the launch limit."""
    registry = CollectorRegistry()
    tracker = JoinTracker(
        SPEC, registry, JoinSettings(100.0, {"big": 50.0}, BackoffSettings(30.0, 600.0))
    )
    pods = [entry("c-1", container_failure="CrashLoopBackOff"), entry("b-1", "big")]
    view = tracker.observe(10.0, pods, set(), set(), {})
    assert view.failing == {"c-1": JoinFailure.CONTAINER_FAILING}
    assert view.launch_limits == (("cpu", 0),)
    labels = {"cluster": "demo", "group": "cpu", "reason": "container_failing"}
    assert registry.get_sample_value(JOIN_FAILURES, labels) == 1.0
    assert registry.get_sample_value(BACKOFF_SECONDS, {"cluster": "demo", "group": "cpu"}) == 30.0
    # the same pod failing again is no new failure
    view = tracker.observe(20.0, pods, set(), set(), {})
    assert registry.get_sample_value(JOIN_FAILURES, labels) == 1.0
    # between its crash loop's waits the container runs: still failing, no new failure
    restarted = [entry("c-1"), entry("b-1", "big")]
    view = tracker.observe(25.0, restarted, set(), set(), {})
    assert view.failing == {"c-1": JoinFailure.CONTAINER_FAILING}
    assert registry.get_sample_value(BACKOFF_SECONDS, {"cluster": "demo", "group": "cpu"}) == 15.0
    view = tracker.observe(26.0, pods, set(), set(), {})
    assert registry.get_sample_value(JOIN_FAILURES, labels) == 1.0
    # big's own timeout (50 s) passes: not joined
    view = tracker.observe(60.0, pods, set(), set(), {})
    assert view.failing["b-1"] is JoinFailure.NOT_JOINED
    assert dict(view.launch_limits) == {"cpu": 0, "big": 0}
    # c-1 went (a victim, then deleted); the wait is over: one pod at a time
    view = tracker.observe(200.0, [entry("b-1", "big")], set(), set(), {})
    assert dict(view.launch_limits)["cpu"] == 1
    view = tracker.observe(201.0, [entry("c-2", created=200.0)], set(), set(), {})
    assert dict(view.launch_limits)["cpu"] == 0  # c-2 is coming
    view = tracker.observe(205.0, [entry("c-2", created=200.0)], {"c-2"}, set(), {})
    assert "cpu" not in dict(view.launch_limits)  # c-2 joined: the back-off ended
    assert tracker.backoff_message("cpu") == ""
    assert tracker.backoff_message("big").startswith(
        "1 failed launch(es), pods that did not join Ray (last: not_joined)"
    )
    assert registry.get_sample_value(BACKOFF_SECONDS, {"cluster": "demo", "group": "cpu"}) == 0.0


def test_the_pods_of_one_launch_are_one_failed_launch_a_later_pod_another() -> None:
    """Pods made before the last counted launch belong to it; one made after is a new one; a
    group with none counted, or a pod of unknown age, is one."""
    counted = after_failures(Backoff(), 1, 45.0, BackoffSettings())
    assert failed_launches(Backoff(), [0.0, 0.0, 0.0]) == 1
    assert failed_launches(counted, [0.0, 1.0, 44.9]) == 0
    assert failed_launches(counted, [0.0, 80.0]) == 1
    assert failed_launches(counted, [None]) == 1
    assert failed_launches(counted, []) == 0


def test_ten_pods_of_one_scale_up_failing_one_by_one_back_the_group_off_once() -> None:
    """Ten pods made together crash-loop and are found failing over several polls (CI,
    2026-11-27: counted each, the wait reached its 600 s cap at once): one failed launch, the
    first wait; the one pod made after the wait fails too: the second launch doubles it."""
    tracker = JoinTracker(SPEC, CollectorRegistry(), JoinSettings(300.0, {}, BackoffSettings()))
    crashing = [entry(f"c-{i}", container_failure="CrashLoopBackOff") for i in range(10)]
    waits = []
    for poll, now in enumerate((45.0, 48.0, 52.0, 55.0, 60.0)):
        tracker.observe(now, crashing[: 2 * (poll + 1)], set(), set(), {})
        waits.append(tracker.backoff_message("cpu"))
    assert all(m.startswith("1 failed launch(es)") for m in waits), waits
    assert "no new pods for 15 s" in waits[-1]  # 45 + 30 - 60
    retry = entry("c-10", created=80.0, container_failure="CrashLoopBackOff")
    tracker.observe(125.0, [retry], set(), set(), {})
    assert tracker.backoff_message("cpu").startswith("2 failed launch(es)")
    assert "no new pods for 60 s" in tracker.backoff_message("cpu")


def test_a_dead_ray_node_fails_its_pod_without_backing_the_group_off() -> None:
    """A raylet killed under a running pod is not the group's pods failing to start."""
    tracker = JoinTracker(SPEC, CollectorRegistry(), JoinSettings())
    view = tracker.observe(400.0, [entry("c-1")], set(), {"c-1"}, {})
    assert view.failing == {"c-1": JoinFailure.RAY_NODE_DEAD}
    assert view.launch_limits == ()


def test_a_young_pod_whose_node_died_is_capacity_until_it_rejoins_or_crash_loops() -> None:
    """A raylet that timed out at start: the pod is coming (no replacement beside it), joins
    again after the kubelet's restart; crash-looping, it is failing."""
    tracker = JoinTracker(SPEC, CollectorRegistry(), JoinSettings())
    view = tracker.observe(40.0, [entry("c-1")], set(), {"c-1"}, {})
    assert view.failing == {}
    view = tracker.observe(60.0, [entry("c-1")], {"c-1"}, set(), {})
    assert view.failing == {}
    looping = entry("c-1", container_failure="CrashLoopBackOff (3 restarts)")
    view = tracker.observe(120.0, [looping], set(), {"c-1"}, {})
    assert view.failing == {"c-1": JoinFailure.RAY_NODE_DEAD}


def test_victims_and_inactive_pods_are_never_failing() -> None:
    """A drained victim whose node is gone, or a terminating pod, is not a join failure."""
    tracker = JoinTracker(SPEC, CollectorRegistry(), JoinSettings(join_timeout_s=1.0))
    gone = PodEntry("c-2", "cpu", False, PodJoinFacts(0.0))
    view = tracker.observe(100.0, [entry("c-1"), gone], set(), {"c-1"}, {"c-1": "cpu"})
    assert view.failing == {}


# --- the plan ---------------------------------------------------------------------------------


def failing(pod: str, group: WorkerGroup, why: JoinFailure) -> WorkerNode:
    """A failing pod of ``group``."""
    return WorkerNode(
        pod, group.name, group.resources, Resources(), 0.0, NodeStatus.FAILING, "", why
    )


def test_a_failing_pod_is_no_capacity_and_goes_at_once_with_its_reason() -> None:
    """Two {CPU: 5} tasks and an unschedulable cpu pod: a new cpu pod, the stuck one removable."""
    inp = PlanningInput(SPEC, Demand((FIVE,)), (failing("c-1", CPU, JoinFailure.UNSCHEDULABLE),))
    gp = plan(inp).groups["cpu"]
    assert (gp.new, gp.removable, gp.over_cap, gp.floor, gp.target) == (
        1,
        ("c-1",),
        ("c-1",),
        1,
        1,
    )
    assert any(d.reason is Why.UNSCHEDULABLE and d.pods == ("c-1",) for d in gp.decisions)
    # as a pending pod it would have held the tasks: no new pod
    pending = WorkerNode("c-1", "cpu", CPU.resources, CPU.resources, status=NodeStatus.PENDING)
    assert plan(PlanningInput(SPEC, Demand((FIVE,)), (pending,))).groups["cpu"].new == 0


def test_a_backed_off_group_sends_its_demand_to_the_next_group_that_fits() -> None:
    """cpu backed off (limit 0): the tasks go to big, the dearer group; said when none can."""
    inp = PlanningInput(
        SPEC,
        Demand((FIVE,)),
        (failing("c-1", CPU, JoinFailure.CONTAINER_FAILING),),
        launch_limits=(("cpu", 0),),
    )
    p = plan(inp)
    assert (p.groups["cpu"].new, p.groups["big"].new) == (0, 1)
    assert p.groups["cpu"].target == 1  # held by the failing pod until it is a victim
    only_cpu = ClusterSpec("demo", (CPU,))
    p = plan(PlanningInput(only_cpu, Demand((FIVE,)), launch_limits=(("cpu", 0),)))
    assert [u.reason for u in p.unplaceable] == [UnplaceableReason.BACKED_OFF]


def test_failing_pods_and_launch_limits_survive_the_export() -> None:
    """encode -> decode keeps the state, the reason and the limits."""
    inp = PlanningInput(
        SPEC,
        Demand((FIVE,)),
        (failing("c-1", CPU, JoinFailure.NOT_JOINED),),
        launch_limits=(("cpu", 1),),
    )
    snap = schema.ClusterSnapshot(inp, 1700000000.0, True)
    back = decoding.decode(encoding.encode(snap))["demo"]
    assert back.input.nodes == inp.nodes
    assert back.input.launch_limits == (("cpu", 1),)


# --- the loop ---------------------------------------------------------------------------------


class Reader:
    """Always the same Ray state."""

    def __init__(self, state: RayState) -> None:
        self.state = state

    async def read(self) -> RayState:
        return self.state


def test_the_loop_exports_a_pod_past_its_join_timeout_as_failing_and_backs_its_group_off() -> None:
    """One pod created 400 s ago with no Ray node: failing (not_joined), cpu limited to 0."""
    registry = CollectorRegistry()
    clock = FakeClock()
    pods: Sequence[PodEntry] = [PodEntry("c-1", "cpu", True, PodJoinFacts(clock.t - 400.0))]
    loop = AgentLoop(
        SPEC,
        Reader(RayState(Demand((FIVE,)), ())),
        SnapshotCollector(registry),
        AgentMetrics(registry, "demo"),
        clock,
        LoopSettings(),
        pods=lambda: pods,
        joins=JoinTracker(SPEC, registry, JoinSettings()),
    )
    snap = asyncio.run(loop.poll_once())
    assert [(n.pod, n.status, n.failure) for n in snap.input.nodes] == [
        ("c-1", NodeStatus.FAILING, JoinFailure.NOT_JOINED)
    ]
    assert snap.input.launch_limits == (("cpu", 0),)
    labels = {
        "cluster": "demo",
        "pod": "c-1",
        "group": "cpu",
        "node_id": "",
        "state": "failing",
        "reason": "not_joined",
    }
    assert registry.get_sample_value(schema.NODE_INFO, labels) == 1.0
    limit = {"cluster": "demo", "group": "cpu"}
    assert registry.get_sample_value(schema.GROUP_LAUNCH_LIMIT, limit) == 0.0


# --- the builder ------------------------------------------------------------------------------


def test_the_builder_wires_joins_victims_and_the_applier_only_with_pods() -> None:
    """Export only without pods; with pods, the tracker, the controller and the applier made
    from the controller's victims and the tracker's back-off message."""
    from keda_ray_scaler.agent.builder import build_agent
    from keda_ray_scaler.agent.modes import DeploymentApplier
    from keda_ray_scaler.agent.settings import AgentSettings
    from keda_ray_scaler.demo.pods import DemoPods
    from keda_ray_scaler.gcs.client import GcsConnection

    clock = FakeClock()
    bare = build_agent(SPEC, GcsConnection("127.0.0.1:1"), clock, AgentSettings())
    assert (bare.victims, bare.joins, bare.applier) == (None, None, None)
    made: list[object] = []

    def factory(victims: object, joins: JoinTracker) -> DeploymentApplier:
        made.append((victims, joins))
        return DeploymentApplier()

    agent = build_agent(
        SPEC, GcsConnection("127.0.0.1:1"), clock, AgentSettings(), pods=DemoPods(), applier=factory
    )
    assert agent.victims is not None and agent.joins is not None
    ((victims, joins),) = made
    assert joins is agent.joins and callable(victims) and victims() == {}
    off = AgentSettings(loop=LoopSettings(scale_down=False))
    assert (
        build_agent(SPEC, GcsConnection("127.0.0.1:1"), clock, off, pods=DemoPods()).victims is None
    )
