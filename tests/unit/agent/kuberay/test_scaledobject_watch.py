"""The namespace's ScaledObjects kept by the watch: parsed at each list and event as the read by
GET parses them, a malformed one refused, counted once per version and logged once; nothing
held before the first list and after a failure until a list succeeds."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from keda_ray_scaler.agent.kube.object_watch import WatchSettings
from keda_ray_scaler.agent.kuberay.kuberay_api import ScaledObjectRefusals
from keda_ray_scaler.agent.kuberay.scaledobject import read_scaled_objects
from keda_ray_scaler.agent.kuberay.scaledobject_watch import ScaledObjectWatch
from keda_ray_scaler.agent.metric_names import SCALED_OBJECTS_REFUSED


def scaled_object(name: str, target: str, max_replicas: object = 50) -> dict[str, Any]:
    """A ScaledObject on RayWorkerGroup ``target``, at resourceVersion 1."""
    return {
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {
            "scaleTargetRef": {"kind": "RayWorkerGroup", "name": target},
            "maxReplicaCount": max_replicas,
        },
    }


def watch_in(registry: CollectorRegistry) -> ScaledObjectWatch:
    """The sink of a watch of namespace ``ray``, refusals counted in ``registry``."""
    return ScaledObjectWatch(
        ScaledObjectRefusals(registry, cluster="demo"), WatchSettings("ray", "demo")
    )


def refused(registry: CollectorRegistry) -> float | None:
    """The ScaledObjects refused for a count that is not an integer."""
    labels = {"cluster": "demo", "reason": "not_an_integer"}
    return registry.get_sample_value(SCALED_OBJECTS_REFUSED, labels)


def test_the_watch_parses_and_refuses_as_the_read_by_get_does() -> None:
    """A list with a good ScaledObject and a malformed one: the views are the GET path's
    (:func:`read_scaled_objects`), the refusal counted and logged once over two more events,
    named for its RayWorkerGroup's status; deleting it clears the refusal."""
    registry = CollectorRegistry()
    watch = watch_in(registry)
    good, bad = scaled_object("so-cpu", "cpu"), scaled_object("so-gpu", "gpu", "lots")
    with capture_logs() as logs:
        watch.listed([good, bad])
        watch.changed("MODIFIED", good)
        watch.changed("MODIFIED", bad)
    assert watch.current() == read_scaled_objects([good, bad])[0]
    assert [so.name for so in watch.current() or []] == ["so-cpu"]
    assert refused(registry) == 1.0
    assert [e["scaled_object"] for e in logs if e["event"] == "ScaledObject refused"] == ["so-gpu"]
    watch.changed("DELETED", bad)
    assert [so.name for so in watch.current() or []] == ["so-cpu"]
    assert refused(registry) == 1.0


def test_nothing_is_held_before_a_list_nor_after_a_failure_until_a_list() -> None:
    """None (read by GET) until listed, after a failed watch, again after a relist; a relist
    replaces what was held; the same failure warns once."""
    watch = watch_in(CollectorRegistry())
    assert watch.current() is None
    watch.listed([scaled_object("a", "cpu"), scaled_object("b", "gpu")])
    assert [so.name for so in watch.current() or []] == ["a", "b"]
    with capture_logs() as logs:
        watch.unreadable("watch failed", "(403) Forbidden")
        assert watch.current() is None
        watch.listed([scaled_object("b", "gpu")])
        assert [so.name for so in watch.current() or []] == ["b"]
        watch.unreadable("watch failed", "(403) Forbidden")
    assert [e["log_level"] for e in logs] == ["warning"]
