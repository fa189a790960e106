"""The controller's own metrics, made once per registry (tests pass a fresh one).

Every label takes a value from a fixed set (an enum's value, a kind, an HTTP status), never text
from a RayCluster: anyone who may edit one would otherwise create series at will.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter

#: counter {outcome}: rounds of one RayCluster, by outcome (:class:`reconcile.Outcome`)
ROUNDS: Final = "ray_scaler_controller_rounds_total"
#: counter {reason}: refusals shown to a user, once per RayCluster resourceVersion and message
REFUSALS: Final = "ray_scaler_controller_refusals_total"
#: counter {kind, operation}: objects written (apply, delete)
WRITES: Final = "ray_scaler_controller_writes_total"
#: counter {operation, code}: failed Kubernetes API calls, each attempt (404 is an answer)
KUBE_API_ERRORS: Final = "ray_scaler_controller_kube_api_errors_total"
#: counter {namespace}: RayCluster watches ended (expired or failed) and opened again
WATCH_RESTARTS: Final = "ray_scaler_controller_watch_restarts_total"


class ControllerMetrics:
    """The counters above, in ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, text: str, *labels: str) -> Counter:
            return Counter(name.removesuffix("_total"), text, labels, registry=registry)

        self.rounds = counter(ROUNDS, "Rounds of one RayCluster, by outcome.", "outcome")
        self.refusals = counter(
            REFUSALS, "Refusals shown as an event, by reason (once per version).", "reason"
        )
        self.writes = counter(
            WRITES, "Objects written, by kind and operation.", "kind", "operation"
        )
        self.api_errors = counter(
            KUBE_API_ERRORS, "Failed Kubernetes API calls, each attempt.", "operation", "code"
        )
        self.watch_restarts = counter(
            WATCH_RESTARTS, "RayCluster watches ended and opened again.", "namespace"
        )
