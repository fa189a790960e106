"""Prometheus on the kind cluster: Debian's server scraping the Ray head's agent, the shipped job.

    python e2e/kind/prometheus.py IMAGE HEAD_POD_IP HEAD_POD_NAME [NAMESPACE] | kubectl apply -f -

Prints a ConfigMap, a Deployment and the Service ``prometheus-server`` (namespace ``monitoring``,
port 80, the URL the README gives the chart: ``http://prometheus-server.monitoring.svc:80``).
The job is ``manifests/monitoring/prometheus-scrape-config.yaml`` as shipped, relabelling and
all, with one change: Debian's build has no Kubernetes discovery, so ``kubernetes_sd_configs``
is replaced by one static target, the head pod, carrying the ``__meta_kubernetes_*`` labels pod
discovery would attach to it (as the real-node bed's Prometheus does,
tests/harness/prometheus_server.py). A cluster with the prometheus-community chart runs the
job unchanged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "manifests" / "monitoring" / "prometheus-scrape-config.yaml"
NAMESPACE = "monitoring"
AGENT_PORT = 9400


def scrape_config(ip: str, pod: str, namespace: str) -> dict[str, Any]:
    """prometheus.yml: the shipped job with the head pod as its one discovered target."""
    (job,) = yaml.safe_load(SHIPPED.read_text())["scrape_configs"]
    job.pop("kubernetes_sd_configs")
    labels = {
        "__meta_kubernetes_namespace": namespace,
        "__meta_kubernetes_pod_name": pod,
        "__meta_kubernetes_pod_container_name": "agent",
        "__meta_kubernetes_pod_container_port_name": "agent-metrics",
        "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true",
        "__meta_kubernetes_pod_annotation_prometheus_io_port": str(AGENT_PORT),
        "__meta_kubernetes_pod_annotation_prometheus_io_path": "/metrics",
    }
    job["static_configs"] = [{"targets": [f"{ip}:{AGENT_PORT}"], "labels": labels}]
    return {"global": {"scrape_interval": "5s"}, "scrape_configs": [job]}


def objects(image: str, ip: str, pod: str, namespace: str) -> list[dict[str, Any]]:
    meta = {"name": "prometheus-server", "namespace": NAMESPACE}
    selector = {"app.kubernetes.io/name": "prometheus-server"}
    config = yaml.safe_dump(scrape_config(ip, pod, namespace), sort_keys=False)
    container = {
        "name": "prometheus",
        "image": image,
        "imagePullPolicy": "Never",
        "command": ["/bin/prometheus"],
        "args": [
            "--config.file=/etc/prometheus/prometheus.yml",
            "--storage.tsdb.path=/prometheus",
            "--storage.tsdb.retention.time=1h",
            "--web.listen-address=:9090",
        ],
        "ports": [{"name": "http", "containerPort": 9090}],
        "readinessProbe": {"httpGet": {"path": "/-/ready", "port": "http"}, "periodSeconds": 2},
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/prometheus"},
            {"name": "data", "mountPath": "/prometheus"},
        ],
    }
    pod_spec = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "fsGroup": 65532},
        "containers": [container],
        "volumes": [
            {"name": "config", "configMap": {"name": "prometheus-server"}},
            {"name": "data", "emptyDir": {}},
        ],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {"prometheus.yml": config},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": selector},
                "template": {"metadata": {"labels": selector}, "spec": pod_spec},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": "http"}]},
        },
    ]


def main(argv: list[str]) -> int:
    image, ip, pod, *rest = argv
    for obj in objects(image, ip, pod, rest[0] if rest else "ray"):
        print("---")
        print(json.dumps(obj))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
