"""The small interfaces between the agent's Ray side and its Kubernetes side.

The worker groups come from a :class:`SpecView`: a fixed spec (:class:`FixedSpec`, Deployment
mode and the demo) or the RayCluster's watch (``raycluster_watch.py``, KubeRay mode), read
afresh by each user at each use. The Ray side (``ray/ray_state.py``, ``ray/drain.py``) implements
:class:`Drainer` and :class:`RayView`; the victim controller (``victims/controller.py``) consumes
them and
implements :class:`VictimSource`, which the exporter reads. A
:class:`~keda_ray_scaler.clock.Clock` is injected everywhere time matters, so tests run on fake
time. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.model import ClusterSpec, WorkerNode


@dataclass(frozen=True, slots=True)
class DrainResult:
    """Ray's answer to a drain request.

    ``accepted`` is True only when the raylet accepted the drain (for idle termination it
    accepts only a node that is still idle, atomically). ``rejection`` is Ray's reason when
    ``accepted`` is False (e.g. "The node to be idle terminated is no longer idle."), or the
    error text when the call itself failed; empty when accepted.
    """

    accepted: bool
    rejection: str = ""


@runtime_checkable
class Drainer(Protocol):
    """Asks Ray to drain one node for idle termination.

    Implementation (``ray/drain.py``): the GCS's ``DrainNode(node_id,
    DRAIN_NODE_REASON_IDLE_TERMINATION, message, deadline_ms)``, the call Ray's autoscaler v2
    makes.

    Semantics:
    - ``node_id`` is the Ray node id in hex (``WorkerNode.node_id``).
    - ``message`` is a human reason, logged by Ray.
    - ``deadline_ms`` is an absolute unix time in milliseconds after which Ray may kill the
      node; 0 means no deadline (Ray's meaning).
    - Never raises for a rejection or a failed call: a GCS error becomes
      ``DrainResult(False, "<error text>")``, so the caller treats it as a rejection and
      restores the pod. Cancellation (``asyncio.CancelledError``) propagates.
    """

    async def drain(self, node_id: str, message: str, deadline_ms: int) -> DrainResult: ...


@runtime_checkable
class RayView(Protocol):
    """Fresh worker-node state, read from Ray at call time (no cache).

    Used for the re-check right before marking and right before draining, so a node that
    received work after it was seen idle is not touched.

    Semantics of the returned nodes:
    - one :class:`WorkerNode` per alive or draining Ray worker node mapped to a pod (``pod``,
      ``group`` and ``node_id`` set); the head node is not included;
    - ``status`` is ``RUNNING`` or ``DRAINING`` (a node Ray reports as draining); dead nodes are
      omitted; ``idle_s`` is the node's idle duration (0 when not idle), ``available`` its
      available resources at that moment;
    - raises :class:`keda_ray_scaler.errors.RayError` when Ray cannot be reached; the caller
      then acts on nothing.

    ``contested()``: the pods two or more live Ray nodes named at the last ``nodes()``, or whose
    live node is superseded (a restarted raylet's old node, or a raylet claiming the pod's
    name): never victims.
    """

    async def nodes(self) -> tuple[WorkerNode, ...]: ...

    def contested(self) -> frozenset[str]: ...


@runtime_checkable
class VictimSource(Protocol):
    """What the exporter reads from the victim controller.

    ``victims()`` maps pod name -> worker group for pods that are drained (Ray accepted the
    drain) AND confirmed (lowest deletion cost seen through a fresh read, the ReplicaSet ranking
    takes exactly them first). Export those with ``NodeStatus.VICTIM``; every other pod keeps
    the status Ray reports. The scaler lowers a group's target by exactly that many.
    A pod leaves the mapping once it is gone from the cluster.
    """

    def victims(self) -> Mapping[str, str]: ...


@runtime_checkable
class PodSource(Protocol):
    """The worker pods the victim protocol reads and annotates: the Kubernetes pod cache
    (``kube.PodCache``) or the demo's in-memory pods (``demo.pods.DemoPods``).

    - ``synced``: the pods are a complete, current list (never act on an unsynced one);
    - ``pods()``: every pod, terminating ones included, sorted by name; ``get_cached(name)``;
    - ``wait_until(predicate, timeout_s)``: wait (real time) until ``predicate()`` holds on the
      pods, re-checked on every change; its last value;
    - ``update(name, decide, fresh=)``: change one pod's annotations as ``decide(pod)`` says
      (value None deletes), never on stale data (``fresh``: the first decision on a fresh
      read); the pod as written, None when it is gone; raises ``KubernetesError``;
    - ``delete(name, uid)``: delete the pod if it is still the pod ``uid``; False when it is
      gone or another pod now; raises ``KubernetesError``.
    """

    @property
    def synced(self) -> bool: ...

    def pods(self) -> tuple[PodInfo, ...]: ...

    def get_cached(self, name: str) -> PodInfo | None: ...

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool: ...

    async def update(
        self,
        name: str,
        decide: Callable[[PodInfo], Mapping[str, str | None]],
        *,
        fresh: bool = False,
    ) -> PodInfo | None: ...

    async def delete(self, name: str, uid: str) -> bool: ...


@runtime_checkable
class SpecView(Protocol):
    """The worker groups as last read: what each poll plans with.

    - ``spec``: the latest valid :class:`~keda_ray_scaler.model.ClusterSpec` seen (never None:
      when the source fails, the last good one stays); read it at each use, not once;
    - ``fresh``: False while the source cannot vouch for ``spec`` (the RayCluster deleted,
      unreadable, or changed into something invalid): the loop then exports nothing new and
      marks the data not fresh (``success=0``), so nothing scales on unknown groups.
    """

    @property
    def spec(self) -> ClusterSpec: ...

    @property
    def fresh(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class FixedSpec:
    """A :class:`SpecView` that never changes (``--cluster-spec``, the demo, tests)."""

    spec: ClusterSpec
    fresh: bool = True


def spec_view(source: ClusterSpec | SpecView) -> SpecView:
    """``source`` as a :class:`SpecView` (a plain spec is fixed)."""
    return FixedSpec(source) if isinstance(source, ClusterSpec) else source
