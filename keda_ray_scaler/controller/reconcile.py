"""One RayCluster's round and one namespace's pass: read, decide with the core, write, tell.

A round reads the RayCluster and decides (:func:`decide`: the core's opt-in, then its desired
objects; a cluster not opted in should have nothing of ours, so what we made for it goes). A
refused cluster is told why and nothing is read or written for it: a typo in an annotation
removes no autoscaling mid-run. Otherwise the round lists the objects the controller made for
the cluster (the managed-by and cluster labels), reads by name each desired object the list did
not hold (one of another's in the way), plans the changes with the core and writes them
(:mod:`~keda_ray_scaler.controller.writes`). Every refusal of the round is told once, and again
only after a while (:mod:`~keda_ray_scaler.controller.notices`), and the round's condition
(:mod:`~keda_ray_scaler.controller.condition`) is written on the cluster's status when it shows
another (a failed condition write is logged and counted; the next round tries again). A
namespace's pass does the same for each RayCluster of the namespace, listing each kind once for
all of them.

Blocking (the kubernetes client): the runner calls it in a worker thread, one round at a time.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import structlog

from keda_ray_scaler.clock import Now
from keda_ray_scaler.controller import condition, notices
from keda_ray_scaler.controller.changes import plan_changes
from keda_ray_scaler.controller.condition import Condition, Unsaid
from keda_ray_scaler.controller.desired import DesiredObjects, desired_objects, nothing_desired
from keda_ray_scaler.controller.kube_calls import CallFailed
from keda_ray_scaler.controller.kube_io import ObjectStore
from keda_ray_scaler.controller.metrics import ControllerMetrics
from keda_ray_scaler.controller.notices import Notice, NoticeMemo
from keda_ray_scaler.controller.objects import (
    CLUSTER_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    Kind,
)
from keda_ray_scaler.controller.optin import NotOptedIn, Refusal, read_cluster
from keda_ray_scaler.controller.template import ControllerTemplate
from keda_ray_scaler.controller.writes import Written, write_changes
from keda_ray_scaler.errors import ConfigError

log = structlog.get_logger(__name__)

#: every object the controller made, in a namespace
MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"


class Outcome(enum.Enum):
    """How one cluster's round ended (the rounds counter's label)."""

    #: not opted in, nothing of ours there
    LEFT_ALONE = "left_alone"
    #: everything as desired; no write
    UNCHANGED = "unchanged"
    #: objects written
    CHANGED = "changed"
    #: the cluster refused (told): nothing read or written
    REFUSED = "refused"
    #: an object in the way, or a field of ours another manager holds (told); the rest written
    CONFLICT = "conflict"
    #: something changed or is being deleted since it was read: looked at again soon
    STALE = "stale"
    #: an API call failed (logged)
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class RoundResult:
    """A round's outcome and how many objects it wrote."""

    outcome: Outcome
    writes: int = 0


def decide(
    cluster: Mapping[str, Any], template: ControllerTemplate
) -> DesiredObjects | Notice | None:
    """What the core says of a RayCluster as read: its desired objects (none when it is not
    opted in), the notice of its refusal, or None when nothing is to be done: it is being
    deleted (what we made goes with it), or it is not opted in under a name the controller
    cannot use (it never made anything for it). Pure."""
    if (cluster.get("metadata") or {}).get("deletionTimestamp"):
        return None
    decision = read_cluster(cluster)
    if isinstance(decision, Refusal):
        return notices.cluster_refused(decision)
    try:
        if isinstance(decision, NotOptedIn):
            return nothing_desired(cluster)
        return desired_objects(cluster, decision, template)
    except ConfigError as exc:
        return None if isinstance(decision, NotOptedIn) else notices.bad_cluster(str(exc))


def cluster_selector(name: str) -> str:
    """The objects the controller made for RayCluster ``name``."""
    return f"{MANAGED_SELECTOR},{CLUSTER_LABEL}={name}"


class Reconciler:
    """Rounds of RayClusters through ``store`` (module doc); ``now`` stamps the events and
    times their repeats (``memo``)."""

    def __init__(
        self,
        store: ObjectStore,
        template: ControllerTemplate,
        metrics: ControllerMetrics,
        now: Now,
        memo: NoticeMemo | None = None,
    ) -> None:
        self._store = store
        self._template = template
        self._metrics = metrics
        self._now = now
        self._memo = memo or NoticeMemo()

    def cluster(self, namespace: str, name: str) -> RoundResult | None:
        """One round of RayCluster ``namespace/name``; None when it is gone (its objects go by
        their owner reference)."""
        cluster = self._store.get_cluster(namespace, name)
        if cluster is None:
            return None
        selector = cluster_selector(name)
        return self._decided(
            cluster,
            lambda: [o for k in Kind for o in self._store.list_objects(k, namespace, selector)],
        )

    def namespace(self, namespace: str) -> dict[str, RoundResult]:
        """A round of every RayCluster of ``namespace``, by name (a cluster whose round failed
        is logged and counted, and the others go on)."""
        clusters, _ = self._store.list_clusters(namespace)
        by_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for kind in Kind:
            for obj in self._store.list_objects(kind, namespace, MANAGED_SELECTOR):
                labels = (obj.get("metadata") or {}).get("labels") or {}
                by_cluster[str(labels.get(CLUSTER_LABEL) or "")].append(obj)
        results = {}
        for cluster in clusters:
            name = str((cluster.get("metadata") or {}).get("name") or "")
            try:
                results[name] = self._decided(cluster, partial(list, by_cluster.get(name, ())))
            except CallFailed as exc:
                results[name] = self.failed(namespace, name, exc)
        return results

    def forget(self, uid: str) -> None:
        """RayCluster ``uid`` is gone: what was told of it is forgotten."""
        self._memo.forget(uid)

    def failed(self, namespace: str, name: str, exc: CallFailed) -> RoundResult:
        """A round that a read gave up on: logged, counted."""
        log.error("round failed", namespace=namespace, cluster=name, error=str(exc))
        return self._counted(RoundResult(Outcome.FAILED))

    def _decided(
        self, cluster: Mapping[str, Any], listing: Callable[[], list[dict[str, Any]]]
    ) -> RoundResult:
        """The round of ``cluster`` as read; ``listing`` gives the objects made for it (called
        only when the cluster is served or was)."""
        decided = decide(cluster, self._template)
        if decided is None:
            return self._counted(RoundResult(Outcome.LEFT_ALONE))
        if isinstance(decided, Notice):
            return self._refused(cluster, decided)
        return self._round(cluster, decided, listing())

    def _round(
        self, cluster: Mapping[str, Any], desired: DesiredObjects, listed: list[dict[str, Any]]
    ) -> RoundResult:
        namespace = desired.owner.namespace
        found = {(Kind.of(o), _name(o)) for o in listed}
        existing = list(listed)
        for manifest in desired.manifests:
            if (manifest.kind, manifest.name) not in found:
                obj = self._store.get_object(manifest.kind, namespace, manifest.name)
                if obj is not None:
                    existing.append(obj)
        changes = plan_changes(desired, existing)
        written = write_changes(self._store, namespace, changes, existing)
        told = [notices.group_refused(r) for r in desired.refused]
        told += [notices.collision(c) for c in changes.conflicts]
        told += written.notices
        self._tell(cluster, told)
        settled = not (written.failed or written.stale)
        self._show(cluster, condition.of_round(desired, told, settled))
        for kind, name, operation in written.done:
            self._metrics.writes.labels(kind.kind, operation.value).inc()
            log.info("written", namespace=namespace, name=name, kind=kind.kind, op=operation.value)
        return self._counted(_result(desired, listed, changes.conflicts, written))

    def _refused(self, cluster: Mapping[str, Any], notice: Notice) -> RoundResult:
        self._tell(cluster, [notice])
        self._show(cluster, condition.of_refusal(notice))
        return self._counted(RoundResult(Outcome.REFUSED))

    def _show(self, cluster: Mapping[str, Any], wanted: Condition | Unsaid) -> None:
        """Our condition on the cluster's status, when the cluster as read shows another (a
        status write: the generation, which the notices go by, stays)."""
        entries = condition.to_write(cluster, wanted, self._now())
        if entries is None:
            return
        _, _, where = _identity(cluster)
        try:
            self._store.set_conditions(cluster, entries)
        except CallFailed as exc:  # counted by the calls; the next round writes it again
            log.error("condition not written", error=str(exc), **where)
            return
        shown = [(e["status"], e["reason"]) for e in entries] or "removed"
        log.info("condition written", condition=condition.AUTOSCALED, shown=shown, **where)

    def _tell(self, cluster: Mapping[str, Any], told: Sequence[Notice]) -> None:
        """Each notice new, or not shown for a while (``memo``): an event, a count, a log line."""
        uid, generation, where = _identity(cluster)
        now_s = self._now()
        for notice in self._memo.fresh(uid, generation, told, now_s):
            self._metrics.refusals.labels(notice.label).inc()
            log.warning(notice.reason, why=notice.label, message=notice.message, **where)
            try:
                self._store.emit(cluster, notice, now_s)
            except CallFailed as exc:  # told in the log and the counter all the same
                log.error("event not created", reason=notice.reason, error=str(exc), **where)

    def _counted(self, result: RoundResult) -> RoundResult:
        self._metrics.rounds.labels(result.outcome.value).inc()
        return result


def _result(
    desired: DesiredObjects, listed: Sequence[Any], conflicts: Sequence[Any], written: Written
) -> RoundResult:
    writes = len(written.done)
    if written.failed:
        return RoundResult(Outcome.FAILED, writes)
    if written.stale:
        return RoundResult(Outcome.STALE, writes)
    if conflicts or written.notices:
        return RoundResult(Outcome.CONFLICT, writes)
    if writes:
        return RoundResult(Outcome.CHANGED, writes)
    if not desired.manifests and not listed:
        return RoundResult(Outcome.LEFT_ALONE)
    return RoundResult(Outcome.UNCHANGED)


def _identity(cluster: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """The cluster's uid, ``metadata.generation``, and where it is (log fields)."""
    meta = cluster.get("metadata") or {}
    where = {"namespace": meta.get("namespace"), "cluster": meta.get("name")}
    return str(meta.get("uid") or ""), str(meta.get("generation") or ""), where


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
