"""The chart-level settings of the ScaledObjects and agent identities the controller makes.

The defaults are those of the hand-written KubeRay example (``manifests/kuberay/example``:
``scaledobjects.yaml``, ``agent-rbac.yaml``), where each one's reason is written beside it. A
cluster's annotations override the scaler address and the two periods
(:meth:`ControllerTemplate.with_overrides`). Validated when built: a bad value is a
:class:`~keda_ray_scaler.errors.ConfigError` naming the field. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Final

from keda_ray_scaler.controller.optin import (
    COOLDOWN_PERIOD_BOUNDS_S,
    POLLING_INTERVAL_BOUNDS_S,
    OptIn,
    address_problem,
    seconds_problem,
)
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import is_dns_label

_WHERE: Final = "controller template"


class TriggerType(enum.Enum):
    """KEDA's trigger for the scaler: ``external-push`` wakes KEDA at the refresh that first sees
    demand; ``external`` waits for the next poll."""

    EXTERNAL_PUSH = "external-push"
    EXTERNAL = "external"


class MetricType(enum.Enum):
    """The trigger's ``metricType``: AverageValue with the scaler's target 1 lands the HPA exactly
    on the group's target replicas."""

    AVERAGE_VALUE = "AverageValue"
    VALUE = "Value"


@dataclass(frozen=True, slots=True)
class HpaBehavior:
    """The HPA ``behavior`` of every ScaledObject (``scaledobjects.yaml`` says why): follow the
    planner's target at once, both ways; scale up by ``scale_up_percent`` or by the group's
    maxReplicas pods per period, whichever is more."""

    scale_up_percent: int = 1000
    scale_down_percent: int = 100
    period_s: int = 15
    stabilization_window_s: int = 0
    tolerance: str = "0"  # Kubernetes >= 1.33 (HPAConfigurableTolerance)

    def body(self, max_replicas: int) -> dict[str, Any]:
        """The ``behavior`` block for a group of ``max_replicas`` (an HPA policy's value is at
        least 1)."""

        def rules(*policies: tuple[str, int]) -> dict[str, Any]:
            return {
                "stabilizationWindowSeconds": self.stabilization_window_s,
                "selectPolicy": "Max",
                "tolerance": self.tolerance,
                "policies": [
                    {"type": kind, "value": value, "periodSeconds": self.period_s}
                    for kind, value in policies
                ],
            }

        return {
            "scaleUp": rules(("Percent", self.scale_up_percent), ("Pods", max(max_replicas, 1))),
            "scaleDown": rules(("Percent", self.scale_down_percent)),
        }


@dataclass(frozen=True, slots=True)
class ControllerTemplate:
    """What every ScaledObject and agent identity the controller makes shares."""

    #: the triggers' ``scalerAddress``: the scaler's Service, ``host:port``
    scaler_address: str = "keda-ray-scaler.keda.svc.cluster.local:9090"
    #: ``pollingInterval``, seconds
    polling_interval_s: int = 5
    #: ``cooldownPeriod``, seconds (IsActive turns false only once every pod is a drained victim)
    cooldown_period_s: int = 5
    #: the ClusterTriggerAuthentication holding KEDA's client key (None: no authenticationRef)
    trigger_authentication: str | None = "keda-ray-scaler-client"
    trigger_type: TriggerType = TriggerType.EXTERNAL_PUSH
    metric_type: MetricType = MetricType.AVERAGE_VALUE
    #: the agent's ServiceAccount (also its Role and RoleBinding), ``{cluster}`` the RayCluster
    service_account_pattern: str = "ray-{cluster}-agent"
    #: the HPA behavior block (None: the HPA's defaults, which wait 300 s to scale down)
    behavior: HpaBehavior | None = field(default_factory=HpaBehavior)

    def __post_init__(self) -> None:
        if problem := address_problem(self.scaler_address):
            raise ConfigError(_WHERE, "scaler_address", problem)
        for name, bounds in (
            ("polling_interval_s", POLLING_INTERVAL_BOUNDS_S),
            ("cooldown_period_s", COOLDOWN_PERIOD_BOUNDS_S),
        ):
            if problem := seconds_problem(getattr(self, name), bounds):
                raise ConfigError(_WHERE, name, problem)
        if self.trigger_authentication == "":
            raise ConfigError(_WHERE, "trigger_authentication", "empty (None for no reference)")
        pattern = self.service_account_pattern
        if pattern.count("{cluster}") != 1 or not is_dns_label(self.service_account("c")):
            raise ConfigError(
                _WHERE,
                "service_account_pattern",
                f"{pattern!r} must hold {{cluster}} once, in a DNS label",
            )

    def service_account(self, cluster: str) -> str:
        """The agent's ServiceAccount name for ``cluster``, before bounding to 63 characters."""
        return self.service_account_pattern.replace("{cluster}", cluster)

    def with_overrides(self, opt_in: OptIn) -> ControllerTemplate:
        """This template with a cluster's overrides applied."""
        return dataclasses.replace(
            self,
            polling_interval_s=opt_in.polling_interval_s or self.polling_interval_s,
            cooldown_period_s=opt_in.cooldown_period_s or self.cooldown_period_s,
        )
