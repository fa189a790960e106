"""The agent's pure parts: status parsing, shape bounding, node completion, export, the loop.

No Ray processes: Ray replies are built as ``autoscaler_pb2`` messages (the wire type the GCS
sends), the loop gets a fake reader and a fake victim controller (tests/harness/loop_fakes.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
import structlog
from fake_clock import FakeClock
from hypothesis import given, settings
from hypothesis import strategies as st
from loop_fakes import FakeReader, FakeVictims, r, ray_state
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.joining.joins import PodEntry
from keda_ray_scaler.agent.joining.pod_view import complete_nodes
from keda_ray_scaler.agent.kuberay.scale_up_lead import PlannedTargets
from keda_ray_scaler.agent.loop import AgentLoop, LoopSettings
from keda_ray_scaler.agent.loop_parts import NO_PLANNED, NO_VICTIMS, PlannedVictims
from keda_ray_scaler.agent.ray.ray_status import (
    RayState,
    parse_status,
    parse_strategy,
    parse_v1_requests,
)
from keda_ray_scaler.agent.ray.shape_bound import bound_shapes
from keda_ray_scaler.agent.ray.status_nodes import PodRef, is_internal_resource
from keda_ray_scaler.errors import RayError, ShapeError
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.model import (
    Bundle,
    ClusterSpec,
    Demand,
    NodeStatus,
    PlacementGroup,
    PlanningInput,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
    total_count,
)
from keda_ray_scaler.schema import coverage, decoding, digest, encoding

CPU = WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50, idle_timeout_s=60)
#: Resource names Ray 2.60 accepts that a label value must survive (the last: 5,000 characters).
HOSTILE_NAMES = ("a,b", "a;b", "a=b", "a\nb", "GPU型", "x" * 5_000)
GPU = WorkerGroup("gpu", Resources.of(CPU=8, GPU=1), max_replicas=8)
SPEC = ClusterSpec("demo", (CPU, GPU))
PG_ID = "ce7cd5467ba9cc86511a4b81997801000000"


def node_state(
    node_id: bytes,
    *,
    pod: str = "",
    group: str = "",
    ip: str = "10.0.0.1",
    status: int = pb.IDLE,
    idle_ms: int = 0,
    total: Mapping[str, float] | None = None,
    available: Mapping[str, float] | None = None,
) -> Any:
    """One NodeState as the GCS sends it."""
    total = total if total is not None else {"CPU": 10, f"node:{ip}": 1}
    return pb.NodeState(
        node_id=node_id.ljust(28, b"\0"),
        instance_id=pod,
        ray_node_type_name=group,
        node_ip_address=ip,
        status=status,
        idle_duration_ms=idle_ms,
        total_resources=total,
        available_resources=available if available is not None else total,
    )


def request(resources: Mapping[str, float]) -> Any:
    """One ResourceRequest."""
    return pb.ResourceRequest(resources_bundle=resources)


def reply(
    *,
    tasks: Sequence[tuple[Mapping[str, float], int]] = (),
    gangs: Sequence[tuple[str, Sequence[Mapping[str, float]]]] = (),
    constraints: Sequence[tuple[Mapping[str, float], int]] = (),
    nodes: Sequence[Any] = (),
) -> Any:
    """A GetClusterStatusReply."""
    state = pb.ClusterResourceState(
        pending_resource_requests=[
            pb.ResourceRequestByCount(request=request(b), count=n) for b, n in tasks
        ],
        pending_gang_resource_requests=[
            pb.GangResourceRequest(requests=[request(b) for b in bundles], details=details)
            for details, bundles in gangs
        ],
        cluster_resource_constraints=[
            pb.ClusterResourceConstraint(
                resource_requests=[
                    pb.ResourceRequestByCount(request=request(b), count=n) for b, n in constraints
                ]
            )
        ]
        if constraints
        else [],
        node_states=list(nodes),
    )
    return pb.GetClusterStatusReply(cluster_resource_state=state)


# --- parsing --------------------------------------------------------------------------------


def test_task_demand_is_one_bundle_per_shape_with_its_count() -> None:
    """Pending requests become bundles; equal shapes add up; internal resources are dropped."""
    state = parse_status(
        reply(tasks=[({"CPU": 5}, 20), ({"CPU": 1, "GPU": 1}, 3), ({"CPU": 5}, 2)]), SPEC
    )
    assert state.demand.bundles == (Bundle(r(CPU=1, GPU=1), 3), Bundle(r(CPU=5), 22))


def test_demand_inside_a_placed_placement_group_is_not_scalable_and_left_out() -> None:
    """Tasks waiting on placement-group resources cannot use a new pod (Ray ignores them too)."""
    state = parse_status(reply(tasks=[({f"CPU_group_0_{PG_ID}": 1}, 4), ({"CPU": 1}, 1)]), SPEC)
    assert (state.demand.bundles, state.dropped_pg_shapes) == ((Bundle(r(CPU=1), 1),), 1)


def test_gang_requests_keep_strategy_and_bundle_order_and_identical_ones_are_counted() -> None:
    """Placement groups: strategy from details, bundles in order, duplicates as count."""
    spread = (f"{PG_ID}:STRICT_SPREAD|PENDING", [{"CPU": 4}, {"CPU": 4}])
    pack = ("a:PACK|PENDING", [{"CPU": 2, "GPU": 1}, {"CPU": 1}])
    state = parse_status(reply(gangs=[spread, pack, spread]), SPEC)
    assert state.demand.placement_groups == (
        PlacementGroup(Strategy.PACK, (r(CPU=2, GPU=1), r(CPU=1))),
        PlacementGroup(Strategy.STRICT_SPREAD, (r(CPU=4), r(CPU=4)), count=2),
    )


@pytest.mark.parametrize(
    ("details", "strategy"),
    [
        ("id:PACK|PENDING", Strategy.PACK),
        ("id:STRICT_PACK|RESCHEDULING", Strategy.STRICT_PACK),
        ("id:SPREAD|PENDING", Strategy.SPREAD),
        ("", Strategy.STRICT_SPREAD),
        ("id:FUTURE_STRATEGY|PENDING", Strategy.STRICT_SPREAD),
    ],
)
def test_unknown_strategies_are_read_as_the_one_needing_most_pods(
    details: str, strategy: Strategy
) -> None:
    """A missing or unknown strategy is STRICT_SPREAD, never an under-report."""
    assert parse_strategy(details) == strategy


def test_gcs_constraints_win_over_the_v1_kv_request() -> None:
    """With autoscaler v2 the GCS holds request_resources(); the v1 KV key is the fallback."""
    v1 = b'[{"GPU": 1}, {"GPU": 1}, {"CPU": 3}]'
    with_gcs = parse_status(reply(constraints=[({"CPU": 2}, 3)]), SPEC, v1_requests=v1)
    assert with_gcs.demand.constraints == (Bundle(r(CPU=2), 3),)
    without = parse_status(reply(), SPEC, v1_requests=v1)
    assert without.demand.constraints == (Bundle(r(CPU=3), 1), Bundle(r(GPU=1), 2))


@pytest.mark.parametrize("raw", [b"{not json", b'{"CPU": 1}', b"[1]"])
def test_a_malformed_v1_request_is_refused_and_read_as_no_request(raw: bytes) -> None:
    """A corrupt KV value (any task may write it) is no floor and a refusal naming the key, never
    a failed poll (issue 35: it failed every poll for as long as the key lived)."""
    read = parse_v1_requests(raw)
    assert read.bundles == ()
    assert read.refused is not None
    assert read.refused.detail.startswith("autoscaler_resource_request: ")


def test_nodes_map_by_instance_id_and_type_name_and_the_head_and_dead_are_left_out() -> None:
    """KubeRay mapping; the head (node:__internal_head__) and DEAD nodes are not workers."""
    nodes = [
        node_state(b"a", pod="ray-cpu-a", group="cpu", idle_ms=61_500),
        node_state(b"b", pod="ray-cpu-b", group="cpu", status=pb.RUNNING, available={"CPU": 2}),
        node_state(b"c", pod="ray-cpu-c", group="cpu", status=pb.DRAINING),
        node_state(b"d", pod="ray-cpu-d", group="cpu", status=pb.DEAD),
        node_state(b"h", total={"CPU": 0, "node:__internal_head__": 1}),
    ]
    state = parse_status(reply(nodes=nodes), SPEC)
    assert [(n.pod, n.group, n.status, n.idle_s, n.available) for n in state.nodes] == [
        ("ray-cpu-a", "cpu", NodeStatus.RUNNING, 61.5, r(CPU=10)),
        ("ray-cpu-b", "cpu", NodeStatus.RUNNING, 0.0, r(CPU=2)),
        ("ray-cpu-c", "cpu", NodeStatus.DRAINING, 0.0, r(CPU=10)),
    ]
    assert state.nodes[0].node_id == (b"a" + b"\0" * 27).hex()
    assert state.nodes[0].total == r(CPU=10)  # node:<ip> dropped
    assert state.unmapped == 0


def test_unmappable_nodes_are_exported_with_no_group_and_counted() -> None:
    """No name and unknown IP, or a group not in the spec: group "", pod name or node id."""
    nodes = [
        node_state(b"x", ip="10.0.0.9"),
        node_state(b"y", pod="other-pod", group="tpu"),
        node_state(b"z", ip="10.0.0.7"),
    ]
    state = parse_status(reply(nodes=nodes), SPEC, pods=[PodRef("ray-gpu-z", "gpu", ("10.0.0.7",))])
    assert sorted((n.pod, n.group) for n in state.nodes) == [
        ((b"x" + b"\0" * 27).hex(), ""),
        ("other-pod", ""),
        ("ray-gpu-z", "gpu"),
    ]
    assert state.unmapped == 2


@pytest.mark.parametrize(
    ("name", "internal"),
    [
        ("node:10.0.0.1", True),
        ("node:__internal_head__", True),
        (f"CPU_group_{PG_ID}", True),
        (f"CPU_group_0_{PG_ID}", True),
        (f"bundle_group_3_{PG_ID}", True),
        ("CPU", False),
        ("accelerator_type:A100", False),
    ],
)
def test_internal_resources_match_rays_own_rules(name: str, internal: bool) -> None:
    """Our filter agrees with Ray's is_placement_group_resource plus the node: prefix."""
    from ray.autoscaler._private.util import is_placement_group_resource

    assert is_internal_resource(name) is internal
    assert is_internal_resource(name) == (
        name.startswith("node:") or is_placement_group_resource(name)
    )


def test_a_custom_resource_named_like_a_group_is_still_capacity() -> None:
    """Stricter than Ray's helper (which matches any "_group_"): a pg id is 36 hex digits."""
    from ray.autoscaler._private.util import is_placement_group_resource

    assert is_placement_group_resource("my_group_resource")
    assert not is_internal_resource("my_group_resource")


# --- bounding shapes --------------------------------------------------------------------------


def test_within_the_bound_nothing_is_merged() -> None:
    """max_shapes not exceeded: the demand is returned as is."""
    demand = Demand(bundles=(Bundle(r(CPU=1), 3), Bundle(r(CPU=2), 1)))
    assert bound_shapes(demand, 3) == (demand, 0)


def test_overflow_merges_the_smallest_counts_into_their_componentwise_max() -> None:
    """5 task shapes, bound 3: the three rarest become one max shape with their summed count."""
    demand = Demand(
        bundles=(
            Bundle(r(CPU=5), 20),
            Bundle(r(CPU=1, memory=4), 1),
            Bundle(r(CPU=2), 2),
            Bundle(r(GPU=1), 3),
            Bundle(r(CPU=8), 9),
        )
    )
    bounded, merged = bound_shapes(demand, 3)
    assert merged == 3
    assert bounded.bundles == (
        Bundle(r(CPU=2, GPU=1, memory=4), 6),
        Bundle(r(CPU=5), 20),
        Bundle(r(CPU=8), 9),
    )


def test_merged_placement_groups_become_strict_spread_with_bundlewise_max() -> None:
    """Overflowing placement groups merge into one STRICT_SPREAD dominating each of them."""
    demand = Demand(
        bundles=(Bundle(r(CPU=1), 1),),
        placement_groups=(
            PlacementGroup(Strategy.PACK, (r(CPU=4), r(CPU=4)), 5),
            PlacementGroup(Strategy.STRICT_PACK, (r(CPU=2, GPU=1),), 1),
            PlacementGroup(Strategy.SPREAD, (r(CPU=1), r(CPU=1), r(CPU=1)), 2),
        ),
    )
    bounded, merged = bound_shapes(demand, 3)
    assert merged == 2
    assert bounded.placement_groups == (
        PlacementGroup(Strategy.PACK, (r(CPU=4), r(CPU=4)), 5),
        PlacementGroup(Strategy.STRICT_SPREAD, (r(CPU=2, GPU=1), r(CPU=1), r(CPU=1)), 3),
    )
    assert bounded.bundles == demand.bundles


shapes = st.builds(lambda cpu, gpu: r(CPU=cpu, GPU=gpu), st.integers(1, 16), st.integers(0, 2))
bundle_lists = st.lists(st.builds(Bundle, shapes, st.integers(1, 50)), max_size=30)


@settings(max_examples=200, deadline=None)
@given(tasks=bundle_lists, floors=bundle_lists, bound=st.integers(3, 12))
def test_bounding_never_under_reports(
    tasks: list[Bundle], floors: list[Bundle], bound: int
) -> None:
    """Property: counts are kept, the bound holds, every bundle fits in some reported shape."""
    demand = Demand(bundles=tuple(tasks), constraints=tuple(floors))
    bounded, _ = bound_shapes(demand, bound)
    assert len(bounded.bundles) + len(bounded.constraints) <= max(bound, 2)
    for before, after in ((tasks, bounded.bundles), (floors, bounded.constraints)):
        assert total_count(after) == total_count(before)
        for b in before:
            assert any(b.resources.fits_in(a.resources) for a in after)


# --- nodes completed with victims and pending pods ----------------------------------------------


def test_victims_and_pods_not_yet_in_ray_complete_the_node_list() -> None:
    """Victims get VICTIM (added with the pod shape if drained away); new pods are PENDING."""
    ray_nodes = [
        WorkerNode("ray-cpu-a", "cpu", r(CPU=10), r(CPU=10), idle_s=99, node_id="aa"),
        WorkerNode("ray-cpu-b", "cpu", r(CPU=10), r(CPU=4), node_id="bb"),
    ]
    victims = {"ray-cpu-a": "cpu", "ray-cpu-gone": "cpu"}
    pods = [PodEntry("ray-cpu-a", "cpu"), PodEntry("ray-cpu-new", "cpu"), PodEntry("x", "tpu")]
    nodes = complete_nodes(SPEC, ray_nodes, victims, pods)
    assert [(n.pod, n.status, n.total) for n in nodes] == [
        ("ray-cpu-a", NodeStatus.VICTIM, r(CPU=10)),
        ("ray-cpu-b", NodeStatus.RUNNING, r(CPU=10)),
        ("ray-cpu-gone", NodeStatus.VICTIM, r(CPU=10)),
        ("ray-cpu-new", NodeStatus.PENDING, r(CPU=10)),
    ]


# --- export ----------------------------------------------------------------------------------


def snapshot(success: bool = True, when: float = 1700000000.0) -> schema.ClusterSnapshot:
    """A small snapshot with every kind of series."""
    demand = Demand(
        bundles=(Bundle(r(CPU=5), 20),),
        placement_groups=(PlacementGroup(Strategy.STRICT_SPREAD, (r(CPU=4), r(CPU=4))),),
        constraints=(Bundle(r(GPU=1), 4),),
    )
    nodes = (
        WorkerNode("ray-cpu-a", "cpu", r(CPU=10), r(CPU=0.5), idle_s=0, node_id="ab" * 28),
        WorkerNode(
            "ray-gpu-b", "gpu", r(CPU=8, GPU=1), r(CPU=8, GPU=1), idle_s=75.25, node_id="cd" * 28
        ),
    )
    return schema.ClusterSnapshot(PlanningInput(SPEC, demand, nodes), when, success)


def scrape(registry: CollectorRegistry) -> list[schema.Sample]:
    """What a Prometheus scrape of ``registry`` reads, as schema samples."""
    text = generate_latest(registry).decode()
    return [
        schema.Sample(s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith(schema.PREFIX)
    ]


def test_the_collector_serves_exactly_the_schema_encoding() -> None:
    """A scrape yields encoding.encode(snapshot), sealed (its series count and digest), sample
    for sample (grouped by family)."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(snapshot())

    def key(s: schema.Sample) -> tuple[str, list[tuple[str, str]], float]:
        return (s.name, sorted(s.labels.items()), s.value)

    sealed = digest.seal(encoding.encode(snapshot()))
    assert sorted(scrape(registry), key=key) == sorted(sealed, key=key)


def test_the_scraped_text_decodes_back_to_the_snapshot() -> None:
    """Round trip through the /metrics text format: what the scaler reads is what was seen."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(snapshot())
    assert decoding.decode(scrape(registry)) == {"demo": snapshot()}


def test_the_seed_demand_line_is_exact() -> None:
    """The exposition line a reader relies on for 20 tasks of 5 CPUs."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(snapshot())
    lines = generate_latest(registry).decode().splitlines()
    assert (
        'ray_scaler_demand_bundles{cluster="demo",kind="task",shape="CPU=5",strategy=""} 20.0'
        in lines
    )
    assert (
        'ray_scaler_demand_bundles{cluster="demo",kind="placement_group",'
        'shape="CPU=4;CPU=4",strategy="STRICT_SPREAD"} 1.0' in lines
    )


# --- the loop ---------------------------------------------------------------------------------


def make_loop(
    reader: FakeReader,
    victims: FakeVictims | None = None,
    clock: FakeClock | None = None,
    planned: PlannedTargets | None = None,
    **kw: Any,
) -> tuple[AgentLoop, CollectorRegistry]:
    """A loop on a fresh registry with fake time."""
    from keda_ray_scaler.planner import plan

    registry = CollectorRegistry()
    loop = AgentLoop(
        SPEC,
        reader,
        SnapshotCollector(registry),
        AgentMetrics(registry, "demo"),
        clock or FakeClock(),
        LoopSettings(**kw),
        victims=PlannedVictims(victims, plan) if victims is not None else NO_VICTIMS,
        planned=planned if planned is not None else NO_PLANNED,
    )
    return loop, registry


def value(registry: CollectorRegistry, name: str) -> float | None:
    """One sample's value by name, cluster demo."""
    return registry.get_sample_value(name, {"cluster": "demo"})


async def test_before_any_success_only_specs_are_exported_with_time_zero() -> None:
    """A fresh agent says success 0, time 0: no reader can take it for data."""
    loop, registry = make_loop(FakeReader())
    assert (
        value(registry, schema.SNAPSHOT_SUCCESS),
        value(registry, schema.SNAPSHOT_TIMESTAMP),
    ) == (
        0.0,
        0.0,
    )
    assert loop.snapshot.input == PlanningInput(SPEC)


async def test_a_failed_poll_keeps_the_last_data_with_its_old_time_and_success_zero() -> None:
    """Ray down after a good poll: success 0, snapshot time of the last success, error counted."""
    loop, registry = make_loop(FakeReader(ray_state(Bundle(r(CPU=5), 20)), RayError("down")))
    first = await loop.poll_once()
    second = await loop.poll_once()
    assert (first.success, first.snapshot_time_s) == (True, 1000.0)
    assert (second.success, second.snapshot_time_s) == (False, 1000.0)
    assert second.input == first.input
    assert value(registry, schema.SNAPSHOT_SUCCESS) == 0.0
    assert value(registry, schema.SNAPSHOT_TIMESTAMP) == 1000.0
    assert value(registry, "ray_scaler_agent_poll_errors_total") == 1.0


async def test_each_published_input_is_planned_for_the_lead_and_a_failed_poll_clears_it() -> None:
    """The applier's lead gets the target the scaler will compute from the same export; after a
    failed poll it gets nothing, however fresh."""
    from keda_ray_scaler.planner import plan

    planned = PlannedTargets(plan, max_age_s=30.0)
    reader = FakeReader(ray_state(Bundle(r(CPU=5), 20)), RayError("down"))
    loop, _ = make_loop(reader, planned=planned)
    snap = await loop.poll_once()
    assert planned.get("cpu", 1000.0) == plan(snap.input).groups["cpu"].target == 10
    assert planned.wake.is_set()
    await loop.poll_once()
    assert planned.get("cpu", 1000.0) is None


async def test_too_many_shapes_are_merged_and_counted() -> None:
    """--max-shapes 3 with 5 task shapes: 3 merged, counted, 3 series exported."""
    many = [Bundle(r(CPU=c), c) for c in (1, 2, 3, 4, 5)]
    loop, registry = make_loop(FakeReader(ray_state(*many)), max_shapes=3, scale_down=False)
    snap = await loop.poll_once()
    assert len(snap.input.demand.bundles) == 3
    assert total_count(snap.input.demand.bundles) == 15
    assert value(registry, "ray_scaler_demand_shapes_merged_total") == 3.0


async def test_new_victims_are_published_in_the_same_poll() -> None:
    """The plan goes to the victim controller; its confirmed victims show at once."""
    victims = FakeVictims(after={"ray-cpu-a": "cpu"})
    loop, registry = make_loop(FakeReader(ray_state()), victims)
    snap = await loop.poll_once()
    assert victims.plans[0].groups["cpu"].removable == ("ray-cpu-a",)
    assert [(n.pod, n.status) for n in snap.input.nodes] == [("ray-cpu-a", NodeStatus.VICTIM)]
    labels = {"cluster": "demo", "pod": "ray-cpu-a", "group": "cpu", "node_id": "ab" * 28}
    assert (
        registry.get_sample_value(schema.NODE_INFO, {**labels, "state": "victim", "reason": ""})
        == 1.0
    )


async def test_a_task_counted_running_and_pending_is_left_out_of_the_export_only() -> None:
    """Ray counts a task used and still pending while its worker starts (demand_filter): the
    export leaves it out of the demand; the victim plan gets Ray's demand as read."""
    node_id = "ab" * 28
    free = WorkerNode("ray-cpu-a", "cpu", r(CPU=10), r(CPU=10), node_id=node_id)
    busy = replace(free, available=r(CPU=0))
    two = Demand(bundles=(Bundle(r(CPU=5), 2),))
    states = [RayState(two, (free,)), RayState(two, (busy,)), RayState(two, (busy,))]
    clock, victims = FakeClock(), FakeVictims(after={})
    loop, registry = make_loop(FakeReader(*states), victims, clock, use_window_s=10.0)

    def exported() -> int:
        return total_count(loop.snapshot.input.demand.bundles)

    await loop.poll_once()  # t = 0 s: 2 pending, pod free
    clock.t += 5.0
    await loop.poll_once()  # t = 5 s: the pod took 10 CPUs, pending still says 2
    assert exported() == 0
    assert value(registry, "ray_scaler_agent_double_counted_bundles") == 2.0
    assert victims.plans[-1].groups["cpu"].new == 1  # planned on the 2 pending tasks as read
    clock.t += 6.0
    await loop.poll_once()  # t = 11 s: the rise lasted the window: the 2 tasks are believed
    assert exported() == 2
    assert value(registry, "ray_scaler_agent_double_counted_bundles") == 0.0


async def test_no_scale_down_never_runs_the_victim_protocol() -> None:
    """--no-scale-down: export only."""
    victims = FakeVictims(after={"ray-cpu-a": "cpu"})
    loop, _ = make_loop(FakeReader(ray_state()), victims, scale_down=False)
    snap = await loop.poll_once()
    assert victims.plans == []
    assert [n.status for n in snap.input.nodes] == [NodeStatus.RUNNING]


# --- the command's bad input --------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _structlog_defaults() -> Iterator[None]:
    """The command configures structlog globally (bound to captured stderr): undo it."""
    yield
    structlog.reset_defaults()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-shapes", "2"], "keda-ray-scaler agent: --max-shapes: must be >= 3, got 2"),
        (["--interval", "0"], "keda-ray-scaler agent: --interval: must be > 0, got 0"),
        (
            ["--watch-interval", "-1"],
            "keda-ray-scaler agent: --watch-interval: must be >= 0, got -1",
        ),
        (
            ["--health-intervals", "0"],
            "keda-ray-scaler agent: --health-intervals: must be > 0, got 0",
        ),
        (
            ["--gcs-address", "nohost"],
            "keda-ray-scaler agent: --gcs-address: not host:port: 'nohost'",
        ),
    ],
)
def test_bad_flags_exit_2_with_one_line_naming_the_flag(
    flags: list[str], message: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad input: exit code 2, one line on stderr that names the flag."""
    from keda_ray_scaler.cli import main

    spec = tmp_path / "cluster.yaml"
    spec.write_text("cluster: demo\nworkerGroups:\n  - {name: cpu, resources: {CPU: 10}}\n")
    argv = ["agent", "--cluster-spec", str(spec), "--no-scale-down", "--log-format", "console"]
    assert main([*argv, *flags]) == 2
    assert capsys.readouterr().err.splitlines() == [message]


def test_scale_down_needs_a_namespace(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --no-scale-down the pods' namespace is required."""
    from keda_ray_scaler.cli import main

    spec = tmp_path / "cluster.yaml"
    spec.write_text("cluster: demo\nworkerGroups:\n  - {name: cpu, resources: {CPU: 10}}\n")
    assert main(["agent", "--cluster-spec", str(spec)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "keda-ray-scaler agent: --namespace: required unless --no-scale-down"
    ]


def test_a_bad_cluster_spec_exits_2_naming_the_file(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The spec is parsed by config.load_cluster_spec; its error names the file."""
    from keda_ray_scaler.cli import main

    spec = tmp_path / "cluster.yaml"
    spec.write_text("cluster: demo\nworkerGroups: 7\n")
    assert main(["agent", "--cluster-spec", str(spec), "--no-scale-down"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"keda-ray-scaler agent: {spec}")


async def test_a_crashing_poll_is_a_failed_poll_and_polling_goes_on() -> None:
    """An unexpected error: success 0, error counted, the next poll runs and recovers."""
    reader = FakeReader(ValueError("bug"), ray_state(Bundle(r(CPU=5), 20)))
    clock = StopAfter(sleeps=2)
    loop, registry = make_loop(reader, scale_down=False, clock=clock)
    with capture_logs() as logs, pytest.raises(asyncio.CancelledError):
        await loop.run()
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["poll crashed"]
    assert clock.t == 1010.0  # two intervals of 5 s
    assert value(registry, "ray_scaler_agent_poll_errors_total") == 1.0
    assert value(registry, schema.SNAPSHOT_SUCCESS) == 1.0
    assert loop.snapshot.input.demand.bundles == (Bundle(r(CPU=5), 20),)


async def test_a_poll_whose_export_raises_is_counted_and_the_loop_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Encoding crashes once: the old data is marked not fresh without encoding, polls go on."""
    reader = FakeReader(ray_state(Bundle(r(CPU=5), 20)), ray_state(Bundle(r(CPU=5), 20)))
    clock = StopAfter(sleeps=2)
    loop, registry = make_loop(reader, scale_down=False, clock=clock)
    real_encode = encoding.encode
    calls: list[int] = []

    def encode_once_broken(snapshot: schema.ClusterSnapshot) -> list[schema.Sample]:
        calls.append(1)
        if len(calls) == 1:
            raise ShapeError("cannot encode")
        return real_encode(snapshot)

    monkeypatch.setattr(encoding, "encode", encode_once_broken)
    with capture_logs() as logs, pytest.raises(asyncio.CancelledError):
        await loop.run()
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["poll crashed"]
    assert (
        value(registry, "ray_scaler_agent_poll_errors_total"),
        value(registry, "ray_scaler_agent_poll_crashes_total"),
        value(registry, schema.SNAPSHOT_SUCCESS),
        value(registry, schema.SNAPSHOT_TIMESTAMP),
    ) == (1.0, 1.0, 1.0, 1005.0)


async def test_between_the_crash_and_the_next_poll_the_old_data_says_not_fresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a crash the scrape shows success 0 and the last success's time, not a fresh one."""
    reader = FakeReader(ray_state(Bundle(r(CPU=5), 20)), ray_state(Bundle(r(CPU=5), 20)))
    loop, registry = make_loop(reader, scale_down=False, clock=StopAfter(sleeps=2))
    await loop.poll_once()
    monkeypatch.setattr(encoding, "encode", broken_encode)
    with capture_logs(), pytest.raises(asyncio.CancelledError):
        await loop.run()
    assert (
        value(registry, schema.SNAPSHOT_SUCCESS),
        value(registry, schema.SNAPSHOT_TIMESTAMP),
    ) == (
        0.0,
        1000.0,
    )
    assert not loop.snapshot.success


def broken_encode(snapshot: schema.ClusterSnapshot) -> list[schema.Sample]:
    """encoding.encode with a bug."""
    raise ShapeError("cannot encode")


async def test_tasks_asking_hostile_resource_names_never_stop_the_export() -> None:
    """`,` `;` `=` newline, unicode and 5,000 characters beside the seed: every poll succeeds."""
    hostile = [Bundle(Resources.of({name: 1}), 1) for name in HOSTILE_NAMES]
    seed = Bundle(r(CPU=5), 20)
    reader = FakeReader(*(ray_state(seed, *hostile) for _ in range(3)), ray_state(seed))
    loop, registry = make_loop(reader, scale_down=False, clock=StopAfter(sleeps=4))
    with capture_logs() as logs, pytest.raises(asyncio.CancelledError):
        await loop.run()
    assert [e for e in logs if e["log_level"] == "error"] == []
    assert value(registry, "ray_scaler_agent_poll_errors_total") == 0.0
    assert value(registry, schema.SNAPSHOT_SUCCESS) == 1.0
    assert decoding.decode(scrape(registry))["demo"].input.demand.bundles == (seed,)


async def test_hostile_names_reach_the_scaler_whole_and_the_long_one_as_its_stand_in() -> None:
    """The scraped text decodes to the exact names; the 5,000-character one to its stand-in."""
    hostile = [Bundle(Resources.of({name: 1}), 1) for name in HOSTILE_NAMES]
    seed = Bundle(r(CPU=5), 20)
    loop, registry = make_loop(FakeReader(ray_state(seed, *hostile)), scale_down=False)
    await loop.poll_once()
    decoded = decoding.decode(scrape(registry))["demo"].input.demand.bundles
    names = {n for b in decoded for n, _ in b.resources}
    long_name = HOSTILE_NAMES[-1]
    assert names == {"CPU", *HOSTILE_NAMES[:-1], schema.stand_in(long_name)}
    scraped = scrape(registry)
    # every label value a resource name reaches; the seal's list is the agent's own constants
    assert (
        max(len(v) for s in scraped if s.name != schema.SNAPSHOT_COVERS for v in s.labels.values())
        <= 253
    )
    assert [s for s in scraped if s.name == schema.SNAPSHOT_COVERS] == [coverage.covers("demo")]


class StopAfter(FakeClock):
    """Fake time that cancels the loop at its ``sleeps``-th sleep."""

    def __init__(self, sleeps: int) -> None:
        super().__init__()
        self.left = sleeps

    async def sleep(self, s: float) -> None:
        await super().sleep(s)
        self.left -= 1
        if self.left == 0:
            raise asyncio.CancelledError


def test_ray_nodes_of_pods_being_deleted_or_gone_are_left_out() -> None:
    """A raylet outliving its pod must not hold the floor high; an unseen pod's node stays."""
    ray_nodes = [
        WorkerNode("ray-cpu-a", "cpu", r(CPU=10), r(CPU=10), node_id="aa"),
        WorkerNode("ray-cpu-b", "cpu", r(CPU=10), r(CPU=4), node_id="bb"),
        WorkerNode("ray-cpu-c", "cpu", r(CPU=10), r(CPU=4), node_id="cc"),
        WorkerNode("ray-cpu-never-seen", "cpu", r(CPU=10), r(CPU=4), node_id="dd"),
    ]
    pods = [PodEntry("ray-cpu-a", "cpu", active=False), PodEntry("ray-cpu-b", "cpu")]
    nodes = complete_nodes(SPEC, ray_nodes, {}, pods, gone=frozenset({"ray-cpu-c"}))
    assert [n.pod for n in nodes] == ["ray-cpu-b", "ray-cpu-never-seen"]


async def test_the_loop_forgets_a_node_whose_pod_left_the_cache() -> None:
    """Seen in one synced listing, absent in the next: its Ray node no longer counts."""
    nodes = (
        WorkerNode("ray-cpu-a", "cpu", r(CPU=10), r(CPU=10), node_id="aa"),
        WorkerNode("ray-cpu-b", "cpu", r(CPU=10), r(CPU=10), node_id="bb"),
    )
    listings: list[list[PodEntry] | None] = [
        [PodEntry("ray-cpu-a", "cpu"), PodEntry("ray-cpu-b", "cpu")],
        None,  # the cache is resyncing: nothing new is decided
        [PodEntry("ray-cpu-b", "cpu")],
    ]
    loop, _ = make_loop(
        FakeReader(*(RayState(Demand(), nodes) for _ in listings)), scale_down=False
    )
    seen = []
    for listing in listings:
        loop._pods = lambda listing=listing: listing
        snap = await loop.poll_once()
        seen.append([n.pod for n in snap.input.nodes])
    assert seen == [["ray-cpu-a", "ray-cpu-b"], ["ray-cpu-a", "ray-cpu-b"], ["ray-cpu-b"]]
