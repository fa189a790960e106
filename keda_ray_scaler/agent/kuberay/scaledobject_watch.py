"""KubeRay mode: the namespace's ScaledObjects kept by list and watch, parsed at the watch.

The KubeRay applier reads the ScaledObjects every round (the bounds check, the leads' bounds and
pause). :class:`ScaledObjectWatch` keeps them instead
(:class:`~keda_ray_scaler.agent.kube.object_watch.ObjectWatch` over ``keda.sh/v1alpha1``
``scaledobjects``): each list and event parses the namespace's objects again with
:meth:`~keda_ray_scaler.agent.kuberay.kuberay_api.ScaledObjectRefusals.read`, so a malformed one
is refused, counted and logged as the read by GET refuses it. Until the watch has listed, and
after a failure until a list succeeds (a Role without ``watch`` on ``scaledobjects``: every
watch refused), :meth:`ScaledObjectWatch.current` is None and the applier reads them by GET.

RBAC: ``scaledobjects`` ``list`` and ``watch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from kubernetes import client as k8s

from keda_ray_scaler.agent.kube.object_watch import ObjectWatch, WatchSettings
from keda_ray_scaler.agent.kuberay.kuberay_api import SCALED_OBJECT_API, ScaledObjectRefusals
from keda_ray_scaler.agent.kuberay.scaledobject import ScaledObject

log = structlog.get_logger(__name__)


class ScaledObjectWatch:
    """The parsed ScaledObjects of one namespace (a
    :class:`~keda_ray_scaler.agent.kube.object_watch.WatchSink`); refusals counted in
    ``refusals`` (the applier's, so the RayWorkerGroups' status names them)."""

    def __init__(self, refusals: ScaledObjectRefusals, settings: WatchSettings) -> None:
        self._refusals = refusals
        self._raw: dict[str, Mapping[str, Any]] = {}
        self._views: list[ScaledObject] = []
        self._held = False  # listed, and no failure since
        self._failure = ""  # the failure last logged as a warning
        self._log = log.bind(cluster=settings.name, namespace=settings.namespace)

    def current(self) -> list[ScaledObject] | None:
        """The views while the watch holds them; None before the first list and after a
        failure until a list succeeds."""
        return list(self._views) if self._held else None

    def listed(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A whole list replaces the objects."""
        self._raw = {_name(i): i for i in items}
        self._parse()
        self._held = True

    def changed(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One event: an object's new version, or its deletion; the watch works again."""
        if kind == "DELETED":
            self._raw.pop(_name(obj), None)
        else:
            self._raw[_name(obj)] = obj
        self._parse()
        self._failure = ""

    def unreadable(self, why: str, error: str) -> None:
        """The applier reads them by GET until a list succeeds; a warning once per failure
        (a refused watch fails again after every relist)."""
        self._held = False
        if error != self._failure:
            self._log.warning("ScaledObject watch failed, read by GET", reason=why, error=error)
            self._failure = error

    def _parse(self) -> None:
        self._views = self._refusals.read(list(self._raw.values()), self._log)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def scaled_object_watch(
    api: k8s.CustomObjectsApi, settings: WatchSettings, refusals: ScaledObjectRefusals
) -> tuple[ObjectWatch, ScaledObjectWatch]:
    """The watch of ``settings.namespace``'s ScaledObjects and the views it keeps."""
    objects = ScaledObjectWatch(refusals, settings)
    return ObjectWatch(api, SCALED_OBJECT_API, settings, objects), objects
