"""A snapshot as runs (:mod:`~keda_ray_scaler.agent.http.series_runs`), encoded again only where
it changed since the snapshot before.

The sections are :mod:`keda_ray_scaler.schema.encoding`'s, so each family's series are
``encode(snapshot)``'s, in its order:

- the head (time, success, cluster settings) and the worker groups: encoded at every snapshot
  (``encode`` of the input without demand or nodes: a few series a group), a run of the same
  series and values kept;
- the demand: kept while it is equal;
- each node: kept by pod while the node is equal but for its idle times; an idle-since time
  exported that changed (:func:`~keda_ray_scaler.schema.encoding.idle_since`) makes its one
  series' lines from the form kept. The agent keeps an idle node's idle-since time from poll to
  poll, so its series stays as it was while its idle time grows. The idle series of every node
  are one run, after the nodes' other runs (the family's order is ``encode``'s).

Nothing is kept but the last snapshot's runs: a pod gone is forgotten at the next snapshot.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import fields, replace
from operator import attrgetter, is_
from typing import Final, NamedTuple

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.series_runs import (
    Run,
    SeriesForm,
    forget_forms,
    runs_of,
    same_value,
)
from keda_ray_scaler.model import Demand, PlanningInput, Resources, WorkerNode
from keda_ray_scaler.schema import ClusterSnapshot, encoding


def _fields_but(*left_out: str) -> attrgetter[tuple[object, ...]]:
    return attrgetter(*(f.name for f in fields(WorkerNode) if f.name not in left_out))


#: How many nodes' resource runs :func:`_resources` keeps: two of each of 2,000 nodes.
RESOURCE_RUNS_KEPT: Final = 4_096
#: A node's fields but its idle times: what its runs but the idle series depend on.
_ALL_BUT_IDLE: Final = _fields_but("idle_s", "idle_since_s")
#: A node's fields but its resources and idle times: what its info series depends on.
_INFO: Final = _fields_but("idle_s", "idle_since_s", "total", "available")


class _NodeRuns(NamedTuple):  # a tuple: made for most nodes at every poll, at a third of the cost
    """One node's runs but the idle series (its info's, its total's and available's), and the
    idle series' form, value and lines."""

    node: WorkerNode
    info: tuple[Run, ...]
    total: tuple[Run, ...]
    available: tuple[Run, ...]
    idle_form: SeriesForm
    idle_value: float
    idle_digest: str
    idle_text: str

    @property
    def fixed(self) -> tuple[Run, ...]:
        """The node's runs but the idle series, in ``encode``'s order."""
        return self.info + self.total + self.available


def node_runs(cluster: str, node: WorkerNode, kept: _NodeRuns | None, when: float) -> _NodeRuns:
    """``node``'s runs in a snapshot taken at ``when``: ``kept`` as it is for the same node, with
    new idle lines when only the idle-since time exported changed; else each part kept while
    what it depends on is equal, the others encoded anew."""
    if kept is None:
        *_, idle = samples = encoding.node_samples(cluster, node, when)
        form = SeriesForm.of(idle.name, idle.labels)
        info, total, available = _parts(runs_of(samples[:-1]))
        return _NodeRuns(node, info, total, available, form, *_idle_lines(form, idle.value))
    if kept.node is node and not _derived(node):
        return kept
    since = encoding.idle_since(node, when)
    if _ALL_BUT_IDLE(kept.node) == _ALL_BUT_IDLE(node):  # most often: its idle time grew
        _, info, total, available, form, value, digest, text = kept  # (_replace: thrice as dear)
        if not same_value(value, since):
            value, digest, text = since, form.digest_line(since), form.text_line(since)
        return _NodeRuns(node, info, total, available, form, value, digest, text)
    pod, old = node.pod, kept.node
    info = (
        kept.info
        if _INFO(old) == _INFO(node)
        else tuple(runs_of([encoding.node_info(cluster, node)], kept.info))
    )
    total = (
        kept.total
        if old.total == node.total
        else _resources(cluster, pod, schema.NODE_TOTAL, node.total)
    )
    available = (
        kept.available
        if old.available == node.available
        else _resources(cluster, pod, schema.NODE_AVAILABLE, node.available)
    )
    idle = encoding.idle_sample(cluster, pod, since)
    if kept.idle_form.labels != idle.labels:
        form = SeriesForm.of(idle.name, idle.labels)
        return _NodeRuns(node, info, total, available, form, *_idle_lines(form, idle.value))
    if same_value(kept.idle_value, since):  # its idle lines as they were, the very lines
        return _NodeRuns(node, info, total, available, *kept[4:])
    form = kept.idle_form
    return _NodeRuns(node, info, total, available, form, *_idle_lines(form, idle.value))


def _same(
    last: tuple[str, tuple[WorkerNode, ...]], cluster: str, nodes: tuple[WorkerNode, ...]
) -> bool:
    """Whether ``cluster`` and ``nodes`` are ``last``'s very cluster and nodes (by identity: at
    a fraction of ``==``'s cost)."""
    return last[0] == cluster and len(last[1]) == len(nodes) and all(map(is_, last[1], nodes))


@functools.lru_cache(maxsize=RESOURCE_RUNS_KEPT)
def _resources(cluster: str, pod: str, metric: str, vec: Resources) -> tuple[Run, ...]:
    """A node's ``metric`` runs of ``vec``: the very runs made when the node last had it (a
    node's use goes back and forth between a few values: idle, busy)."""
    return tuple(runs_of(encoding.resource_samples(cluster, pod, metric, vec)))


def forget_series() -> None:
    """Forget every series form, node resource run and demand shape kept across snapshots (a
    new agent's start: the bench's cold encode)."""
    _resources.cache_clear()
    forget_forms()
    encoding.forget_shapes()


def _parts(runs: list[Run]) -> tuple[tuple[Run, ...], tuple[Run, ...], tuple[Run, ...]]:
    """A node's runs (info, then total and available when it has them) by part."""
    by_name = {r.name: (r,) for r in runs}
    return (
        by_name[schema.NODE_INFO],
        by_name.get(schema.NODE_TOTAL, ()),
        by_name.get(schema.NODE_AVAILABLE, ()),
    )


def _derived(node: WorkerNode) -> bool:
    """Whether ``node``'s idle-since time exported is derived from the snapshot's time (it holds
    an idle time, not an idle-since time: :func:`~keda_ray_scaler.schema.encoding.idle_since`)."""
    return node.idle_s > 0 and node.idle_since_s <= 0


def _entries(
    cluster: str, nodes: Sequence[WorkerNode], old: Sequence[_NodeRuns], when: float
) -> tuple[list[_NodeRuns], bool, bool]:
    """Each node's runs in a snapshot taken at ``when``, ``old`` (the last snapshot's entries)
    kept for a node that is the very node at the same place (its idle time not derived) and
    otherwise made from the entry of its pod (:func:`node_runs`); and whether any node's runs
    but the idle series, and whether any idle series, differ from ``old``'s at the same place."""
    out: list[_NodeRuns] = []
    fixed = idle = len(old) != len(nodes)
    by_pod: dict[str, _NodeRuns] | None = None
    for i, node in enumerate(nodes):
        was = old[i] if i < len(old) else None
        if was is not None and was.node is node and not _derived(node):
            out.append(was)
            continue
        if was is None or was.node.pod != node.pod:
            by_pod = {e.node.pod: e for e in old} if by_pod is None else by_pod
            was = by_pod.get(node.pod)
        entry = node_runs(cluster, node, was, when)
        out.append(entry)
        if not fixed and i < len(old):
            at = old[i]
            fixed = not (
                entry.info is at.info
                and entry.total is at.total
                and entry.available is at.available
            )
        idle = idle or i >= len(old) or entry.idle_text is not old[i].idle_text
    return out, fixed, idle


def _idle_lines(form: SeriesForm, since_s: float) -> tuple[float, str, str]:
    return since_s, form.digest_line(since_s), form.text_line(since_s)


class SeriesMemo:
    """Encodes snapshots as runs by family, keeping the last snapshot's (module doc)."""

    def __init__(self) -> None:
        self._head: list[Run] = []
        self._demand: tuple[tuple[str, Demand] | None, list[Run]] = (None, [])
        self._entries: list[_NodeRuns] = []  # the last nodes' runs, in their order
        self._cluster = ""
        self._fixed: dict[str, list[Run]] = {}  # their runs but the idle series', by family
        self._idle: Run | None = None  # every node's idle series
        # the last nodes, their runs by family, and the snapshot time those depend on (None:
        # none of them, every idle node's idle-since time its own)
        self._last_nodes: tuple[
            tuple[str, tuple[WorkerNode, ...]] | None, dict[str, list[Run]], float | None
        ] = (None, {}, None)

    def families(self, snapshot: ClusterSnapshot) -> dict[str, list[Run]]:
        """``encoding.encode(snapshot)`` as runs by family, the families in first-seen order
        (each node's idle series last: one run of every node's, the family's order kept)."""
        spec, inp = snapshot.input.cluster, snapshot.input
        out: dict[str, list[Run]] = {}
        # The head and the groups: encode's own, of an input without demand or nodes.
        head = replace(snapshot, input=PlanningInput(spec, launch_limits=inp.launch_limits))
        demand_key = (spec.name, inp.demand)
        if self._demand[0] != demand_key:  # the shapes seldom change, their counts do
            samples = encoding.demand_samples(spec.name, inp.demand)
            self._demand = (demand_key, runs_of(samples, self._demand[1]))
        self._head = runs_of(encoding.encode(head), self._head)  # the groups' runs kept
        for r in (*self._head, *self._demand[1]):
            out.setdefault(r.name, []).append(r)
        nodes = self._node_families(spec.name, inp.nodes, snapshot.snapshot_time_s)
        for name, runs in nodes.items():
            out.setdefault(name, []).extend(runs)
        return out

    def _node_families(
        self, cluster: str, nodes: tuple[WorkerNode, ...], when: float
    ) -> dict[str, list[Run]]:
        """The nodes' runs by family in a snapshot taken at ``when``; the last ones for the
        very same nodes (at the same time, when an idle-since time is derived from it); else
        only the runs of nodes that changed made again (:func:`_entries`), and a family
        gathered again only when one of its runs changed."""
        last, runs, at = self._last_nodes
        if last is not None and at in (None, when) and _same(last, cluster, nodes):
            return runs
        old = self._entries if cluster == self._cluster else []
        entries, fixed, idle = _entries(cluster, nodes, old, when)
        if fixed or cluster != self._cluster:
            self._fixed = _by_family(entries)
        if idle or self._idle is None:
            self._idle = _idle_run(entries) if entries else None
        self._entries, self._cluster = entries, cluster
        out = dict(self._fixed)
        if self._idle is not None:
            out[schema.NODE_IDLE_SINCE] = [self._idle]
        derived = any(map(_derived, nodes))
        self._last_nodes = ((cluster, nodes), out, when if derived else None)
        return out


def _by_family(entries: Sequence[_NodeRuns]) -> dict[str, list[Run]]:
    """The nodes' runs but the idle series, by family (in first-seen order)."""
    grouped: dict[str, list[Run]] = {}
    for r in itertools.chain.from_iterable(e.fixed for e in entries):
        grouped.setdefault(r.name, []).append(r)
    return grouped


def _idle_run(entries: Sequence[_NodeRuns]) -> Run:
    """Every node's idle series as one run."""
    forms = tuple(e.idle_form for e in entries)
    values = tuple(e.idle_value for e in entries)
    digest = tuple(e.idle_digest for e in entries)
    return Run(schema.NODE_IDLE_SINCE, forms, values, digest, "".join(e.idle_text for e in entries))
