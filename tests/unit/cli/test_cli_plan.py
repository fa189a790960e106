"""``keda-ray-scaler plan`` through ``main(argv)``: output formats and exit code 2 on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import keda_ray_scaler.cli as cli
from keda_ray_scaler.cli import main
from keda_ray_scaler.cli.plan import plan_to_json, plan_to_table
from keda_ray_scaler.decisions import Placed, Plan, Unplaceable, UnplaceableReason
from keda_ray_scaler.labels import LabelSelector, selectors_of
from keda_ray_scaler.model import Resources

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

CLUSTER = """\
cluster: demo
workerGroups:
  - {name: cpu, resources: {CPU: 10}, maxReplicas: 50, idleTimeoutSeconds: 60}
  - {name: gpu, resources: {CPU: 8, GPU: 1}, maxReplicas: 8, cost: 4}
"""

SNAPSHOT = """\
bundles:
  - {resources: {CPU: 5}, count: 4}
  - {resources: {CPU: 64}, count: 2}
nodes:
  - {group: cpu, pod: ray-cpu-b, idleSeconds: 300}
  - {group: cpu, pod: ray-cpu-a, available: {CPU: 5}}
  - {group: cpu, pod: ray-cpu-c, idleSeconds: 500}
"""


@pytest.fixture(autouse=True)
def only_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Build the CLI with the plan command only: the test does not depend on other commands."""
    monkeypatch.setattr(cli, "_COMMANDS", ("plan",))


def files(tmp_path: Path, cluster: str = CLUSTER, snapshot: str = SNAPSHOT) -> list[str]:
    """The --cluster/--snapshot arguments for two files written to ``tmp_path``."""
    c, s = tmp_path / "cluster.yaml", tmp_path / "snapshot.yaml"
    c.write_text(cluster)
    s.write_text(snapshot)
    return ["--cluster", str(c), "--snapshot", str(s)]


def test_the_seed_example_plans_ten_cpu_pods(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/: 20 x {CPU: 5} on 10-CPU pods give a target of 10."""
    args = [
        "plan",
        "--cluster",
        str(EXAMPLES / "cluster.yaml"),
        "--snapshot",
        str(EXAMPLES / "snapshot.yaml"),
    ]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["groups"]["cpu"]["target"] == 10
    assert out["groups"]["cpu"]["new"] == 10
    assert out["groups"]["gpu"]["target"] == 0
    assert out["unplaceable"] == []


def test_json_output_is_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format json: 4 x {CPU: 5} fill pod a's free half and the two idle pods (no new pod);
    {CPU: 64} is unplaceable with its reason."""
    assert main(["plan", *files(tmp_path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "decisions": [],
        "groups": {
            "cpu": {
                "target": 3,
                "desired": 3,
                "floor": 3,
                "current": 3,
                "busy": 3,
                "new": 0,
                "removable": [],
                "over_cap": [],
                "decisions": [],
            },
            "gpu": {
                "target": 0,
                "desired": 0,
                "floor": 0,
                "current": 0,
                "busy": 0,
                "new": 0,
                "removable": [],
                "over_cap": [],
                "decisions": [],
            },
        },
        "unplaceable": [
            {
                "resources": {"CPU": 64},
                "count": 2,
                "reason": "no_group_fits",
                "detail": "no worker group has pods that can hold {CPU: 64}",
                "kind": "task",
                "strategy": None,
                "selectors": [],
            }
        ],
        "placed": [],
    }


def test_json_output_is_byte_for_byte_deterministic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs print the same bytes, keys sorted."""
    args = ["plan", *files(tmp_path), "--format", "json"]
    main(args)
    first = capsys.readouterr().out
    main(args)
    second = capsys.readouterr().out
    assert first == second
    assert first == json.dumps(json.loads(first), sort_keys=True, indent=2) + "\n"


def test_table_output_lists_targets_and_removable_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table: one row per group, removable pods in order, reasons, unplaceable demand."""
    snapshot = (
        "nodes:\n"
        "  - {group: cpu, pod: b, idleSeconds: 300}\n"
        "  - {group: cpu, pod: c, idleSeconds: 500}\n"
    )
    assert main(["plan", *files(tmp_path, snapshot=snapshot)]) == 0
    assert capsys.readouterr().out == (
        "GROUP  TARGET  DESIRED  FLOOR  CURRENT  BUSY  NEW  REMOVABLE\n"
        "cpu         2        0      2        2     0    0  c,b\n"
        "gpu         0        0      0        0     0    0  -\n"
        "  cpu: 2 pod(s) removable (idle past idleTimeoutSeconds): c,b\n"
        "  cpu: target held 2 above desired (2 pods are not victims)\n"
        "unplaceable: none\n"
    )


@pytest.mark.parametrize(
    ("cluster", "snapshot", "message"),
    [
        (
            CLUSTER,
            "bundles:\n  - {resources: {CPU: 5}, count: -1}\n",
            "{s}: bundles[0].count: must be at least 0, got -1",
        ),
        (
            CLUSTER,
            "bundles:\n  - {resources: {memory: 3 gigs}}\n",
            "{s}: bundles[0].resources.memory: '3 gigs' is not a quantity like 32Gi",
        ),
        (
            CLUSTER,
            "nodes:\n  - {group: tpu, pod: a}\n",
            "{s}: nodes[0].group: unknown worker group 'tpu' (known: cpu, gpu)",
        ),
        ("cluster: demo\n", "{}", "{c}: workerGroups: required"),
        (CLUSTER, "bundles: [\n", "{s}: not valid YAML: "),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: str, snapshot: str, message: str
) -> None:
    """Bad input: exit code 2 and one line on stderr naming the file, the field and the problem."""
    args = files(tmp_path, cluster, snapshot)
    assert main(["plan", *args]) == 2
    captured = capsys.readouterr()
    expected = "keda-ray-scaler plan: " + message.format(c=args[1], s=args[3])
    assert captured.out == ""
    assert captured.err.startswith(expected)
    assert captured.err.count("\n") == 1


def test_a_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that does not exist: exit 2, one line naming it."""
    missing = tmp_path / "nope.yaml"
    assert main(["plan", "--cluster", str(missing), "--snapshot", str(missing)]) == 2
    assert (
        capsys.readouterr().err
        == f"keda-ray-scaler plan: {missing}: cannot read: No such file or directory\n"
    )


def test_json_output_is_identical_under_different_hash_seeds(tmp_path: Path) -> None:
    """Byte-for-byte determinism across processes (PYTHONHASHSEED 1 and 2)."""
    snapshot = SNAPSHOT + (
        "placementGroups:\n"
        "  - {strategy: STRICT_SPREAD, bundles: [{CPU: 4}, {CPU: 4}, {GPU: 1}], count: 2}\n"
        "  - {strategy: PACK, bundles: [{CPU: 3}, {CPU: 7}]}\n"
        "constraints:\n  - {resources: {GPU: 1}, count: 3}\n"
    )
    args = files(tmp_path, snapshot=snapshot)
    code = (
        "import sys, keda_ray_scaler.cli as c; c._COMMANDS = ('plan',); "
        "sys.exit(c.main(sys.argv[1:]))"
    )
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code, "plan", *args, "--format", "json"],
            capture_output=True,
            env=env,
            check=True,
            timeout=120,
        )
        outs.append(done.stdout)
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["groups"]["gpu"]["new"] == 3


LABELLED = """\
cluster: demo
workerGroups:
  - {name: spot, resources: {CPU: 10}, cost: 1, labels: {market-type: spot}}
  - {name: on-demand, resources: {CPU: 10}, cost: 3, labels: {market-type: on-demand}}
"""

LABELLED_DEMAND = """\
bundles:
  - {resources: {CPU: 2}, count: 3, selectors: [{market-type: spot}]}
  - {resources: {CPU: 8}, count: 2, selectors: [{market-type: preemptible}, {market-type: spot}]}
  - {resources: {CPU: 1}, count: 2, selectors: [{market-type: on-demand}]}
  - {resources: {CPU: 2}, count: 2, selectors: [{market-type: gpu-spot}]}
nodes:
  - {group: on-demand, pod: ray-od-a, available: {CPU: 4}}
"""


def test_a_placed_demand_names_its_selector_and_an_unplaceable_one_the_selector_no_group_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Spot demand on new spot pods by its selector; [preemptible, spot] on spot pods by the
    fallback (no group is preemptible); on-demand demand on the on-demand pod's free CPUs;
    market-type=gpu-spot unplaceable, naming the selector no group satisfies."""
    assert main(["plan", *files(tmp_path, LABELLED, LABELLED_DEMAND)]) == 0
    assert capsys.readouterr().out.endswith(
        "  spot: 3 new pod(s) for tasks\n"
        "placed by label selector:\n"
        "  {CPU: 8} x2 [market-type=preemptible;market-type=spot] -> spot by fallback "
        "market-type=spot\n"
        "  {CPU: 2} x3 [market-type=spot] -> spot\n"
        "  {CPU: 1} x2 [market-type=on-demand] -> on-demand (existing pods)\n"
        "unplaceable:\n"
        "  2 x {CPU: 2} [task] [market-type=gpu-spot]: no_group_matches_selector (no worker "
        "group's labels satisfy the label selector market-type=gpu-spot)\n"
    )


def test_placed_and_unplaceable_lines_name_the_selectors() -> None:
    """A placement by the first selector, one by a fallback on existing pods, and unplaceable
    demand with and without selectors, as the table prints them."""
    spot = LabelSelector.from_ray({"market-type": "spot"})
    fallback = selectors_of((spot, LabelSelector()))
    placed = (
        Placed("spot", 3, (spot,), spot, (Resources.of(CPU=2),)),
        Placed("on-demand", 2, fallback, LabelSelector(), (Resources.of(CPU=1),), existing=True),
    )
    left = (
        Unplaceable(Resources.of(CPU=64), 1, UnplaceableReason.NO_GROUP_FITS, "too big"),
        Unplaceable(Resources.of(CPU=2), 2, UnplaceableReason.MAX_REPLICAS, "", selectors=(spot,)),
    )
    table = plan_to_table(Plan(groups={}, unplaceable=left, placed=placed))
    assert table.splitlines()[1:] == [
        "placed by label selector:",
        "  {CPU: 2} x3 [market-type=spot] -> spot",
        "  {CPU: 1} x2 [market-type=spot;*] -> on-demand by fallback * (existing pods)",
        "unplaceable:",
        "  1 x {CPU: 64} [task]: no_group_fits (too big)",
        "  2 x {CPU: 2} [task] [market-type=spot]: max_replicas",
    ]
    out = plan_to_json(Plan(groups={}, unplaceable=left, placed=placed))
    assert out["placed"][1] == {
        "group": "on-demand",
        "count": 2,
        "selectors": ["market-type=spot", "*"],
        "by": "*",
        "shapes": [{"CPU": 1}],
        "existing": True,
    }
    assert [u["selectors"] for u in out["unplaceable"]] == [[], ["market-type=spot"]]
