"""Series an earlier scrape left behind, told apart from the agent's snapshot. Pure.

Prometheus marks a series stale once its target stops exporting it, and an instant query then
no longer returns it; but it can only mark the series it saw in the target's previous scrape. A
Prometheus restarted (or a scrape loop started afresh) never marks the series its target dropped
while it was away: an instant query returns them for its whole lookback (5 minutes by default),
beside the agent's current snapshot. A victim pod deleted meanwhile then adds its series to the
agent's (the seal counts fewer: ``digest_mismatch``), and an agent pod replaced under another
address leaves its whole snapshot (``two_origins``): the cluster UNAVAILABLE for minutes, safely
but for nothing. Seen on the test bed: one victim's 6 series, 259 s old and never stale-marked,
refused a cluster for 5 minutes after a Prometheus restart.

So when an answer does not add up (:func:`suspect`: a cluster's series count differs from its
seal's, counted as the scaler counts them: the names its seal lists, or
:data:`~keda_ray_scaler.schema.SNAPSHOT_NAMES` when it lists none; or more than one origin,
seal or list), the source asks for the cluster's raw samples of the last
:data:`WINDOW_S` seconds (:func:`recent_query`) and :func:`latest_scrapes` keeps, per cluster and
origin (``job``, ``instance``), only the series written since that origin's newest seal's previous
scrape. An origin is judged by its own seal only: a forger scraped more often than the agent
(another origin) must never make the agent's series look old (a first version judged a cluster by
its newest seal of any origin, and a forger scraped every 0.5 s evicted the agent's series scraped
every 1 s: its forgery won, caught by ``test_source_honoured``). What a target wrote in its latest
two scrapes stays, so a writer that keeps writing under the agent's labels (what the seal is for)
is still refused; only what nobody wrote for a whole scrape interval goes (unkeyed, a writer under
the agent's own origin can win anyway, as ``test_source_honoured`` shows; keyed, what stays must
still match the cluster's key). An old origin (an agent pod replaced under a new address) leaves
the answer when its samples leave the window: the cluster is refused (``two_origins``) for
:data:`WINDOW_S` at most, not the lookback. Every series dropped is counted; the rest is checked
against the seal as usual.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from keda_ray_scaler import schema
from keda_ray_scaler.schema import coverage
from keda_ray_scaler.sources.promql import origin

#: How far back the raw samples are read: two scrapes of an agent scraped up to every 60 s.
WINDOW_S: Final = 120


def recent_query(instant_query: str, window_s: int = WINDOW_S) -> str:
    """The raw samples of ``instant_query``'s selector over the last ``window_s`` seconds (a
    range vector: every sample with its own scrape time)."""
    return f"{instant_query}[{window_s}s]"


def suspect(result: object) -> bool:
    """Whether an instant answer may hold leftovers: for some cluster, its series of the
    snapshot differ in number from what its seal counts, or it has more than one seal or origin.
    ``False`` for an answer that cannot be read: the usual path refuses it."""
    if not isinstance(result, list):
        return False
    counted: dict[str, list[float]] = {}
    series: dict[str, Counter[str]] = {}  # by cluster, how many series of each name
    listed: dict[str, Mapping[str, str]] = {}  # by cluster, its covers series' labels
    origins: dict[str, set[str]] = {}
    for entry in result:
        fields = _metric_value(entry, "value")
        if fields is None:
            return False
        metric, (_, value) = fields
        cluster, name = metric.get(schema.LABEL_CLUSTER, ""), metric.get("__name__", "")
        origins.setdefault(cluster, set()).add(origin(metric))
        if name == schema.SNAPSHOT_SERIES:
            counted.setdefault(cluster, []).append(_number(value))
        if name == schema.SNAPSHOT_COVERS and all(isinstance(v, str) for v in metric.values()):
            listed[cluster] = metric
        series.setdefault(cluster, Counter())[name] += 1
    for cluster, seen in origins.items():
        sealed = counted.get(cluster, [])
        if len(seen) > 1 or len(sealed) > 1 or series[cluster][schema.SNAPSHOT_COVERS] > 1:
            return True
        if sealed and sealed[0] != _covered(series[cluster], listed.get(cluster)):
            return True
    return False


def _covered(series: Counter[str], listed: Mapping[str, str] | None) -> int:
    """How many of a cluster's series its seal covers, by the scaler's own rule
    (:func:`~keda_ray_scaler.schema.coverage.listed`): those of the names its covers series
    lists and that series, or of :data:`~keda_ray_scaler.schema.SNAPSHOT_NAMES` without one."""
    covered = coverage.listed(listed)
    return sum(n for name, n in series.items() if covered.counts(name))


def latest_scrapes(result: object) -> tuple[list[dict[str, Any]], int]:
    """A range answer (:func:`recent_query`) as an instant one of the series each origin's
    newest seal vouches for, and how many series were dropped.

    Per cluster and origin, the seal series (:data:`~keda_ray_scaler.schema.SNAPSHOT_DIGEST`)
    whose last sample is newest gives the time of its previous scrape; a series of that cluster
    and origin whose last sample is older than it was written by no scrape since, and is
    dropped. An origin whose seal has fewer than two samples in the window keeps everything.
    Each kept series as ``{"metric": ..., "value": [time, value]}`` of its last sample. An answer
    that cannot be read comes back unchanged (``[]`` for a non-list), with nothing dropped.
    """
    if not isinstance(result, list):
        return [], 0
    last: list[tuple[Mapping[str, str], Sequence[Any]]] = []
    since: dict[tuple[str, str], tuple[float, float]] = {}  # (newest seal sample, its previous)
    for entry in result:
        fields = _metric_value(entry, "values")
        if fields is None or not fields[1] or not all(_timed(v) for v in fields[1]):
            return list(result), 0
        metric, values = fields
        last.append((metric, values[-1]))
        if metric.get("__name__") == schema.SNAPSHOT_DIGEST and len(values) > 1:
            times = (_number(values[-1][0]), _number(values[-2][0]))
            since[_whose(metric)] = max(since.get(_whose(metric), times), times)
    kept = [
        {"metric": dict(metric), "value": list(sample)}
        for metric, sample in last
        if _number(sample[0]) >= since.get(_whose(metric), (0.0, 0.0))[1]
    ]
    return kept, len(last) - len(kept)


def _whose(metric: Mapping[str, str]) -> tuple[str, str]:
    """A series' cluster and origin (:func:`~keda_ray_scaler.sources.promql.origin`): what one
    seal vouches for."""
    return metric.get(schema.LABEL_CLUSTER, ""), origin(metric)


def _metric_value(entry: object, key: str) -> tuple[Mapping[str, str], Any] | None:
    """An entry's label set and its ``key`` field (a pair, or a list of pairs), or ``None``."""
    if not isinstance(entry, dict):
        return None
    metric, value = entry.get("metric"), entry.get(key)
    if not isinstance(metric, dict) or not isinstance(value, list):
        return None
    if key == "value" and not _pair(value):
        return None
    return metric, value


def _pair(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2


def _timed(value: object) -> bool:
    """Whether ``value`` is a ``[time, value]`` pair with a finite time."""
    return _pair(value) and math.isfinite(_number(value[0]))  # type: ignore[index]


def _number(text: object) -> float:
    """A sample's time or value as Prometheus writes it (a JSON number or a string); NaN when
    it is neither (never equal, never newest)."""
    try:
        return float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")
