"""Who a Ray cluster is and who may read it: ``(namespace, name)`` and the cross-namespace grants.

A Ray cluster is identified by the Kubernetes namespace it runs in and its name (the RayCluster's
``metadata.name``; the agent's ``cluster`` label). Two teams may both call their cluster ``demo``:
they are two clusters. Where the namespace comes from:

- **Prometheus source**: the ``namespace`` label Prometheus attaches from service discovery when it
  scrapes the agent (the shipped scrape configurations set it and never honour the agent's own
  labels for it), selected by the query (``namespace="<ns>"``).
- **Scrape source**: the scaler's own configuration, ``--agent-url NAMESPACE/CLUSTER=URL``: the
  operator who runs the scaler says which namespace each agent URL belongs to.

Who may read: a ScaledObject reads clusters of its own namespace (KEDA sends it as
``ScaledObjectRef.namespace``). It may name another namespace (``rayClusterNamespace``) only when
the scaler was started with a grant ``--allow-cross-namespace READER_NS=CLUSTER_NS``; otherwise
the call is refused with PERMISSION_DENIED. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from keda_ray_scaler.errors import AccessDenied, ConfigError, Refusal

#: RFC 1123 label, as Kubernetes validates namespace and RayCluster names (at most 63 characters).
_DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def is_dns_label(text: str) -> bool:
    """True when ``text`` is an RFC 1123 label (a valid namespace or RayCluster name)."""
    return _DNS1123_LABEL.fullmatch(text) is not None


@dataclass(frozen=True, slots=True, order=True)
class ClusterRef:
    """One Ray cluster: its namespace and its name. ``str()`` is ``namespace/name``."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str, where: str, field: str) -> ClusterRef:
        """``NAMESPACE/NAME`` (both RFC 1123 labels); ConfigError naming ``where``/``field``."""
        namespace, slash, name = text.partition("/")
        if not slash:
            raise ConfigError(where, field, f"{text[:80]!r} is not NAMESPACE/CLUSTER")
        for part in (namespace, name):
            if not is_dns_label(part):
                raise ConfigError(
                    where, field, f"{part[:80]!r} is not an RFC 1123 label (a-z, 0-9, -)"
                )
        return cls(namespace, name)


@dataclass(frozen=True, slots=True)
class NamespaceGrants:
    """Which namespaces' ScaledObjects may read clusters of which other namespaces.

    Empty (the default): a ScaledObject reads only clusters of its own namespace.
    """

    pairs: frozenset[tuple[str, str]] = frozenset()  # (reader namespace, cluster namespace)

    @classmethod
    def parse(cls, values: Iterable[str], where: str, field: str) -> NamespaceGrants:
        """``READER_NS=CLUSTER_NS`` values; ConfigError naming ``field`` on a bad one."""
        pairs: set[tuple[str, str]] = set()
        for value in values:
            reader, eq, cluster_ns = value.partition("=")
            if not eq or not is_dns_label(reader) or not is_dns_label(cluster_ns):
                raise ConfigError(
                    where, field, f"{value[:80]!r} is not READER_NS=CLUSTER_NS (RFC 1123 labels)"
                )
            pairs.add((reader, cluster_ns))
        return cls(frozenset(pairs))

    def allows(self, reader: str, cluster_namespace: str) -> bool:
        """True when a ScaledObject in ``reader`` may read clusters of ``cluster_namespace``."""
        return reader == cluster_namespace or (reader, cluster_namespace) in self.pairs

    def resolve(self, reader: str, requested: str | None, name: str) -> ClusterRef:
        """The cluster a ScaledObject in namespace ``reader`` asks for.

        ``requested`` is the trigger's ``rayClusterNamespace`` (None: the reader's own).
        Raises :class:`AccessDenied` (``cross_namespace``) when no grant allows it.
        """
        namespace = reader if requested is None else requested
        if not self.allows(reader, namespace):
            raise AccessDenied(
                Refusal.CROSS_NAMESPACE,
                f"a ScaledObject in namespace {reader!r} may not read Ray cluster "
                f"{namespace}/{name}: only clusters of its own namespace, unless the scaler "
                f"runs with --allow-cross-namespace {reader}={namespace}",
            )
        return ClusterRef(namespace, name)
