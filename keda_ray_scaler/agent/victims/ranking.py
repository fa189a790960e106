"""Which pods a ReplicaSet deletes first: a port of the Kubernetes controller's ranking.

Kubernetes ``pkg/controller/controller_utils.go`` ``ActivePodsWithRanks.Less`` and
``pkg/controller/replicaset/replica_set.go`` ``getPodsToDelete``: when a ReplicaSet has ``diff``
pods too many, it ranks its active pods and deletes the first ``diff``. Pod ``a`` comes before
pod ``b`` at the first rule that tells them apart:

1. unassigned (no ``spec.nodeName``) before assigned;
2. phase ``Pending`` before ``Unknown`` before ``Running`` (other phases rank as ``Pending``);
3. not ready before ready;
4. lower ``controller.kubernetes.io/pod-deletion-cost`` first (int32; absent or invalid is 0);
5. more active pods of the same owner on the pod's node first ("doubled up");
6. both ready: ready more recently first (zero time first); with ``LogarithmicScaleDown``
   (default on since 1.22) the times are compared by ``floor(log2(now - t in ns))`` buckets and
   equal buckets are ordered by UID;
7. higher max container restart count first, then higher sidecar restart count;
8. created more recently first (zero first), logarithmic buckets and UID as in 6.

Pure: no clock (``now_s`` is an argument), no Kubernetes objects (``PodInfo`` is built by
``kube/pod_info.py``). :func:`check_takes_first` answers the question the victim protocol asks.
"""

from __future__ import annotations

import enum
import functools
import math
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from keda_ray_scaler.agent.pod import PodInfo

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


class Rule(enum.StrEnum):
    """The rule that ordered two pods (used in log lines and verdict reasons)."""

    UNASSIGNED = "unassigned"
    PHASE = "phase"
    READY = "ready"
    DELETION_COST = "deletion_cost"
    COLOCATED = "colocated"
    READY_TIME = "ready_time"
    RESTARTS = "restarts"
    CREATION = "creation"
    UID = "uid"
    TIE = "tie"


#: Rules whose outcome does not depend on the controller's clock or on pod placement history.
DETERMINISTIC_RULES = frozenset({Rule.UNASSIGNED, Rule.PHASE, Rule.READY, Rule.DELETION_COST})


def colocated_ranks(pods: Iterable[PodInfo]) -> dict[str, int]:
    """Rank of each pod: active pods (of the same set) on its node, unassigned pods together."""
    pods = tuple(pods)
    per_node = Counter(p.node_name for p in pods if p.active)
    return {p.name: per_node[p.node_name] for p in pods}


def _log_bucket(t_s: float, now_s: float) -> int:
    nanos = round((now_s - t_s) * 1e9)
    return int(math.log2(nanos)) if nanos > 0 else -1


def _by_time(a_t: float | None, b_t: float | None, now_s: float | None) -> int:
    """-1 when a's time sorts first: zero first, then later first, in log buckets when ``now``."""
    if a_t is None or b_t is None:
        return -1 if a_t is None else 1  # afterOrZero; both None never reaches here
    if now_s is None:
        return -1 if a_t > b_t else 1
    diff = _log_bucket(a_t, now_s) - _log_bucket(b_t, now_s)
    return 0 if diff == 0 else (-1 if diff < 0 else 1)


def compare(
    a: PodInfo, b: PodInfo, rank_a: int, rank_b: int, now_s: float | None
) -> tuple[int, Rule]:
    """-1 when ``a`` is deleted before ``b``, 1 when after, 0 when tied; and the deciding rule.

    ``now_s`` None means the ``LogarithmicScaleDown`` gate is off (plain time comparison).
    """
    if a.node_name != b.node_name and (not a.node_name or not b.node_name):
        return (-1 if not a.node_name else 1), Rule.UNASSIGNED
    pa, pb = _PHASE_ORDINAL.get(a.phase, 0), _PHASE_ORDINAL.get(b.phase, 0)
    if pa != pb:
        return (-1 if pa < pb else 1), Rule.PHASE
    if a.ready != b.ready:
        return (-1 if not a.ready else 1), Rule.READY
    ca, cb = a.deletion_cost, b.deletion_cost
    if ca != cb:
        return (-1 if ca < cb else 1), Rule.DELETION_COST
    if rank_a != rank_b:
        return (-1 if rank_a > rank_b else 1), Rule.COLOCATED
    if a.ready and b.ready and a.ready_since_s != b.ready_since_s:
        order = _by_time(a.ready_since_s, b.ready_since_s, now_s)
        if order:
            return order, Rule.READY_TIME
        return (-1 if a.uid < b.uid else 1), Rule.UID
    if (a.restarts, a.sidecar_restarts) != (b.restarts, b.sidecar_restarts):
        more = (a.restarts, a.sidecar_restarts) > (b.restarts, b.sidecar_restarts)
        return (-1 if more else 1), Rule.RESTARTS
    if a.created_s != b.created_s:
        order = _by_time(a.created_s, b.created_s, now_s)
        if order:
            return order, Rule.CREATION
        return (-1 if a.uid < b.uid else 1), Rule.UID
    return 0, Rule.TIE


def deletion_order(pods: Sequence[PodInfo], now_s: float | None) -> list[PodInfo]:
    """Active pods in the order the ReplicaSet would delete them (ties keep input order).

    Go's ``sort.Sort`` is not stable, so pods tied on every rule may come out in either order.
    """
    active = [p for p in pods if p.active]
    ranks = colocated_ranks(active)

    def cmp(a: PodInfo, b: PodInfo) -> int:
        return compare(a, b, ranks[a.name], ranks[b.name], now_s)[0]

    return sorted(active, key=functools.cmp_to_key(cmp))


@dataclass(frozen=True, slots=True)
class RankingCheck:
    """Would deleting ``len(victims)`` pods take exactly the victims?"""

    ok: bool
    reason: str = ""
    blocker: str = ""  # the pod that could be deleted instead of a victim
    rule: Rule | None = None


def check_takes_first(
    pods: Sequence[PodInfo], victims: Collection[str], now_s: float | None = None
) -> RankingCheck:
    """True only if every victim ranks strictly before every other active pod, decided by a
    rule that does not depend on the controller's clock (:data:`DETERMINISTIC_RULES`).

    ``pods`` are all pods of one ReplicaSet. A victim that is not an active pod fails the check.
    When every active pod is a victim the controller deletes them all without ranking.
    """
    active = [p for p in pods if p.active]
    names = {p.name for p in active}
    missing = sorted(set(victims) - names)
    if missing:
        return RankingCheck(False, f"victim {missing[0]} is not an active pod", missing[0])
    if len(victims) >= len(active):
        return RankingCheck(True)
    # Rules 1-4 are exactly a lexicographic key, so "every victim before every other pod by
    # rules 1-4" is "the largest victim key is below the smallest other key": O(pods).
    chosen = [p for p in active if p.name in victims]
    others = [p for p in active if p.name not in victims]
    last = max(chosen, key=_deterministic_key)
    first = min(others, key=_deterministic_key)
    if _deterministic_key(last) < _deterministic_key(first):
        return RankingCheck(True)
    ranks = colocated_ranks(active)
    order, rule = compare(last, first, ranks[last.name], ranks[first.name], now_s)
    reason = (
        f"pod {first.name} ranks before or with victim {last.name} by {rule}"
        if order >= 0
        else f"victim {last.name} ranks before {first.name} only by {rule}"
    )
    return RankingCheck(False, reason, first.name, rule)


def _deterministic_key(pod: PodInfo) -> tuple[int, int, int, int]:
    """Rules 1-4 as a sort key: (assigned, phase, ready, deletion cost)."""
    return (
        1 if pod.node_name else 0,
        _PHASE_ORDINAL.get(pod.phase, 0),
        1 if pod.ready else 0,
        pod.deletion_cost,
    )
