"""The metrics reference (docs/reference/metrics.md) names every metric and label exposed."""

from __future__ import annotations

import re
from pathlib import Path

from full_snapshot import full_snapshot
from prometheus_client import CollectorRegistry

from keda_ray_scaler.agent.http.exporter import AgentMetrics, SnapshotCollector
from keda_ray_scaler.agent.kube.kube_settings import KubeSettings
from keda_ray_scaler.agent.kube.pod_cache import PodCache
from keda_ray_scaler.agent.kuberay.applier import KubeRayApplier
from keda_ray_scaler.agent.kuberay.group_round import ApplierSettings
from keda_ray_scaler.agent.kuberay.kuberay_api import ScaledObjectRefusals
from keda_ray_scaler.agent.ray.refusal_log import RefusalLog
from keda_ray_scaler.agent.victims.controller import VictimController
from keda_ray_scaler.model import ClusterSpec, Resources, WorkerGroup
from keda_ray_scaler.sources.metrics import source_metrics
from keda_ray_scaler.telemetry import scaler_metrics

METRICS_DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "metrics.md"


def families() -> dict[str, set[str]]:
    """Every metric family name (counters with ``_total``) and its label names."""
    registry = CollectorRegistry()
    SnapshotCollector(registry).publish(full_snapshot())
    AgentMetrics(registry, "c")
    spec = ClusterSpec("c", (WorkerGroup("cpu", Resources.of(CPU=1)),))
    VictimController(spec, None, None, None, None, registry)  # type: ignore[arg-type]
    PodCache(None, KubeSettings(namespace="n", label_selector="x"), registry)  # type: ignore[arg-type]
    KubeRayApplier(None, None, None, None, None, registry, ApplierSettings("c"))  # type: ignore[arg-type]
    ScaledObjectRefusals(registry, cluster="c")
    RefusalLog(registry, "c")
    scaler_metrics(registry)
    source_metrics(registry)
    out: dict[str, set[str]] = {}
    for family in registry.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        labels = out.setdefault(name, set())
        for sample in family.samples:
            labels |= set(sample.labels) - {"le", "quantile"}
    # Labelled metrics with no child yet expose no sample: read their declared label names
    # (prometheus_client keeps them on the collector; private, but only read here).
    for collector, names in registry._collector_to_names.items():
        declared = set(getattr(collector, "_labelnames", ()))
        for name in names:
            if name in out:
                out[name] |= declared
    return out


def test_every_exposed_metric_name_is_in_the_metrics_reference() -> None:
    """A metric nobody documented is a metric nobody can alert on."""
    text = METRICS_DOC.read_text()
    missing = sorted(name for name in families() if f"`{name}" not in text)
    assert missing == []


def test_every_label_of_the_exported_series_is_in_the_metrics_reference() -> None:
    """Label names appear in backticks in the metrics reference."""
    text = METRICS_DOC.read_text()
    documented = set(re.findall(r"`([a-z_]+)`", text)) | set(re.findall(r"[`,{] ?([a-z_]+)=", text))
    for braces in re.findall(r"`[a-z_]+\{([a-z_, ]+)\}", text):  # `metric{cluster,group}`
        documented |= {label.strip() for label in braces.split(",")}
    labels = set().union(*families().values())
    assert sorted(labels - documented) == []
