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
from keda_ray_scaler.agent.http.exposition import text_line
from keda_ray_scaler.agent.http.series_runs import (
    Run,
    SeriesForm,
    forget_forms,
    runs_of,
    same_value,
)
from keda_ray_scaler.model import Demand, PlanningInput, Resources, WorkerNode
from keda_ray_scaler.schema import ClusterSnapshot, encoding
from keda_ray_scaler.schema.digest import value_line


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
    if kept.node is node:
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
    form = (
        kept.idle_form
        if kept.idle_form.labels == idle.labels
        else SeriesForm.of(idle.name, idle.labels)
    )
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
    """Forget every series form and node resource run kept across snapshots (a new agent's
    start: the bench's cold encode)."""
    _resources.cache_clear()
    forget_forms()


def _parts(runs: list[Run]) -> tuple[tuple[Run, ...], tuple[Run, ...], tuple[Run, ...]]:
    """A node's runs (info, then total and available when it has them) by part."""
    by_name = {r.name: (r,) for r in runs}
    return (
        by_name[schema.NODE_INFO],
        by_name.get(schema.NODE_TOTAL, ()),
        by_name.get(schema.NODE_AVAILABLE, ()),
    )


def idle_moved(
    entries: list[_NodeRuns], nodes: Sequence[WorkerNode], when: float
) -> list[_NodeRuns] | None:
    """``entries`` for ``nodes``, the same nodes in the same order but maybe for their idle
    times: new idle lines only where the idle-since time exported changed (the lines made
    here, not by the form's methods: a call less each); a node kept is its entry as it was.
    None when every entry is kept (``entries`` is the answer)."""
    out, moved = [], False
    for kept, node in zip(entries, nodes, strict=True):
        since = node.idle_since_s  # encoding.idle_since, inline: every node
        if since <= 0:
            since = when - node.idle_s if node.idle_s > 0 else 0.0
        if same_value(kept.idle_value, since):
            out.append(kept)
            continue
        _, info, total, available, form, _, _, _ = kept
        digest = value_line(form.digest_prefix, since)
        text = text_line(form.text_prefix, since)
        out.append(_NodeRuns(node, info, total, available, form, since, digest, text))
        moved = True
    return out if moved else None


def _idle_lines(form: SeriesForm, since_s: float) -> tuple[float, str, str]:
    return since_s, form.digest_line(since_s), form.text_line(since_s)


class SeriesMemo:
    """Encodes snapshots as runs by family, keeping the last snapshot's (module doc)."""

    def __init__(self) -> None:
        self._head: list[Run] = []
        self._demand: tuple[tuple[str, Demand] | None, list[Run]] = (None, [])
        self._entries: list[_NodeRuns] = []  # the last nodes' runs, in their order
        self._keys: list[tuple[object, ...]] = []  # and each node's fields but its idle time
        self._cluster = ""
        self._fixed: tuple[tuple[tuple[Run, ...], ...], dict[str, list[Run]]] = ((), {})
        self._idle: tuple[tuple[str, ...], tuple[str, ...], Run | None] = ((), (), None)
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
        very same nodes (at the same time, when an idle-since time is derived from it)."""
        last, runs, at = self._last_nodes
        if last is not None and at in (None, when) and _same(last, cluster, nodes):
            return runs
        keys = list(map(_ALL_BUT_IDLE, nodes))
        idle = self._idle[2]
        if cluster == self._cluster and keys == self._keys:  # the same nodes, idle times apart
            moved = idle_moved(self._entries, nodes, when)
            entries = self._entries if moved is None else moved
            idle = idle if moved is None else None  # every line kept: the run too
            out = dict(self._fixed[1])  # every node's runs but the idle series' kept
        else:
            kept = {e.node.pod: e for e in self._entries} if cluster == self._cluster else {}
            entries = [node_runs(cluster, n, kept.get(n.pod), when) for n in nodes]
            out, idle = dict(self._fixed_runs(entries)), None
        self._entries, self._keys, self._cluster = entries, keys, cluster
        if entries:
            out[schema.NODE_IDLE_SINCE] = [idle if idle is not None else self._idle_run(entries)]
        derived = any(n.idle_s > 0 and n.idle_since_s <= 0 for n in nodes)
        self._last_nodes = ((cluster, nodes), out, when if derived else None)
        return out

    def _fixed_runs(self, entries: list[_NodeRuns]) -> dict[str, list[Run]]:
        """The nodes' runs but the idle series, by family; the last ones when every node's are."""
        fixed = tuple(e.fixed for e in entries)
        if fixed != self._fixed[0]:
            grouped: dict[str, list[Run]] = {}
            for r in itertools.chain.from_iterable(fixed):
                grouped.setdefault(r.name, []).append(r)
            self._fixed = (fixed, grouped)
        return self._fixed[1]

    def _idle_run(self, entries: list[_NodeRuns]) -> Run:
        """Every node's idle series as one run; the last one when every line is the same."""
        digest = tuple(e.idle_digest for e in entries)
        text = tuple(e.idle_text for e in entries)
        last = self._idle[2]
        if last is None or digest != self._idle[0] or text != self._idle[1]:
            forms = tuple(e.idle_form for e in entries)
            values = tuple(e.idle_value for e in entries)
            last = Run(schema.NODE_IDLE_SINCE, forms, values, digest, "".join(text))
            self._idle = (digest, text, last)
        return last
