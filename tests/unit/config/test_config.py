"""Cluster spec and snapshot files: what parses, and the exact error for what does not."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from keda_ray_scaler.config import (
    load_cluster_spec,
    load_snapshot,
    parse_cluster_spec,
    parse_snapshot,
)
from keda_ray_scaler.config_fields import parse_quantity, parse_resources
from keda_ray_scaler.documents import yaml_loader
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.model import (
    DEFAULT_UPSCALING_SPEED,
    Bundle,
    NodeStatus,
    PlacementGroup,
    Resources,
    Strategy,
    WorkerGroup,
    WorkerNode,
)

GI = 1024**3
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def spec(**top: Any) -> dict[str, Any]:
    """A minimal valid cluster document with ``top`` merged in."""
    doc: dict[str, Any] = {
        "cluster": "demo",
        "workerGroups": [{"name": "cpu", "resources": {"CPU": 10}}],
    }
    doc.update(top)
    return doc


def error(fn: Any, *args: Any) -> ConfigError:
    """The ConfigError ``fn(*args)`` raises."""
    with pytest.raises(ConfigError) as info:
        fn(*args)
    return info.value


def test_the_issue_example_parses_to_exact_values() -> None:
    """The cluster file of the issue gives exact groups, bounds and bytes."""
    doc = {
        "cluster": "demo",
        "maxWorkers": 100,
        "upscalingSpeed": 1.0,
        "workerGroups": [
            {
                "name": "cpu",
                "resources": {"CPU": 10, "memory": "32Gi"},
                "minReplicas": 0,
                "maxReplicas": 50,
                "idleTimeoutSeconds": 60,
                "cost": 1.0,
            },
            {
                "name": "gpu",
                "resources": {"CPU": 8, "GPU": 1, "memory": "64Gi", "accelerator_type:A100": 1},
                "maxReplicas": 8,
            },
        ],
    }
    c = parse_cluster_spec(doc, "cluster.yaml")
    assert (c.name, c.max_workers, c.upscaling_speed) == ("demo", 100, 1.0)
    assert c.worker_groups == (
        WorkerGroup("cpu", Resources.of(CPU=10, memory=32 * GI), 0, 50, 60.0, 1.0),
        WorkerGroup(
            "gpu",
            Resources.of({"CPU": 8, "GPU": 1, "memory": 64 * GI, "accelerator_type:A100": 1}),
            0,
            8,
            60.0,
            1.0,
        ),
    )


def test_defaults_follow_kuberay() -> None:
    """Unset upscalingSpeed is KubeRay's 1000, idle timeout 60 s, no maxWorkers."""
    c = parse_cluster_spec(spec(), "f")
    assert (c.upscaling_speed, c.max_workers) == (DEFAULT_UPSCALING_SPEED, None)
    assert c.worker_groups[0].idle_timeout_s == 60.0


@pytest.mark.parametrize(
    ("value", "units"),
    [(10, 100_000), (0.5, 5_000), (0.00004, 0), (0.0001, 1), (2.00004, 20_000)],
)
def test_cpu_amounts_round_to_ray_granularity(value: float, units: int) -> None:
    """CPU amounts are kept in Ray's 0.0001 fixed point."""
    assert parse_resources({"CPU": value}, "f", "r").get("CPU") == units


@pytest.mark.parametrize(
    ("value", "expected"),
    [("32Gi", 32 * GI), ("500M", 500_000_000), (1024, 1024), ("1Ki", 1024), ("1.5Gi", 3 * GI // 2)],
)
def test_memory_takes_bytes_or_kubernetes_quantities(value: object, expected: int) -> None:
    """memory accepts plain bytes and quantities such as 32Gi."""
    assert parse_resources({"memory": value}, "f", "r") == Resources.of(memory=expected)


def test_resource_names_holding_the_shape_separators_are_accepted() -> None:
    """Any name Ray accepts is a valid group resource: the export escapes it (schema)."""
    assert parse_resources({"a,b": 1, "c;d=e": 2}, "f", "r") == Resources.of({"a,b": 1, "c;d=e": 2})


@pytest.mark.parametrize(
    ("mapping", "field", "problem"),
    [
        ({"memory": "32 gigs"}, "r.memory", "'32 gigs' is not a quantity like 32Gi"),
        ({"CPU": "10"}, "r.CPU", "expected a number, got '10'"),
        ({"CPU": -1}, "r.CPU", "must be a finite non-negative amount, got -1"),
        ({"CPU": float("nan")}, "r.CPU", "must be a finite non-negative amount, got nan"),
        ({"CPU": True}, "r.CPU", "expected a number, got True"),
    ],
)
def test_bad_resource_amounts_name_the_field(
    mapping: dict[str, object], field: str, problem: str
) -> None:
    """Each bad amount names the field and the problem."""
    e = error(parse_resources, mapping, "f.yaml", "r")
    assert (e.where, e.field, e.problem) == ("f.yaml", field, problem)


@pytest.mark.parametrize(
    ("doc", "field", "problem"),
    [
        (
            spec(workers=3),
            "workers",
            "unknown key (allowed: cluster, maxWorkers, upscalingSpeed, workerGroups)",
        ),
        ({"workerGroups": []}, "cluster", "required"),
        (spec(workerGroups=[]), "workerGroups", "at least one worker group is required"),
        (
            spec(workerGroups=[{"name": "cpu", "resources": {"CPU": 1}, "maxReplica": 3}]),
            "workerGroups[0].maxReplica",
            "unknown key (allowed: name, resources, minReplicas, maxReplicas,"
            " idleTimeoutSeconds, cost, labels, priority)",
        ),
        (
            spec(
                workerGroups=[
                    {"name": "cpu", "resources": {"CPU": 1}},
                    {"name": "g", "resources": {"memory": "x"}},
                ]
            ),
            "workerGroups[1].resources.memory",
            "'x' is not a quantity like 32Gi",
        ),
        (spec(workerGroups=[{"name": "cpu"}]), "workerGroups[0].resources", "required"),
        (
            spec(workerGroups=[{"name": "cpu", "resources": {"CPU": 1}, "minReplicas": -1}]),
            "workerGroups[0].minReplicas",
            "must be at least 0, got -1",
        ),
        (
            spec(
                workerGroups=[
                    {"name": "cpu", "resources": {"CPU": 1}, "minReplicas": 3, "maxReplicas": 2}
                ]
            ),
            "workerGroups[0].maxReplicas",
            "2 is below minReplicas 3",
        ),
        (
            spec(
                workerGroups=[
                    {"name": "cpu", "resources": {"CPU": 1}},
                    {"name": "cpu", "resources": {"CPU": 2}},
                ]
            ),
            "workerGroups[1].name",
            "duplicate worker group 'cpu'",
        ),
        (
            spec(workerGroups=[{"name": "CPU_Group", "resources": {"CPU": 1}}]),
            "workerGroups[0].name",
            "'CPU_Group' is not a DNS-1123 label (lowercase letters, digits, '-')",
        ),
        (spec(maxWorkers=-2), "maxWorkers", "must be at least 0, got -2"),
        (spec(upscalingSpeed=0), "upscalingSpeed", "must be a finite positive number, got 0"),
        ([1, 2], "(top level)", "expected a mapping, got list"),
    ],
)
def test_bad_cluster_specs_name_the_field(doc: object, field: str, problem: str) -> None:
    """Each bad cluster spec names the field path and the problem."""
    e = error(parse_cluster_spec, doc, "cluster.yaml")
    assert (e.where, e.field, e.problem) == ("cluster.yaml", field, problem)


CLUSTER = parse_cluster_spec(spec(), "cluster.yaml")


def test_a_snapshot_parses_to_exact_values() -> None:
    """Bundles, placement groups, constraints and nodes, with defaults filled in."""
    doc = {
        "bundles": [{"resources": {"CPU": 5}, "count": 20}],
        "placementGroups": [{"strategy": "STRICT_SPREAD", "bundles": [{"CPU": 4}, {"CPU": 4}]}],
        "constraints": [{"resources": {"GPU": 1}, "count": 4}],
        "nodes": [
            {
                "group": "cpu",
                "pod": "a",
                "total": {"CPU": 10},
                "available": {"CPU": 2},
                "idleSeconds": 0,
                "state": "running",
            },
            {"group": "cpu", "pod": "b", "state": "pending"},
        ],
    }
    inp = parse_snapshot(doc, "snap.yaml", CLUSTER)
    assert inp.demand.bundles == (Bundle(Resources.of(CPU=5), 20),)
    assert inp.demand.placement_groups == (
        PlacementGroup(Strategy.STRICT_SPREAD, (Resources.of(CPU=4), Resources.of(CPU=4)), 1),
    )
    assert inp.demand.constraints == (Bundle(Resources.of(GPU=1), 4),)
    assert inp.nodes == (
        WorkerNode("a", "cpu", Resources.of(CPU=10), Resources.of(CPU=2), 0.0, NodeStatus.RUNNING),
        WorkerNode("b", "cpu", Resources.of(CPU=10), Resources.of(CPU=10), 0.0, NodeStatus.PENDING),
    )


def test_an_empty_snapshot_is_no_demand() -> None:
    """An empty document means no demand and no pods."""
    inp = parse_snapshot(None, "snap.yaml", CLUSTER)
    assert (inp.demand.bundles, inp.nodes) == ((), ())


@pytest.mark.parametrize(
    ("doc", "field", "problem"),
    [
        (
            {"bundles": [{"resources": {"CPU": 1}, "count": -3}]},
            "bundles[0].count",
            "must be at least 0, got -3",
        ),
        (
            {"bundles": [{"resources": {"CPU": 1}, "count": 1.5}]},
            "bundles[0].count",
            "expected an integer, got 1.5",
        ),
        ({"bundles": [{"count": 2}]}, "bundles[0].resources", "required"),
        ({"bundles": {"CPU": 1}}, "bundles", "expected a list, got dict"),
        (
            {"pending": []},
            "pending",
            "unknown key (allowed: bundles, placementGroups, constraints, nodes)",
        ),
        (
            {"placementGroups": [{"strategy": "PACKED", "bundles": [{"CPU": 1}]}]},
            "placementGroups[0].strategy",
            "'PACKED' is not one of PACK, SPREAD, STRICT_PACK, STRICT_SPREAD",
        ),
        (
            {"placementGroups": [{"strategy": "PACK", "bundles": []}]},
            "placementGroups[0].bundles",
            "a placement group needs bundles",
        ),
        (
            {"placementGroups": [{"strategy": "PACK", "bundles": [{"CPU": 1}, {"CPU": "x"}]}]},
            "placementGroups[0].bundles[1].CPU",
            "expected a number, got 'x'",
        ),
        (
            {"constraints": [{"resources": {"GPU": -1}}]},
            "constraints[0].resources.GPU",
            "must be a finite non-negative amount, got -1",
        ),
        (
            {"nodes": [{"group": "gpu", "pod": "a"}]},
            "nodes[0].group",
            "unknown worker group 'gpu' (known: cpu)",
        ),
        ({"nodes": [{"group": "cpu"}]}, "nodes[0].pod", "required"),
        (
            {"nodes": [{"group": "cpu", "pod": "a", "state": "idle"}]},
            "nodes[0].state",
            "'idle' is not one of pending, running, draining, victim, failing",
        ),
        (
            {"nodes": [{"group": "cpu", "pod": "a", "available": {"CPU": 11}}]},
            "nodes[0].available",
            "{CPU: 11} exceeds total {CPU: 10}",
        ),
        (
            {"nodes": [{"group": "cpu", "pod": "a", "idleSeconds": -1}]},
            "nodes[0].idleSeconds",
            "must be a finite non-negative number, got -1",
        ),
        (
            {"nodes": [{"group": "cpu", "pod": "a"}, {"group": "cpu", "pod": "a"}]},
            "nodes[1].pod",
            "duplicate pod 'a'",
        ),
    ],
)
def test_bad_snapshots_name_the_field(doc: object, field: str, problem: str) -> None:
    """Each bad snapshot names the field path and the problem."""
    e = error(parse_snapshot, doc, "snap.yaml", CLUSTER)
    assert (e.where, e.field, e.problem) == ("snap.yaml", field, problem)


def test_files_load_from_yaml(tmp_path: Path) -> None:
    """load_* read YAML files and name the file in errors."""
    c = tmp_path / "c.yaml"
    c.write_text("cluster: demo\nworkerGroups:\n  - {name: cpu, resources: {CPU: 10}}\n")
    s = tmp_path / "s.yaml"
    s.write_text("bundles:\n  - {resources: {CPU: 5}, count: -1}\n")
    cluster = load_cluster_spec(c)
    e = error(load_snapshot, s, cluster)
    assert str(e) == f"{s}: bundles[0].count: must be at least 0, got -1"


def test_broken_yaml_is_reported_with_its_line(tmp_path: Path) -> None:
    """A YAML syntax error names the file and the line."""
    f = tmp_path / "c.yaml"
    f.write_text("cluster: demo\nworkerGroups: [\n")
    e = error(load_cluster_spec, f)
    assert (e.where, e.field) == (str(f), "")
    assert e.problem.startswith("not valid YAML: ") and "line 3" in e.problem


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """A file that cannot be read is a ConfigError naming it."""
    e = error(load_cluster_spec, tmp_path / "nope.yaml")
    assert str(e) == f"{tmp_path / 'nope.yaml'}: cannot read: No such file or directory"


def test_the_example_files_parse() -> None:
    """examples/cluster.yaml and examples/snapshot.yaml are valid."""
    cluster = load_cluster_spec(EXAMPLES / "cluster.yaml")
    inp = load_snapshot(EXAMPLES / "snapshot.yaml", cluster)
    assert [g.name for g in cluster.worker_groups] == ["cpu", "gpu"]
    assert inp.demand.bundles == (Bundle(Resources.of(CPU=5), 20),)


def test_a_group_whose_pods_have_no_logical_resources_is_valid() -> None:
    """``resources: {}`` (``num-cpus: 0`` and nothing else) parses as an empty vector."""
    doc = spec(
        workerGroups=[
            {"name": "cpu", "resources": {"CPU": 1}},
            {"name": "zero", "resources": {}, "minReplicas": 2},
        ]
    )
    zero = parse_cluster_spec(doc, "c.yaml").worker_groups[1]
    assert (zero.resources, zero.min_replicas) == (Resources(), 2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("32Gi", 32 * GI), ("500M", 500 * 10**6), ("1e3", 1000), ("0.5Ki", 512), ("100m", 0.1)],
)
def test_quantities_read_as_kubernetes_reads_them(text: str, expected: float) -> None:
    """Binary and decimal suffixes and exponents, without the Kubernetes client."""
    assert parse_quantity(text) == Decimal(str(expected))


def test_parsing_a_spec_imports_no_kubernetes_client() -> None:
    """config.py parses quantities itself: ``plan`` never loads the Kubernetes client."""
    code = "import sys, keda_ray_scaler.config; print('kubernetes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_yaml_files_are_read_with_libyaml_when_present() -> None:
    """The C loader (PyYAML's libyaml binding) parses the YAML files: the CLI's parse time."""
    assert yaml_loader() is yaml.CSafeLoader
