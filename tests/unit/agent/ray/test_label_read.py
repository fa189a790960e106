"""Label selectors and node labels read from the GCS at the door: kept, or refused and counted."""

from __future__ import annotations

from keda_ray_scaler.agent.ray.label_read import node_labels
from keda_ray_scaler.agent.ray.ray_status import parse_status
from keda_ray_scaler.agent.ray.refusals import Refusal
from keda_ray_scaler.agent.ray.shape_bound import bound_shapes
from keda_ray_scaler.agent.ray.task_load import NodeLoad, QueuedShape, node_load, task_load
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.gcs._generated import common_pb2, gcs_pb2
from keda_ray_scaler.labels import MAX_LABELS, LabelSelector, Selectors, selectors_of
from keda_ray_scaler.model import Bundle, ClusterSpec, Demand, Resources, WorkerGroup

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10)),))
IN, NOT_IN = common_pb2.LABEL_OPERATOR_IN, common_pb2.LABEL_OPERATOR_NOT_IN


def sel(*alternatives: dict[str, str]) -> Selectors:
    """Selectors in fallback order, each in Ray's dict form (``{}``: any node)."""
    return selectors_of(LabelSelector.from_ray(a) for a in alternatives)


def put(target: object, *alternatives: list[tuple[str, int, list[str]]]) -> None:
    """Append label selectors (each a list of (key, operator, values)) to a proto's field."""
    for constraints in alternatives:
        s = target.add()  # type: ignore[attr-defined]
        for key, op, values in constraints:
            s.label_constraints.add(label_key=key, operator=op, label_values=values)


def reply_with(
    *tasks: tuple[float, int, list[list[tuple[str, int, list[str]]]]],
) -> pb.GetClusterStatusReply:
    """A status reply with task demand ``(cpus, count, selectors)``."""
    state = pb.ClusterResourceState()
    for cpus, count, alternatives in tasks:
        rc = state.pending_resource_requests.add(count=count)
        rc.request.resources_bundle["CPU"] = cpus
        put(rc.request.label_selectors, *alternatives)
    return pb.GetClusterStatusReply(cluster_resource_state=state)


def test_task_selectors_are_read_in_fallback_order() -> None:
    """{market-type: spot} then {} (fallback_strategy): one bundle, its list canonical."""
    reply = reply_with(
        (5, 4, [[("market-type", IN, ["spot"])], []]),
        (5, 2, [[("zone", NOT_IN, ["b", "a"])]]),
        (5, 3, []),
    )
    got = parse_status(reply, SPEC)
    assert got.demand.bundles == (
        Bundle(Resources.of(CPU=5), 3),
        Bundle(Resources.of(CPU=5), 4, sel({"market-type": "spot"}, {})),
        Bundle(Resources.of(CPU=5), 2, sel({"zone": "!in(a,b)"})),
    )
    assert got.refused == ()


def test_a_bad_selector_is_refused_counted_and_its_demand_left_out() -> None:
    """A key with a space, and an operator the proto does not have: both left out, each
    refused with label_selector_invalid; the good demand is read; the poll goes on."""
    reply = reply_with(
        (5, 1, [[("bad key", IN, ["x"])]]),
        (5, 1, [[("zone", 7, ["a"])]]),
        (5, 20, []),
    )
    got = parse_status(reply, SPEC)
    assert got.demand.bundles == (Bundle(Resources.of(CPU=5), 20),)
    assert [r.reason for r in got.refused] == [Refusal.LABEL_SELECTOR_INVALID] * 2


def test_placement_group_bundles_carry_their_own_selectors_from_bundle_selectors() -> None:
    """Ray's v2 reads bundle_selectors[0] when given: per bundle, in order."""
    state = pb.ClusterResourceState()
    gang = state.pending_gang_resource_requests.add(details="pg1:STRICT_PACK|PENDING")
    chosen = gang.bundle_selectors.add()
    for zone in ("a", ""):
        req = chosen.resource_requests.add()
        req.resources_bundle["CPU"] = 2
        if zone:
            put(req.label_selectors, [("zone", IN, [zone])])
    got = parse_status(pb.GetClusterStatusReply(cluster_resource_state=state), SPEC)
    (pg,) = got.demand.placement_groups
    assert (pg.bundles, pg.selectors) == (
        (Resources.of(CPU=2), Resources.of(CPU=2)),
        (sel({"zone": "a"}), ()),
    )


def test_request_resources_bundles_keep_their_selectors() -> None:
    """A GCS constraint with {acc: A100}: a constraint bundle with that selector."""
    state = pb.ClusterResourceState()
    c = state.cluster_resource_constraints.add()
    r = c.resource_requests.add(count=2)
    r.request.resources_bundle["GPU"] = 1
    put(r.request.label_selectors, [("acc", IN, ["A100"])])
    got = parse_status(pb.GetClusterStatusReply(cluster_resource_state=state), SPEC)
    assert got.demand.constraints == (Bundle(Resources.of(GPU=1), 2, sel({"acc": "A100"})),)


def test_node_labels_are_read_with_dynamic_ones_over_them() -> None:
    """NodeState.labels and dynamic_labels (over them), as Ray's v2 merges them."""
    state = pb.ClusterResourceState()
    ns = state.node_states.add(
        node_id=b"n1".ljust(28, b"\0"),
        instance_id="ray-cpu-a",
        ray_node_type_name="cpu",
        status=pb.RUNNING,
        total_resources={"CPU": 10},
        available_resources={"CPU": 10},
    )
    ns.labels.update({"market-type": "spot", "zone": "a"})
    ns.dynamic_labels.update({"zone": "b"})
    (node,) = parse_status(pb.GetClusterStatusReply(cluster_resource_state=state), SPEC).nodes
    assert dict(node.labels) == {"market-type": "spot", "zone": "b"}


def test_a_bad_node_label_is_left_out_of_its_labels_and_counted() -> None:
    """A value with a space and labels beyond MAX_LABELS: those left out, each refused."""
    many = {f"k{i:03d}": "v" for i in range(MAX_LABELS + 1)}
    labels, refused = node_labels({**many, "zone": "a b"}, {}, "n1")
    assert len(labels) == MAX_LABELS and "zone" not in labels
    assert [r.reason for r in refused] == [Refusal.NODE_LABEL_INVALID] * 2


def test_rays_placement_group_labels_are_left_out_without_a_refusal() -> None:
    """Ray labels every node holding a bundle ``_PG_<id>=`` (empty value): not a node label
    any selector names, and not a refusal to count on every poll."""
    labels, refused = node_labels({"zone": "a"}, {"_PG_3a1f00": "", "_PG_b2": ""}, "n1")
    assert dict(labels) == {"zone": "a"} and refused == []


def test_rule_r1_queues_keep_selectors_and_sum_only_alike_ones() -> None:
    """Two nodes queue {CPU: 1} with and without {zone: a}: two shapes, counts summed."""
    report = gcs_pb2.ResourcesData(node_id=b"h")
    for with_zone in (True, False):
        d = report.resource_load_by_shape.resource_demands.add(num_ready_requests_queued=3)
        d.shape["CPU"] = 1
        if with_zone:
            put(d.label_selectors, [("zone", IN, ["a"])])
    other = NodeLoad("77", (QueuedShape.of({"CPU": 1}, 2, (((("zone", IN, ("a",)),),))),))
    queued = task_load([node_load(report)], [other])
    got = parse_status(pb.GetClusterStatusReply(), SPEC, tasks=queued)
    assert got.demand.bundles == (
        Bundle(Resources.of(CPU=1), 3),
        Bundle(Resources.of(CPU=1), 5, sel({"zone": "a"})),
    )


def test_bounding_keeps_shared_selectors_and_drops_differing_ones() -> None:
    """Over --max-shapes the smallest series merge: differing selectors leave the merged one
    without any; the count is never lower."""
    cpu = Resources.of(CPU=1)
    demand = Demand(
        bundles=(
            Bundle(cpu, 1, sel({"zone": "a"})),
            Bundle(cpu, 2, sel({"zone": "b"})),
            Bundle(Resources.of(CPU=2), 9, sel({"zone": "a"})),
        )
    )
    bounded, merged = bound_shapes(demand, 2)
    assert merged == 2
    assert bounded.bundles == (Bundle(cpu, 3), Bundle(Resources.of(CPU=2), 9, sel({"zone": "a"})))
