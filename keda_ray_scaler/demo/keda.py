"""Stand-ins for KEDA and the HPA in the local demo, which runs without Kubernetes: call the
scaler over gRPC, compute the replicas. The real KEDA and HPA run in the real-control-plane test
(tests/real/control_plane/test_real_control_plane.py); what they do differently is in
docs/design/keda-fallback.md.

Per poll and ScaledObject: ``IsActive`` (false: scale to zero), then ``GetMetricSpec`` and
``GetMetrics`` and the HPA's AverageValue rule ``ceil(metric / target)``, bounded by
``[max(1, minReplicaCount), maxReplicaCount]``. An error keeps the current replicas (as KEDA
does for ScaledObjects without a ``fallback``, which the project's are). Scale-down follows the
HPA's ``stabilizationWindowSeconds``: the highest recommendation of the window wins, so an answer
based on a view that does not yet include pods just created cannot remove them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import grpc

from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc


@dataclass(frozen=True, slots=True)
class Decision:
    """One poll's outcome for one ScaledObject."""

    replicas: int  # what the HPA/KEDA sets
    metric: float | None  # GetMetrics' value (None on error or when inactive)
    active: bool | None  # IsActive (None on error)
    error: str = ""  # the gRPC status when the scaler did not answer


class ScaledObject:
    """One ScaledObject with an ``external`` trigger pointing at the scaler."""

    def __init__(
        self,
        channel: grpc.aio.Channel,
        name: str,
        namespace: str,
        metadata: Mapping[str, str],
        min_replicas: int,
        max_replicas: int,
        clock: Callable[[], float],
        scale_down_window_s: float = 0.0,
        timeout_s: float = 3.0,
    ) -> None:
        self._stub = pb_grpc.ExternalScalerStub(channel)
        self._ref = pb.ScaledObjectRef(name=name, namespace=namespace, scalerMetadata=metadata)
        self._min = min_replicas
        self._max = max_replicas
        self._timeout_s = timeout_s
        self._clock = clock
        self._window_s = scale_down_window_s
        self._recommendations: list[tuple[float, int]] = []

    async def poll(self, current: int) -> Decision:
        """The replicas KEDA and the HPA would set now, given ``current`` replicas."""
        decision = await self._ask(current)
        now = self._clock()
        self._recommendations = [
            (t, r) for t, r in self._recommendations if now - t < self._window_s
        ] + [(now, decision.replicas)]
        if decision.replicas < current:
            stable = max(r for _, r in self._recommendations)
            return dataclasses.replace(decision, replicas=min(current, stable))
        return decision

    async def _ask(self, current: int) -> Decision:
        try:
            active = await self._stub.IsActive(self._ref, timeout=self._timeout_s)
            if not active.result:
                return Decision(self._min, None, False)
            spec = await self._stub.GetMetricSpec(self._ref, timeout=self._timeout_s)
            (metric_spec,) = spec.metricSpecs
            target = metric_spec.targetSizeFloat or float(metric_spec.targetSize)
            request = pb.GetMetricsRequest(
                scaledObjectRef=self._ref, metricName=metric_spec.metricName
            )
            values = await self._stub.GetMetrics(request, timeout=self._timeout_s)
            (value,) = values.metricValues
            metric = value.metricValueFloat or float(value.metricValue)
        except grpc.aio.AioRpcError as exc:
            return Decision(current, None, None, f"{exc.code().name}: {exc.details()}")
        replicas = math.ceil(metric / target) if target > 0 else current
        return Decision(min(max(replicas, 1, self._min), self._max), metric, True)
