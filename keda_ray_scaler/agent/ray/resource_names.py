"""Ray resource names the export cannot carry whole: counted, and logged once each.

A resource name is whatever a Ray task asks for. :func:`keda_ray_scaler.schema.encode_name`
percent-encodes every name, so ``,`` ``;`` ``=``, newlines and unicode reach the scaler without
loss; only an empty name, or one longer than :data:`~keda_ray_scaler.schema.MAX_NAME_CHARS`
once encoded, is exported as its bounded :func:`~keda_ray_scaler.schema.stand_in` (the same for
the same name everywhere, so its demand is still matched to whatever offers it, and is
unplaceable when nothing does). :class:`StandInLog` makes that visible: a counter of distinct
names replaced and one warning per name, with memory bounded by ``remember``.
"""

from __future__ import annotations

from typing import Final

import structlog
from prometheus_client import CollectorRegistry, Counter

from keda_ray_scaler import schema
from keda_ray_scaler.agent.metric_names import NAMES_STOOD_IN
from keda_ray_scaler.agent.ray.refusal_log import LoggedOnce
from keda_ray_scaler.model import PlanningInput, Resources

#: Distinct names remembered (by stand-in, at most 217 characters each) so each is logged once.
DEFAULT_REMEMBER: Final = 4096
#: Characters of a name written to the log line (the whole name may be megabytes).
LOGGED_CHARS: Final = 120

log = structlog.get_logger(__name__)


def resource_names(inp: PlanningInput) -> set[str]:
    """Every resource name the export of ``inp`` carries: groups, demand and nodes."""
    vectors: list[Resources] = [g.resources for g in inp.cluster.worker_groups]
    vectors += [b.resources for b in (*inp.demand.bundles, *inp.demand.constraints)]
    vectors += [r for pg in inp.demand.placement_groups for r in pg.bundles]
    vectors += [r for n in inp.nodes for r in (n.total, n.available)]
    return {name for r in vectors for name, _ in r}


def stood_in(inp: PlanningInput) -> list[str]:
    """The names of ``inp`` exported as a stand-in, sorted."""
    return sorted(n for n in resource_names(inp) if not schema.exported_whole(n))


class StandInLog:
    """Counts and logs each resource name exported as a stand-in, once.

    Remembers at most ``remember`` names; when full it forgets them all, so a name may then be
    counted and logged again (once per ``remember`` distinct names: bounded memory and logs).
    """

    def __init__(
        self, registry: CollectorRegistry, cluster: str, remember: int = DEFAULT_REMEMBER
    ) -> None:
        self._counter = Counter(
            NAMES_STOOD_IN.removesuffix("_total"),
            "Distinct Ray resource names exported as a bounded stand-in (empty, or longer than "
            f"{schema.MAX_NAME_CHARS} characters once percent-encoded); each is logged once.",
            [schema.LABEL_CLUSTER],
            registry=registry,
        ).labels(cluster)
        self._logged = LoggedOnce(remember)
        self._log = log.bind(cluster=cluster)

    def observe(self, inp: PlanningInput) -> int:
        """Count and log the names of ``inp`` not seen before; returns how many."""
        new = 0
        for name in stood_in(inp):
            key = schema.stand_in(name)
            if not self._logged.first(key):
                continue
            new += 1
            self._log.warning(
                "resource name exported as a stand-in",
                name=name[:LOGGED_CHARS],
                name_chars=len(name),
                exported_as=key,
                max_chars=schema.MAX_NAME_CHARS,
            )
        if new:
            self._counter.inc(new)
        return new
