"""The Grafana dashboards parse and query only metrics the agent and the scaler export."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from full_snapshot import full_snapshot
from prometheus_client import CollectorRegistry

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.kube.kube_settings import KubeSettings
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.model import ClusterSpec, Resources, WorkerGroup
from keda_ray_scaler.sources.metrics import source_metrics
from keda_ray_scaler.telemetry import scaler_metrics

GRAFANA = Path(__file__).resolve().parents[2] / "grafana"
DASHBOARDS = sorted(GRAFANA.glob("*.json"))

#: PromQL words that look like identifiers but are not metric names.
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def exposed(registry: CollectorRegistry) -> set[str]:
    """Series names a registry exposes, by metric type (counters end in ``_total``)."""
    names: set[str] = set()
    for family in registry.collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names |= {family.name + s for s in ("_bucket", "_sum", "_count")}
        else:
            names.add(family.name)
    return names


def allowed_metric_names() -> frozenset[str]:
    """Every series the agent and the scaler really expose, read from their registries."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(full_snapshot())
    AgentMetrics(registry, "c")
    spec = ClusterSpec("c", (WorkerGroup("cpu", Resources.of(CPU=1)),))
    # Only the metrics of these two are needed: their collaborators are never called.
    VictimController(spec, None, None, None, None, registry)  # type: ignore[arg-type]
    PodCache(None, KubeSettings(namespace="n", label_selector="x"), registry)  # type: ignore[arg-type]
    scaler_metrics(registry)
    source_metrics(registry)
    return frozenset(exposed(registry))


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects.

    Strings, label matchers, grouping clauses, range/offset durations and Grafana variables are
    removed first; what remains that is not a function call, a keyword or a number is a name.
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = _GROUPING.sub("", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\$\w+", "", text)
    names = set()
    for m in _IDENT.finditer(text):
        word = m.group()
        after = text[m.end() :].lstrip()
        if after.startswith("(") or word.lower() in _KEYWORDS:
            continue
        if text[max(0, m.start() - 1)].isdigit():  # 1e3, 5m
            continue
        names.add(word)
    return names


def exprs(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, expr) for every query of every panel, rows included."""
    for panel in dashboard["panels"]:
        for inner in [panel, *panel.get("panels", [])]:
            for target in inner.get("targets", []):
                yield inner["title"], target["expr"]
    for var in dashboard.get("templating", {}).get("list", []):
        if var["type"] == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            inner_expr = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
            yield f"variable {var['name']}", inner_expr.group(1) if inner_expr else query


def load(path: Path) -> dict[str, Any]:
    """One dashboard file."""
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def test_there_is_a_dashboard() -> None:
    """grafana/ holds at least one dashboard."""
    assert [p.name for p in DASHBOARDS] == ["keda-ray-scaler.json"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_is_importable_json(path: Path) -> None:
    """Parses, has a uid and title, unique panel ids, panels inside the 24-column grid."""
    d = load(path)
    assert d["uid"] and d["title"]
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24, p["title"]
        if p["type"] != "row":
            assert p["targets"], p["title"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_uses_only_exported_metric_names(path: Path) -> None:
    """Each PromQL expr selects a metric, and only names schema.py or the scaler define."""
    allowed = allowed_metric_names()
    for title, expr in exprs(load(path)):
        names = metric_names(expr)
        assert names, f"{title}: {expr}"
        assert names <= allowed, f"{title}: unknown {sorted(names - allowed)}"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_shows_demand_targets_victims_freshness_and_rpc_latency(path: Path) -> None:
    """The panels the operators need are there."""
    used = set().union(*(metric_names(e) for _, e in exprs(load(path))))
    assert {
        schema.DEMAND_BUNDLES,
        "keda_ray_scaler_target_replicas",
        schema.NODE_INFO,
        schema.WRONG_VICTIMS,
        schema.SCALE_DOWN_FROZEN,
        "keda_ray_scaler_data_age_seconds",
        schema.SNAPSHOT_TIMESTAMP,
        "keda_ray_scaler_rpc_duration_seconds_bucket",
    } <= used
    victims = [e for _, e in exprs(load(path)) if 'state="victim"' in e]
    assert victims


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_is_valid_promql(path: Path, tmp_path: Path) -> None:
    """promtool (from the Prometheus package) parses every expression, variables substituted."""
    rules = [
        {"record": f"check:{i}", "expr": expr.replace("$__rate_interval", "1m")}
        for i, (_, expr) in enumerate(exprs(load(path)))
    ]
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run(
        ["promtool", "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_name_extraction_ignores_labels_functions_and_durations() -> None:
    """Only the selected series names come out; a misspelt one is caught."""
    expr = (
        'histogram_quantile(0.99, sum by (le, method) (rate(foo_bucket{method="GetMetrics"}[5m])))'
        " / on (cluster) group_left (group) bar offset 1m > bool 1e3"
    )
    assert metric_names(expr) == {"foo_bucket", "bar"}
    assert "ray_scaler_demand_bundle" not in allowed_metric_names()
