"""A snapshot as runs (:mod:`~keda_ray_scaler.agent.http.series_runs`), encoded again only where
it changed since the snapshot before.

The sections are :mod:`keda_ray_scaler.schema.encoding`'s, so each family's series are
``encode(snapshot)``'s, in its order:

- the head (time, success, cluster settings) and the worker groups: encoded at every snapshot
  (``encode`` of the input without demand or nodes: a few series a group), a run of the same
  series and values kept;
- the demand: kept while it is equal;
- each node: kept by pod while the node is equal but for its idle time; an idle time that
  changed makes its one series' lines from the form kept (an idle node's time grows at every
  poll: that series changes while the node does not). The idle series of every node are one
  run, after the nodes' other runs (the family's order is ``encode``'s).

Nothing is kept but the last snapshot's runs: a pod gone is forgotten at the next snapshot.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import fields, replace
from operator import attrgetter
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
#: A node's fields but its idle time: what its runs but the idle series depend on.
_ALL_BUT_IDLE: Final = _fields_but("idle_s")
#: A node's fields but its resources and idle time: what its info series depends on.
_INFO: Final = _fields_but("idle_s", "total", "available")


class _NodeRuns(NamedTuple):  # a tuple: made for most nodes at every poll, at a third of the cost
    """One node's runs but the idle series (its info's, its total's and available's), and the
    idle series' form and lines."""

    node: WorkerNode
    info: tuple[Run, ...]
    total: tuple[Run, ...]
    available: tuple[Run, ...]
    idle_form: SeriesForm
    idle_digest: str
    idle_text: str

    @property
    def fixed(self) -> tuple[Run, ...]:
        """The node's runs but the idle series, in ``encode``'s order."""
        return self.info + self.total + self.available


def node_runs(cluster: str, node: WorkerNode, kept: _NodeRuns | None) -> _NodeRuns:
    """``node``'s runs: ``kept`` as it is for the same node, with new idle lines when only the
    idle time changed; else each part kept while what it depends on is equal, the others
    encoded anew."""
    if kept is None:
        *_, idle = samples = encoding.node_samples(cluster, node)
        form = SeriesForm.of(idle.name, idle.labels)
        info, total, available = _parts(runs_of(samples[:-1]))
        return _NodeRuns(node, info, total, available, form, *_idle_lines(form, idle.value))
    if kept.node is node:
        return kept
    if _ALL_BUT_IDLE(kept.node) == _ALL_BUT_IDLE(node):  # most often: its idle time grew
        _, info, total, available, form, digest, text = kept  # (_replace costs thrice as much)
        if not same_value(kept.node.idle_s, node.idle_s):
            digest, text = form.digest_line(node.idle_s), form.text_line(node.idle_s)
        return _NodeRuns(node, info, total, available, form, digest, text)
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
    idle = encoding.idle_sample(cluster, pod, node.idle_s)
    form = (
        kept.idle_form
        if kept.idle_form.labels == idle.labels
        else SeriesForm.of(idle.name, idle.labels)
    )
    return _NodeRuns(node, info, total, available, form, *_idle_lines(form, idle.value))


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


def idle_moved(entries: list[_NodeRuns], nodes: Sequence[WorkerNode]) -> list[_NodeRuns]:
    """``entries`` for ``nodes``, the same nodes in the same order but maybe for their idle
    times: new idle lines only where that changed (the lines made here, not by the form's
    methods: a call less each, for most nodes at every poll)."""
    out = []
    for kept, node in zip(entries, nodes, strict=True):
        idle = node.idle_s
        if same_value(kept.node.idle_s, idle):
            out.append(kept)
            continue
        _, info, total, available, form, _, _ = kept
        digest = value_line(form.digest_prefix, idle)
        text = text_line(form.text_prefix, idle)
        out.append(_NodeRuns(node, info, total, available, form, digest, text))
    return out


def _idle_lines(form: SeriesForm, idle_s: float) -> tuple[str, str]:
    return form.digest_line(idle_s), form.text_line(idle_s)


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
        self._last_nodes: tuple[tuple[str, tuple[WorkerNode, ...]] | None, dict[str, list[Run]]]
        self._last_nodes = (None, {})

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
        for name, runs in self._node_families(spec.name, inp.nodes).items():
            out.setdefault(name, []).extend(runs)
        return out

    def _node_families(self, cluster: str, nodes: tuple[WorkerNode, ...]) -> dict[str, list[Run]]:
        """The nodes' runs by family; the last ones for the very same nodes."""
        if (cluster, nodes) == self._last_nodes[0]:  # compared by identity first: quick
            return self._last_nodes[1]
        keys = list(map(_ALL_BUT_IDLE, nodes))
        if cluster == self._cluster and keys == self._keys:  # the same nodes, idle times apart
            entries = idle_moved(self._entries, nodes)
            out = dict(self._fixed[1])  # every node's runs but the idle series' kept
        else:
            kept = {e.node.pod: e for e in self._entries} if cluster == self._cluster else {}
            entries = [node_runs(cluster, n, kept.get(n.pod)) for n in nodes]
            out = dict(self._fixed_runs(entries))
        self._entries, self._keys, self._cluster = entries, keys, cluster
        if entries:
            out[schema.NODE_IDLE_SECONDS] = [self._idle_run(entries)]
        self._last_nodes = ((cluster, nodes), out)
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
            values = tuple(e.node.idle_s for e in entries)
            last = Run(schema.NODE_IDLE_SECONDS, forms, values, digest, "".join(text))
            self._idle = (digest, text, last)
        return last
