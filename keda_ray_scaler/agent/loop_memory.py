"""What one poll of the loop leaves to the next, as one frozen value stepped by pure functions.

:func:`spec_seen` steps it on the worker groups' freshness (checked before Ray is read);
:func:`step` on what a poll read (the superseded Ray nodes, the task demand's fallback, the pod
listing and the pods Ray has a node for). Each returns the next memory and the changes worth one
log line; :class:`~keda_ray_scaler.agent.loop.AgentLoop` logs them and acts. No I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from keda_ray_scaler.agent.ray.task_load_read import Fallback


class Change(Enum):
    """A change since the last poll that the loop logs once."""

    #: the worker groups cannot be trusted now: the poll reads nothing, the data is not fresh
    SPEC_STALE = "spec_stale"
    #: the worker groups can be trusted again
    SPEC_FRESH = "spec_fresh"
    #: the task demand fell back from rule R1, or for another reason than the last poll's
    FELL_BACK = "fell_back"
    #: the task demand is by rule R1 again
    R1_AGAIN = "r1_again"
    #: Ray reports other superseded nodes than at the last poll (and some)
    SUPERSEDED = "superseded"


@dataclass(frozen=True, slots=True)
class PollMemory:
    """The loop's memory between polls.

    - ``stale``: the worker groups were not fresh at the last poll;
    - ``superseded``: the superseded Ray nodes of the last read (logged when they change);
    - ``fallback``: why the last read's task demand fell back from R1 (None: it did not);
    - ``known_pods``: the pod names of the last synced listing;
    - ``gone``: pods seen before, absent from the listing now, whose Ray node is still reported.
    """

    stale: bool = False
    superseded: tuple[str, ...] = ()
    fallback: Fallback | None = None
    known_pods: frozenset[str] = frozenset()
    gone: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Observation:
    """What a poll read that the memory steps on.

    - ``superseded`` and ``fallback``: as the Ray read reports them;
    - ``pods``: the names of the synced pod listing; None while the listing is not synced (then
      the pods the memory knows are kept, and nothing new is decided of them);
    - ``in_ray``: the pods Ray reports a node for.
    """

    superseded: tuple[str, ...] = ()
    fallback: Fallback | None = None
    pods: frozenset[str] | None = None
    in_ray: frozenset[str] = frozenset()


def spec_seen(memory: PollMemory, fresh: bool) -> tuple[PollMemory, frozenset[Change]]:
    """The memory after the worker groups were found ``fresh`` or not; a change either way is
    :attr:`Change.SPEC_STALE` or :attr:`Change.SPEC_FRESH`, once."""
    changes: set[Change] = set()
    if not fresh and not memory.stale:
        changes.add(Change.SPEC_STALE)
    elif fresh and memory.stale:
        changes.add(Change.SPEC_FRESH)
    return replace(memory, stale=not fresh), frozenset(changes)


def step(memory: PollMemory, seen: Observation) -> tuple[PollMemory, frozenset[Change]]:
    """The memory after a poll read ``seen``, and what changed.

    ``gone`` gains the known pods absent from a synced listing and keeps only pods Ray still
    reports and the listing does not hold; an unsynced listing (``seen.pods`` None) leaves the
    pods as they were."""
    changes: set[Change] = set()
    if seen.fallback is not None and seen.fallback != memory.fallback:
        changes.add(Change.FELL_BACK)
    elif seen.fallback is None and memory.fallback is not None:
        changes.add(Change.R1_AGAIN)
    if seen.superseded and seen.superseded != memory.superseded:
        changes.add(Change.SUPERSEDED)
    known, gone = memory.known_pods, memory.gone
    if seen.pods is not None:
        gone = frozenset((gone | (known - seen.pods)) & seen.in_ray - seen.pods)
        known = seen.pods
    after = PollMemory(memory.stale, seen.superseded, seen.fallback, known, gone)
    return after, frozenset(changes)
