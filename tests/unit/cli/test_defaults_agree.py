"""Each default has one home, read by the settings type and the flag alike: the flags of ``serve``
and ``agent``, parsed with none given, hold the values the types hold when built with none given.

Each flag is paired with its field by hand here (not read from the flags' code), so a flag
that declares a number of its own, or reads the wrong field, fails the comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys

import pytest

from keda_ray_scaler.agent.joining.join_tracker import JoinSettings
from keda_ray_scaler.agent.kube.kube_settings import KubeSettings, worker_selector
from keda_ray_scaler.agent.loop import LoopSettings
from keda_ray_scaler.agent.settings import AgentSettings
from keda_ray_scaler.cli import build_parser, serve_flags
from keda_ray_scaler.cli.agent_flags import agent_settings, join_settings
from keda_ray_scaler.rpc.server_settings import ServerSettings
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.sources.series_caps import DataCaps
from keda_ray_scaler.sources.source_settings import RetrySettings

#: ``serve`` flag destination -> :class:`ServerSettings` field.
SERVER_FLAGS = {
    "host": "host",
    "port": "port",
    "metrics_port": "metrics_port",
    "health_port": "health_port",
    "max_message_bytes": "max_message_bytes",
    "max_concurrent_rpcs": "max_concurrent_rpcs",
    "max_concurrent_streams": "max_concurrent_streams",
    "max_connection_age": "max_connection_age_s",
    "grace": "stop_grace_s",
    "max_health_watches": "max_health_watches",
    "max_streams_per_connection": "max_streams_per_connection",
    "max_streams_per_peer": "max_streams_per_peer",
    "client_identity": "client_identity",
    "reflection": "reflection",
}
#: ``serve`` flag destination -> :class:`TargetSettings` field.
TARGET_FLAGS = {
    "refresh_interval": "refresh_interval_s",
    "max_age": "max_age_s",
    "max_clock_skew": "max_clock_skew_s",
    "max_clusters": "max_clusters",
    "max_clusters_per_namespace": "max_clusters_per_namespace",
    "unknown_rechecks_per_second": "unknown_rechecks_per_s",
}
#: ``serve`` flag destination -> :class:`RetrySettings` field.
RETRY_FLAGS = {"query_attempts": "attempts", "query_deadline": "deadline_s"}
#: ``serve`` flag destination -> :class:`DataCaps` field.
CAP_FLAGS = {
    "max_series": "max_series",
    "max_worker_groups": "max_worker_groups",
    "max_shapes": "max_shapes",
    "max_placement_groups": "max_placement_groups",
    "max_pg_bundles": "max_bundles_per_placement_group",
    "max_resource_names": "max_resource_names",
    "max_name_chars": "max_name_chars",
}

#: ``agent`` flag destination -> its field, as a path from :class:`AgentSettings`.
AGENT_FLAGS = {
    "interval": "loop.interval_s",
    "watch_interval": "loop.watch_interval_s",
    "max_shapes": "loop.max_shapes",
    "use_window": "loop.use_window_s",
    "settle_delay": "victims.settle_s",
    "drain_deadline": "victims.drain_deadline_s",
    "backoff_initial": "joins.backoff.initial_s",
    "backoff_max": "joins.backoff.max_s",
    "ray_timeout": "ray_timeout_s",
}


def parsed(command: str) -> argparse.Namespace:
    """``keda-ray-scaler COMMAND`` with no flag, through the real parser."""
    return build_parser().parse_args([command])


def field_at(value: object, path: str) -> object:
    """The field at dotted ``path`` of ``value``."""
    for name in path.split("."):
        value = getattr(value, name)
    return value


def pairs(
    args: argparse.Namespace, flags: dict[str, str], defaults: object
) -> list[tuple[str, object, object]]:
    """``(flag, parsed default, field default)`` of each flag in ``flags``."""
    return [(flag, getattr(args, flag), field_at(defaults, path)) for flag, path in flags.items()]


@pytest.mark.parametrize(
    ("flags", "defaults"),
    [
        (SERVER_FLAGS, ServerSettings()),
        (TARGET_FLAGS, TargetSettings()),
        (RETRY_FLAGS, RetrySettings()),
        (CAP_FLAGS, DataCaps()),
    ],
    ids=["server", "target", "retry", "caps"],
)
def test_serve_s_flags_default_to_the_settings_types_defaults(
    flags: dict[str, str], defaults: object
) -> None:
    """``serve`` with no flag: each flag holds its field's default."""
    disagree = [p for p in pairs(parsed("serve"), flags, defaults) if p[1] != p[2]]
    assert disagree == []


def test_serve_with_no_flag_builds_the_default_settings() -> None:
    """The settings ``serve`` builds from no flag are the types' own defaults, field by field."""
    args = parsed("serve")
    assert serve_flags.server_settings(args) == ServerSettings()
    assert serve_flags.target_settings(args) == TargetSettings()
    assert serve_flags.data_caps(args) == DataCaps()


def test_serve_listens_where_the_chart_and_the_manifests_say() -> None:
    """The product's ports (chart, manifests, docs): gRPC 9090, /metrics 9100."""
    assert (ServerSettings().port, ServerSettings().metrics_port) == (9090, 9100)


def test_the_agent_s_flags_default_to_the_settings_types_defaults() -> None:
    """``agent`` with no flag: each flag holds its field's default."""
    args = parsed("agent")
    disagree = [p for p in pairs(args, AGENT_FLAGS, AgentSettings()) if p[1] != p[2]]
    assert disagree == []
    assert args.demand_read == AgentSettings().demand_read.value
    assert args.no_scale_down is not LoopSettings().scale_down
    group_label = {f.name: f.default for f in dataclasses.fields(KubeSettings)}["group_label"]
    assert args.group_label == group_label


def test_the_agent_with_no_flag_builds_the_default_settings() -> None:
    """The settings ``agent`` builds from no flag are the types' own defaults, field by field."""
    args = parsed("agent")
    assert join_settings(args) == JoinSettings()
    assert agent_settings(args) == AgentSettings()


def test_the_worker_selector_is_kuberay_s_labels() -> None:
    """One cluster's worker pods, and one group's, as KubeRay labels them."""
    assert worker_selector("demo") == "ray.io/cluster=demo,ray.io/node-type=worker"
    assert worker_selector("demo", "gpu") == (
        "ray.io/cluster=demo,ray.io/group=gpu,ray.io/node-type=worker"
    )


_PROBE = """\
import json, sys
from keda_ray_scaler.cli import main
try:
    main(["agent", "--help"])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_agent_help_reads_the_defaults_without_the_agent_s_clients() -> None:
    """The types ``agent --help`` reads its defaults from load no Kubernetes or Prometheus
    client and no structlog (the light parser: agent_flags' docstring)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    )
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    heavy = ("kubernetes", "prometheus_client", "structlog", "keda_ray_scaler.agent.loop")
    assert sorted(m for m in modules if m.split(".")[0] in heavy or m in heavy) == []
