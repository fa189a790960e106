"""Series ready to seal and serve: runs of one family's series, each with its digest lines and
its exposition text, made once and kept while the series do not change. Pure.

A :class:`Run` is what a section of :mod:`keda_ray_scaler.schema.encoding` wrote for one family
(one node's available resources, the demand, every node's idle time); its lines are the digest's
(:func:`~keda_ray_scaler.schema.digest.series_line`) and the exposition's
(:mod:`~keda_ray_scaler.agent.http.exposition`), so a run kept from an earlier poll costs nothing
to seal or serve again. A :class:`SeriesForm` is one series' name, labels and line prefixes: a
new value (a timestamp, an idle time) makes its lines without encoding the labels again.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from keda_ray_scaler.agent.http.exposition import text_line, text_prefix
from keda_ray_scaler.schema import Sample
from keda_ray_scaler.schema.digest import line_prefix, value_line


@dataclass(frozen=True, slots=True, eq=False)  # by identity: a form kept is the same form
class SeriesForm:
    """One series without its value: name, labels, and its digest and exposition line prefixes."""

    name: str
    labels: Mapping[str, str]
    digest_prefix: str
    text_prefix: str

    @classmethod
    def of(cls, name: str, labels: Mapping[str, str]) -> SeriesForm:
        """The form of series ``name`` with ``labels``."""
        return cls(name, labels, line_prefix(name, labels), text_prefix(name, labels))

    def digest_line(self, value: float) -> str:
        """This series' digest line holding ``value``."""
        return value_line(self.digest_prefix, value)

    def text_line(self, value: float) -> str:
        """This series' exposition line holding ``value``."""
        return text_line(self.text_prefix, value)


@dataclass(frozen=True, slots=True, eq=False)  # compared by identity: a run kept is the same run
class Run:
    """Series of one family, in order: their forms and values, their digest lines (in the same
    order) and their exposition lines (joined)."""

    name: str
    forms: tuple[SeriesForm, ...]
    values: tuple[float, ...]
    digest: tuple[str, ...]
    text: str

    @classmethod
    def of(cls, name: str, forms: Sequence[SeriesForm], values: Sequence[float]) -> Run:
        """The run of ``forms`` holding ``values`` (one each)."""
        pairs = list(zip(forms, values, strict=True))
        digest = tuple(f.digest_line(v) for f, v in pairs)
        return cls(
            name, tuple(forms), tuple(values), digest, "".join(f.text_line(v) for f, v in pairs)
        )

    @property
    def samples(self) -> tuple[Sample, ...]:
        """The run's series as samples."""
        return tuple(
            Sample(f.name, f.labels, v) for f, v in zip(self.forms, self.values, strict=True)
        )


#: How many series forms :func:`form_of` keeps: every series of 2,000 nodes (a few each).
FORMS_KEPT = 16_384


def same_value(a: float, b: float) -> bool:
    """Equal and written alike (``0.0`` and ``-0.0`` are equal but print apart)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _same_values(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))


@functools.lru_cache(maxsize=FORMS_KEPT)
def _form(name: str, items: tuple[tuple[str, str], ...]) -> SeriesForm:
    return SeriesForm.of(name, dict(items))


def form_of(name: str, labels: Mapping[str, str]) -> SeriesForm:
    """``SeriesForm.of(name, labels)``, the very form while the series was seen lately: a
    series that comes back (a node's available CPU, written again when the node goes idle) has
    its labels encoded once, not at every change."""
    return _form(name, tuple(labels.items()))


def forget_forms() -> None:
    """Forget every form :func:`form_of` kept (a new agent's start: the bench's cold encode)."""
    _form.cache_clear()


def runs_of(samples: Iterable[Sample], kept: Iterable[Run] = ()) -> list[Run]:
    """``samples`` as runs: each stretch of one name a run, in order. A series seen lately
    keeps its form (:func:`form_of`: its labels are not encoded again), and a ``kept`` run of
    the very same series and values is the run itself (what seals and serves it is done)."""
    out: list[Run] = []
    kept = tuple(kept)
    turns: dict[str, list[Run]] = {}  # each name's kept runs, in turn
    for r in reversed(kept):
        turns.setdefault(r.name, []).append(r)
    for name, group in itertools.groupby(samples, key=attrgetter("name")):
        stretch = tuple(group)
        values = tuple(s.value for s in stretch)
        run = turns[name].pop() if turns.get(name) else None
        if run is not None and _same_series(run, stretch):  # most often: as it was
            out.append(run if _same_values(run.values, values) else Run.of(name, run.forms, values))
            continue
        forms = [form_of(s.name, s.labels) for s in stretch]
        out.append(Run.of(name, forms, values))
    return out


def _same_series(run: Run, samples: Sequence[Sample]) -> bool:
    """Whether ``samples`` are ``run``'s series, in its order."""
    return len(run.forms) == len(samples) and all(
        f.labels == s.labels for f, s in zip(run.forms, samples, strict=True)
    )
