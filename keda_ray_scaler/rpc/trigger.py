"""Trigger metadata parsing: a ScaledObject's ``scalerMetadata`` to a typed :class:`TriggerConfig`.

Metadata is untrusted input from any namespace that can create a ScaledObject. Keys are
allow-listed, values of our keys must be DNS-1123 labels or bounded integers, and no PromQL,
URL or credential is ever taken from it. Errors are :class:`~keda_ray_scaler.errors.ConfigError`
naming the key (gRPC INVALID_ARGUMENT). No I/O here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from keda_ray_scaler.errors import ConfigError, ConfigProblem
from keda_ray_scaler.identity import is_dns_label

#: Required: the Ray cluster name (the agent's ``cluster`` label; RayCluster metadata.name).
KEY_CLUSTER: Final = "rayCluster"
#: Required: the worker group name (KubeRay ``workerGroupSpecs[].groupName``).
KEY_GROUP: Final = "workerGroup"
#: Optional: a stricter maximum data age for this trigger, whole seconds, 1..server --max-age.
KEY_MAX_AGE: Final = "maxAgeSeconds"
#: Optional: the Ray cluster's namespace when it is not the ScaledObject's own; the scaler
#: answers only with a grant ``--allow-cross-namespace <ScaledObject ns>=<this>``.
KEY_NAMESPACE: Final = "rayClusterNamespace"

#: Keys KEDA itself puts in the metadata of ``external`` / ``external-push`` triggers (the whole
#: trigger metadata is passed through). Accepted and ignored; their values are never read.
KEDA_KEYS: Final = frozenset(
    {"scalerAddress", "caCert", "tlsCertFile", "tlsClientCert", "tlsClientKey", "unsafeSsl"}
)
OWN_KEYS: Final = frozenset({KEY_CLUSTER, KEY_GROUP, KEY_MAX_AGE, KEY_NAMESPACE})
ALLOWED_KEYS: Final = OWN_KEYS | KEDA_KEYS

_WHERE: Final = "trigger metadata"
_MAX_KEY_REPORT: Final = 64


@dataclass(frozen=True, slots=True)
class TriggerConfig:
    """One trigger's parsed metadata.

    ``max_age_s`` is ``None`` when the trigger keeps the server's ``--max-age``; ``namespace``
    is ``None`` when the Ray cluster is in the ScaledObject's own namespace.
    """

    cluster: str
    group: str
    max_age_s: float | None = None
    namespace: str | None = None

    @property
    def metric_name(self) -> str:
        """The stable, lowercase metric name of this cluster and group.

        Both parts are DNS-1123 labels, which never contain ``.``, so the name is unambiguous.
        """
        return f"ray-{self.cluster}.{self.group}"

    @classmethod
    def from_metadata(
        cls, metadata: Mapping[str, str], server_max_age_s: float | None = None
    ) -> TriggerConfig:
        """Parse and validate; raises ConfigError naming the first bad key (sorted order).

        ``server_max_age_s`` bounds ``maxAgeSeconds``: a trigger may only tighten staleness.
        """
        unknown = sorted(k for k in metadata if k not in ALLOWED_KEYS)
        if unknown:
            key = printable(unknown[0])
            allowed = ", ".join(sorted(OWN_KEYS))
            raise ConfigError(
                _WHERE, key, f"unknown key (allowed: {allowed})", ConfigProblem.UNKNOWN_KEY
            )
        cluster = _dns_label(metadata, KEY_CLUSTER)
        group = _dns_label(metadata, KEY_GROUP)
        max_age: float | None = None
        if KEY_MAX_AGE in metadata:
            upper = int(server_max_age_s) if server_max_age_s is not None else 3600
            max_age = float(_bounded_int(metadata, KEY_MAX_AGE, 1, max(1, upper)))
        namespace = _dns_label(metadata, KEY_NAMESPACE) if KEY_NAMESPACE in metadata else None
        return cls(cluster=cluster, group=group, max_age_s=max_age, namespace=namespace)


#: What :meth:`TriggerConfig.from_metadata` reads: the key names and the values of our own keys.
MetadataKey = tuple[frozenset[str], str | None, str | None, str | None, str | None]


def metadata_key(metadata: Mapping[str, str]) -> MetadataKey:
    """Everything the parse depends on: key names, and values of our own keys only.

    KEDA's keys (``caCert``, ...) are accepted but never read, so their values (a PEM can be
    kilobytes) are not part of the key: two metadata maps with the same key give the same
    :class:`TriggerConfig` or the same error.
    """
    return (
        frozenset(metadata),
        metadata.get(KEY_CLUSTER),
        metadata.get(KEY_GROUP),
        metadata.get(KEY_MAX_AGE),
        metadata.get(KEY_NAMESPACE),
    )


class TriggerParser:
    """:meth:`TriggerConfig.from_metadata` behind a bounded LRU cache (KEDA repeats metadata).

    Keyed by :func:`metadata_key`; only successful parses are cached, so every bad request is
    parsed (and refused) again. A cached entry is at most a few hundred bytes: its own values
    passed validation, and only the allow-listed key names can succeed.
    """

    def __init__(self, server_max_age_s: float | None = None, *, maxsize: int = 4096) -> None:
        self.server_max_age_s = server_max_age_s
        self._parse = functools.lru_cache(maxsize=maxsize)(self._parse_key)

    def __call__(self, metadata: Mapping[str, str]) -> TriggerConfig:
        """The config of ``metadata``; raises ConfigError naming the key, like from_metadata."""
        return self._parse(metadata_key(metadata))

    def cache_info(self) -> functools._CacheInfo:
        """Hits, misses, size and bound of the cache."""
        return self._parse.cache_info()

    def _parse_key(self, key: MetadataKey) -> TriggerConfig:
        names, cluster, group, max_age, namespace = key
        own = {
            KEY_CLUSTER: cluster,
            KEY_GROUP: group,
            KEY_MAX_AGE: max_age,
            KEY_NAMESPACE: namespace,
        }
        # KEDA's keys get an empty value: from_metadata never reads them
        metadata = {name: own.get(name) or "" for name in names}
        return TriggerConfig.from_metadata(metadata, self.server_max_age_s)


def _dns_label(metadata: Mapping[str, str], key: str) -> str:
    value = metadata.get(key)
    if value is None or value == "":
        raise ConfigError(_WHERE, key, "required", ConfigProblem.MISSING)
    if not is_dns_label(value):
        raise ConfigError(
            _WHERE,
            key,
            f"{printable(value)!r} is not a DNS-1123 label "
            "(lowercase letters, digits and '-', at most 63 characters)",
            ConfigProblem.BAD_NAME,
        )
    return value


def _bounded_int(metadata: Mapping[str, str], key: str, low: int, high: int) -> int:
    value = metadata[key]
    if not value.isascii() or not value.isdigit() or len(value) > 6:
        raise ConfigError(
            _WHERE, key, f"{printable(value)!r} is not a whole number", ConfigProblem.BAD_NUMBER
        )
    number = int(value)
    if not low <= number <= high:
        raise ConfigError(
            _WHERE, key, f"{number} is outside {low}..{high}", ConfigProblem.BAD_NUMBER
        )
    return number


def printable(text: str) -> str:
    """Untrusted text made safe for one log line or status message: escaped and truncated."""
    shown = text[:_MAX_KEY_REPORT].encode("unicode_escape").decode("ascii")
    return shown + ("..." if len(text) > _MAX_KEY_REPORT else "")
