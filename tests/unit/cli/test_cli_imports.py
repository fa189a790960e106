"""``keda-ray-scaler plan`` loads only what planning needs: no gRPC, no Kubernetes or Prometheus
client, no structlog, and no PyYAML for JSON files (issue 17: its start-up was 0.6 s of other
commands' imports). Behaviour, not timing: ``python -m bench planner`` prints the figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from keda_ray_scaler.cli import build_parser

#: Packages only other commands use; none may be loaded by ``plan``.
OTHER_COMMANDS = (
    "grpc",
    "kubernetes",
    "prometheus_api_client",
    "prometheus_client",
    "structlog",
    "requests",
    "tenacity",
    "keda_ray_scaler.rpc",
    "keda_ray_scaler.agent",
    "keda_ray_scaler.gcs",
    "keda_ray_scaler.sources",
    "keda_ray_scaler.telemetry",
)

PROBE = """\
import json, sys
from keda_ray_scaler.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_by(*argv: str) -> set[str]:
    """The modules a fresh interpreter holds after ``keda-ray-scaler ARGV``."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True
    )
    modules: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return set(modules)


def of(packages: tuple[str, ...], modules: set[str]) -> list[str]:
    """The members of ``modules`` that are, or are inside, one of ``packages``."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_plan_help_loads_no_other_command_s_packages() -> None:
    """``plan --help``: none of grpc, kubernetes, the Prometheus clients, structlog, yaml."""
    modules = loaded_by("plan", "--help")
    assert "keda_ray_scaler.cli.plan" in modules  # the probe ran the command
    assert of((*OTHER_COMMANDS, "yaml"), modules) == []


def test_planning_json_files_loads_no_yaml_and_no_other_command(tmp_path: Path) -> None:
    """A plan from JSON files (the agent's and status's dumps) never imports PyYAML."""
    cluster, snapshot = tmp_path / "cluster.json", tmp_path / "snapshot.json"
    groups = [{"name": "cpu", "resources": {"CPU": 10}, "maxReplicas": 5}]
    cluster.write_text(json.dumps({"cluster": "demo", "workerGroups": groups}))
    snapshot.write_text(json.dumps({"bundles": [{"resources": {"CPU": 5}, "count": 4}]}))
    modules = loaded_by("plan", "--cluster", str(cluster), "--snapshot", str(snapshot))
    assert "keda_ray_scaler.planner" in modules
    assert of((*OTHER_COMMANDS, "yaml"), modules) == []


def test_the_other_commands_load_their_own_packages() -> None:
    """``serve --help`` still builds serve's own parser, with gRPC: the probe can see imports."""
    assert "grpc" in loaded_by("serve", "--help")


def test_the_top_level_help_is_the_same_with_one_command_built() -> None:
    """Commands not built stand in with the summary their own parser shows."""
    assert build_parser(only="plan").format_help() == build_parser().format_help()
