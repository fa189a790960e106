"""The snapshot's series as ``/metrics`` text, line by line, exactly as ``prometheus_client``
writes them, so a series that did not change is never written again. Pure.

A gauge sample's line is the same in the Prometheus text format (0.0.4, and 1.0.0 with
``underscores`` or ``allow-utf-8`` escaping) and in OpenMetrics (same escapings): the name, the
labels sorted by key with their values escaped (backslash, newline, double quote), a space, the
value as Go prints it (``prometheus_client.utils.floatToGoString``). What differs between the
formats is each family's header and the ``# EOF`` that ends OpenMetrics, so the header is the one
the negotiated encoder writes for an empty family of that name (:func:`family_header`). Another
escaping (``dots``, ``values``) rewrites names: the lines here do not serve it
(:attr:`Format.plain_lines`), and the caller lets ``prometheus_client`` write the whole body.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from keda_ray_scaler import schema

#: An encoder ``prometheus_client.exposition.choose_encoder`` picks: a collector to bytes.
Encoder = Callable[..., bytes]

#: The escapings under which a sample line is written as here (names are legacy-valid).
PLAIN_ESCAPINGS: Final = ("underscores", "allow-utf-8")

HELP: Final = {
    schema.DEMAND_BUNDLES: "Pending bundles per shape and kind (placement groups: groups).",
    schema.GROUP_INFO: "Worker group and the logical resources of one pod (shape); always 1.",
    schema.GROUP_MIN_REPLICAS: "Worker group minReplicas.",
    schema.GROUP_MAX_REPLICAS: "Worker group maxReplicas.",
    schema.GROUP_IDLE_TIMEOUT: "Worker group idleTimeoutSeconds.",
    schema.GROUP_COST: "Relative price of one pod of the worker group.",
    schema.GROUP_LAUNCH_LIMIT: "Most new pods the group may get now (backed off after join "
    "failures); absent: no limit.",
    schema.CLUSTER_MAX_WORKERS: "Cap on worker pods across groups (absent: no cap).",
    schema.CLUSTER_UPSCALING_SPEED: "Ray upscalingSpeed of the cluster.",
    schema.NODE_INFO: "One worker pod: group, Ray node id, state and why failing; always 1.",
    schema.NODE_TOTAL: "Total logical resources of a worker pod's Ray node.",
    schema.NODE_AVAILABLE: "Available logical resources of a worker pod's Ray node.",
    schema.NODE_IDLE_SINCE: "Unix time since when the pod's Ray node has been idle (0: busy).",
    schema.SNAPSHOT_TIMESTAMP: "Unix time of the last successful poll of Ray (0: none yet).",
    schema.SNAPSHOT_SUCCESS: "1 when the last poll of Ray succeeded, else 0 (data not fresh).",
    schema.SNAPSHOT_SERIES: "Series of this snapshot that its digest covers.",
    schema.SNAPSHOT_DIGEST: "48-bit SHA-256 digest of this snapshot's series (the scaler "
    "refuses series that do not match it).",
    schema.SNAPSHOT_COVERS: "A series name (family) or label key (label_key) this snapshot's "
    "digest covers; always 1.",
}

_EOF: Final = "# EOF\n"


def help_of(name: str) -> str:
    """The HELP text of a snapshot family."""
    return HELP.get(name, name)


def _escaped(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def text_prefix(name: str, labels: Mapping[str, str]) -> str:
    """A sample's exposition line up to its value: ``name{key="value",...} ``."""
    if not labels:
        return f"{name} "
    pairs = ",".join(f'{k}="{_escaped(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{pairs}}} "


def go_float(value: float) -> str:
    """``value`` as ``floatToGoString`` writes it: for a float in [0, 1e6) that is its ``repr``
    (Go's exponent starts at 1e21 there, Python's at 1e16, and below 1e6 neither differs), at
    a third of the cost; anything else is ``floatToGoString``'s."""
    if type(value) is float and 0.0 <= value < 1e6:
        return repr(value)
    return floatToGoString(value)  # type: ignore[no-untyped-call,no-any-return]  # untyped upstream


def text_line(prefix: str, value: float) -> str:
    """The exposition line of the sample of ``prefix`` (:func:`text_prefix`) holding ``value``."""
    return f"{prefix}{go_float(value)}\n"


@dataclass(frozen=True, slots=True)
class Format:
    """A body format as ``prometheus_client.exposition.choose_encoder`` picks it: its content
    type (what tells formats apart) and its encoder."""

    content_type: str
    encoder: Encoder = field(compare=False, hash=False)

    @property
    def plain_lines(self) -> bool:
        """Whether the lines written here serve this format: text or OpenMetrics, escaping
        underscores or UTF-8 (module doc)."""
        kind, *params = self.content_type.split(";")
        if kind.strip() not in ("text/plain", "application/openmetrics-text"):
            return False
        for part in params:
            key, _, value = part.strip().partition("=")
            if key == "escaping" and value not in PLAIN_ESCAPINGS:
                return False
        return True


class _One:
    """One metric family as a collector (what an encoder renders)."""

    def __init__(self, family: Metric) -> None:
        self._family = family

    def collect(self) -> Iterator[Metric]:
        yield self._family


@functools.lru_cache(maxsize=256)  # a few formats times the snapshot's few families
def family_header(form: Format, name: str) -> str:
    """The HELP and TYPE lines ``form``'s encoder writes for the gauge family ``name`` (without
    the ``# EOF`` an OpenMetrics body ends with)."""
    text = form.encoder(_One(GaugeMetricFamily(name, help_of(name), labels=[]))).decode()
    return text.removesuffix(_EOF)
