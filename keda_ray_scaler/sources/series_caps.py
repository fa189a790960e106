"""Bounds on one Ray cluster's series, checked before anything is decoded or planned. Pure.

The series come from whoever can export them (the cluster's agent, or anything that claims its
name), and the planner's time grows with what they describe: 5,000 demand shapes naming 5,000
distinct custom resources made one plan take ~20 s and the refresher 1.2 GB (the manifests'
limit is 512 Mi). So a cluster whose series exceed any cap below is **refused**, not truncated:
its fetch raises :class:`CapExceeded` (the source turns it into UNAVAILABLE naming the cap, so
KEDA's fallback applies and nothing scales down). Truncating would drop demand (a plan that
under-reports) or merge it upward (a plan on data nobody sent); neither is the cluster's own.

The defaults (see :class:`DataCaps`, one ``serve`` flag each) hold every cluster a real agent
exports with its defaults, with room, and keep the worst plan inside them under a second of
CPU and a few MiB (``bench/caps_bench.py`` prints the figures): the agent merges demand beyond
``--max-shapes`` (200) and bounds every resource name to
:data:`~keda_ray_scaler.schema.MAX_NAME_CHARS`.
The planner's cost grows with the square of the distinct resource names (measured: 200 shapes
each with its own custom resource 0.35 s, 1,000 of them 7.8 s) and with placement groups times
their bundles (64 x 256 STRICT_SPREAD bundles 3.4 s), hence those caps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from keda_ray_scaler import schema
from keda_ray_scaler.errors import Cap, CapExceeded
from keda_ray_scaler.labels import MAX_SELECTOR_CHARS
from keda_ray_scaler.model import DemandKind
from keda_ray_scaler.schema import Sample, decoding

#: Labels whose values are names (groups, pods, node ids, resources): at most ``max_name_chars``.
_NAME_LABELS: Final = (
    schema.LABEL_GROUP,
    schema.LABEL_POD,
    schema.LABEL_NODE_ID,
    schema.LABEL_RESOURCE,
    schema.LABEL_STATE,
    schema.LABEL_REASON,
    schema.LABEL_KIND,
    schema.LABEL_STRATEGY,
)


@dataclass(frozen=True, slots=True)
class DataCaps:
    """The most one Ray cluster's series may hold; beyond any, the cluster is refused.

    Per cluster, each with its ``serve`` flag (``--max-series`` ...):

    - ``max_series`` (50,000): every ``ray_scaler_*`` series. A worker pod exports about 12
      (info, idle, total and available per resource), so about 4,000 pods.
    - ``max_worker_groups`` (32): ``worker_group_info`` series. KubeRay clusters have a few.
    - ``max_shapes`` (256): demand series (task, constraint and placement-group shapes). The
      agent merges beyond its ``--max-shapes`` (200); raise both together.
    - ``max_placement_groups`` (16): placement-group demand series (each also a shape).
    - ``max_bundles_per_placement_group`` (64): bundles in one placement-group shape.

    Groups, placement groups and shapes multiply in the planner: at 64 groups, 224 shapes
    over 61 custom resources and 32 placement groups of 128 STRICT_SPREAD bundles one plan took
    7.4 s of CPU; at these defaults, 0.9 s (``bench/caps_bench.py``).
    - ``max_resource_names`` (64): distinct resource names in shapes and node resources
      (``CPU``, ``GPU``, ``memory``, ``accelerator_type:A100``, custom ones). The planner's
      cost grows with their square.
    - ``max_name_chars`` (253, the agent's own bound, ``schema.MAX_NAME_CHARS``): any name
      label value (group, pod, node id, resource) and each resource name inside a shape.
    """

    max_series: int = 50_000
    max_worker_groups: int = 32
    max_shapes: int = 256
    max_placement_groups: int = 16
    max_bundles_per_placement_group: int = 64
    max_resource_names: int = 64
    max_name_chars: int = schema.MAX_NAME_CHARS

    def __post_init__(self) -> None:
        for name in self.__slots__:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")


def check_series_count(cluster: str, count: int, caps: DataCaps) -> None:
    """CapExceeded (``series``) when ``count`` series exceed ``max_series`` (before parsing)."""
    if count > caps.max_series:
        raise CapExceeded(
            Cap.SERIES, cluster, f"{count} series, more than --max-series {caps.max_series}"
        )


def check_caps(samples: Iterable[Sample], caps: DataCaps) -> None:
    """Raise :class:`CapExceeded` for the first cluster of ``samples`` over a cap.

    Linear in the size of the labels; decodes nothing (shapes are only split).
    """
    for cluster, own in sorted(decoding.group_by_cluster(samples).items()):
        _check_cluster(cluster, own, caps)


def _check_cluster(cluster: str, samples: list[Sample], caps: DataCaps) -> None:
    check_series_count(cluster, len(samples), caps)
    names: set[str] = set()
    groups = shapes = placement_groups = 0
    for s in samples:
        _check_name_labels(cluster, s, caps)
        _check_label_texts(cluster, s, caps)
        resource = s.labels.get(schema.LABEL_RESOURCE)
        if resource is not None:
            names.add(resource)
        if s.name == schema.GROUP_INFO:
            groups += 1
            names.update(_shape_names(cluster, s.labels.get(schema.LABEL_SHAPE, ""), caps))
        elif s.name == schema.DEMAND_BUNDLES:
            shapes += 1
            shape = s.labels.get(schema.LABEL_SHAPE, "")
            if s.labels.get(schema.LABEL_KIND) == DemandKind.PLACEMENT_GROUP.value:
                placement_groups += 1
                _check_bundles(cluster, shape, caps)
            names.update(_shape_names(cluster, shape, caps))
        if len(names) > caps.max_resource_names:
            raise CapExceeded(
                Cap.RESOURCE_NAMES,
                cluster,
                f"more than --max-resource-names {caps.max_resource_names} distinct resource names",
            )
    for cap, count, limit, flag in (
        (Cap.WORKER_GROUPS, groups, caps.max_worker_groups, "--max-worker-groups"),
        (Cap.SHAPES, shapes, caps.max_shapes, "--max-shapes"),
        (
            Cap.PLACEMENT_GROUPS,
            placement_groups,
            caps.max_placement_groups,
            "--max-placement-groups",
        ),
    ):
        if count > limit:
            raise CapExceeded(cap, cluster, f"{count} {cap.value}, more than {flag} {limit}")


def _check_name_labels(cluster: str, s: Sample, caps: DataCaps) -> None:
    for key in _NAME_LABELS:
        value = s.labels.get(key)
        if value is not None and len(value) > caps.max_name_chars:
            raise CapExceeded(
                Cap.NAME_CHARS,
                cluster,
                f"a {key} label of {len(value)} characters, more than --max-name-chars "
                f"{caps.max_name_chars}",
            )


def _check_label_texts(cluster: str, s: Sample, caps: DataCaps) -> None:
    """The ``selector`` label (one list per bundle, each at most MAX_SELECTOR_CHARS) and the
    ``labels`` label (at most MAX_LABELS_CHARS) within what an agent can write."""
    for key, limit in (
        (schema.LABEL_SELECTOR, (MAX_SELECTOR_CHARS + 1) * caps.max_bundles_per_placement_group),
        (schema.LABEL_LABELS, schema.MAX_LABELS_CHARS),
    ):
        value = s.labels.get(key)
        if value is not None and len(value) > limit:
            raise CapExceeded(
                Cap.LABEL_CHARS,
                cluster,
                f"a {key} label of {len(value)} characters, more than {limit}",
            )


def _check_bundles(cluster: str, shape: str, caps: DataCaps) -> None:
    bundles = shape.count(";") + 1
    if bundles > caps.max_bundles_per_placement_group:
        raise CapExceeded(
            Cap.BUNDLES,
            cluster,
            f"a placement group of {bundles} bundles, more than --max-pg-bundles "
            f"{caps.max_bundles_per_placement_group}",
        )


def _shape_names(cluster: str, shape: str, caps: DataCaps) -> set[str]:
    """The resource names (as on the wire) in a shape or bundle list, each length-checked."""
    out: set[str] = set()
    for bundle in shape.split(";"):
        for part in bundle.split(","):
            name = part.partition("=")[0]
            if len(name) > caps.max_name_chars:
                raise CapExceeded(
                    Cap.NAME_CHARS,
                    cluster,
                    f"a resource name of {len(name)} characters in a shape, more than "
                    f"--max-name-chars {caps.max_name_chars}",
                )
            if name:
                out.add(name)
    return out
