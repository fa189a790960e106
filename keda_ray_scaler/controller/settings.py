"""The controller's settings: the namespaces it serves, how often it looks, how it calls the API.

Frozen and validated when built: a bad value is a :class:`~keda_ray_scaler.errors.ConfigError`
naming the field (the CLI's flags map onto them one to one). Each default's reason is beside it.
Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from keda_ray_scaler.controller.objects import MANAGED_BY
from keda_ray_scaler.controller.template import ControllerTemplate
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import is_dns_label

_WHERE: Final = "controller settings"


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """What one controller process serves and how (module doc)."""

    #: the namespaces whose RayClusters are served; at least one (no cluster-wide mode: least
    #: privilege, the chart's RBAC names the same namespaces)
    namespaces: tuple[str, ...]
    #: what every ScaledObject and agent identity shares
    template: ControllerTemplate = field(default_factory=ControllerTemplate)
    #: a full pass over every RayCluster this often, seconds: a missed watch event, an object
    #: edited or deleted by hand, waits at most this long
    resync_s: float = 30.0
    #: the server ends a watch after this many seconds; it is opened again from the last version
    watch_timeout_s: int = 300
    #: one request's read timeout, seconds (a hung API server must not stop the loop)
    request_timeout_s: float = 30.0
    #: attempts of one API call while its failure is transient (429, 5xx, transport)
    attempts: int = 4
    #: first and longest wait between those attempts, seconds (exponential, with jitter)
    retry_initial_s: float = 0.2
    retry_max_s: float = 5.0
    #: the longest wait before a failing watch is opened again, seconds (doubling from
    #: ``retry_initial_s``; a watch the server refuses must not become a tight loop)
    watch_retry_max_s: float = 30.0
    #: a cluster whose objects are being deleted (a replace, a finalizer) is looked at again
    #: after this many seconds
    requeue_s: float = 1.0
    #: the server-side apply field manager, and the events' reporting component
    field_manager: str = MANAGED_BY
    #: the events' reporting instance (the pod's name; empty: the field manager's)
    instance: str = ""

    def __post_init__(self) -> None:
        if not self.namespaces:
            raise ConfigError(_WHERE, "namespaces", "at least one namespace is required")
        for namespace in self.namespaces:
            if not is_dns_label(namespace):
                raise ConfigError(_WHERE, "namespaces", f"{namespace[:80]!r} is not a namespace")
        if len(set(self.namespaces)) != len(self.namespaces):
            raise ConfigError(_WHERE, "namespaces", "a namespace is named twice")
        for name in ("resync_s", "request_timeout_s", "retry_initial_s", "retry_max_s"):
            _positive(name, getattr(self, name))
        _positive("watch_retry_max_s", self.watch_retry_max_s)
        _positive("requeue_s", self.requeue_s)
        if self.watch_timeout_s < 1:
            raise ConfigError(_WHERE, "watch_timeout_s", "must be at least 1")
        if self.attempts < 1:
            raise ConfigError(_WHERE, "attempts", "must be at least 1")
        if not self.field_manager or len(self.field_manager) > 128:
            raise ConfigError(_WHERE, "field_manager", "1 to 128 characters")

    @property
    def reporting_instance(self) -> str:
        """The events' ``reportingInstance``."""
        return self.instance or self.field_manager


def _positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(_WHERE, name, f"{value} is not a positive number of seconds")
