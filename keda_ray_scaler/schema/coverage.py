"""What a snapshot's seal covers: the series names and label keys its digest is made of. Pure.

A seal names what it covers, so a scaler checks every series an agent sealed, names it does not
know included, and an agent may add a name to the contract before the scalers know it. Beside
its seal the agent exports one :data:`~keda_ray_scaler.schema.SNAPSHOT_COVERS` series
(:func:`covers`): 1, its ``families`` label the series names it covers and its ``label_keys``
the label keys its digest lines keep, each list sorted and joined by ``,``. The digest's lines
are those of the series of the names listed, with the labels of the keys listed, and the covers
series' own, so in a keyed seal nobody without the cluster's key can add a name to the list or
drop one. One series, not one per name: a cluster's series (what ``--max-series`` bounds) grow
by one, and the list is one line of the digest, static, kept by the agent from poll to poll.

The scaler reads the list (:func:`read`): a series of a name it does not know is hashed as it
came, never decoded. A seal listing nothing (an agent older than the list) covers the names and
keys of :data:`LEGACY`, this scaler's own, as before; dropping an agent's list is no way around
it, since the agent's digest covers the list and the scaler's then does not. The list is
bounded (:data:`MAX_COVERED`), each name is one of the agent's (``ray_scaler_``, never the
seal's own), each key a Prometheus label name, and it must cover every name and key this
scaler reads (an agent keeps listing a name it stopped exporting): a known series left out of
the digest would be decoded unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from keda_ray_scaler import schema
from keda_ray_scaler.errors import Refusal, UntrustedData
from keda_ray_scaler.schema import Sample

#: The most names and keys a seal may list, together (this agent lists 31).
MAX_COVERED: Final = 256
#: Between the names, and the keys, of a list.
SEP: Final = ","
#: A series name a seal may list: the agent's (a Prometheus metric name under its prefix).
_NAME: Final = re.compile(re.escape(schema.PREFIX) + r"[a-zA-Z0-9_:]+")
#: A label key a seal may list: Prometheus's label names, but its reserved ``__`` ones.
_KEY: Final = re.compile(r"(?!__)[a-zA-Z_][a-zA-Z0-9_]*")
#: Names a seal never lists: its own (its covers series is covered when listed).
_SEAL_OWN: Final = frozenset(
    {schema.SNAPSHOT_SERIES, schema.SNAPSHOT_DIGEST, schema.SNAPSHOT_COVERS}
)


@dataclass(frozen=True, slots=True)
class Coverage:
    """The series names and label keys a digest covers, and whether its seal lists them (its
    covers series is then covered too)."""

    names: frozenset[str]
    keys: frozenset[str]
    listed: bool

    def counts(self, name: str) -> bool:
        """Whether series named ``name`` are lines of the digest."""
        return name in self.names or (self.listed and name == schema.SNAPSHOT_COVERS)


#: What a seal listing nothing covers: an older agent's snapshot (and this one's, less the list).
LEGACY: Final = Coverage(schema.SNAPSHOT_NAMES, schema.LABELS, listed=False)
#: What this agent's seal covers, listed.
OWN: Final = Coverage(schema.SNAPSHOT_NAMES, schema.LABELS, listed=True)


def covers(cluster: str, coverage: Coverage = OWN) -> Sample:
    """The covers series of ``cluster``'s seal; the same at every snapshot."""
    labels = {
        schema.LABEL_CLUSTER: cluster,
        schema.LABEL_FAMILIES: SEP.join(sorted(coverage.names)),
        schema.LABEL_KEYS: SEP.join(sorted(coverage.keys)),
    }
    return Sample(schema.SNAPSHOT_COVERS, labels, 1.0)


def listed(labels: Mapping[str, str] | None) -> Coverage:
    """The coverage a covers series' ``labels`` list (:data:`LEGACY` for ``None``: no covers
    series). Unchecked: :func:`read` checks it."""
    if labels is None:
        return LEGACY
    names, keys = (labels.get(k, "") for k in (schema.LABEL_FAMILIES, schema.LABEL_KEYS))
    return Coverage(_split(names), _split(keys), listed=True)


def _split(text: str) -> frozenset[str]:
    return frozenset(text.split(SEP)) if text else frozenset()


def read(cluster: str, samples: Sequence[Sample]) -> Coverage:
    """What the seal of one cluster's ``samples`` covers (module doc); raises
    :class:`UntrustedData` (``digest_mismatch``) on more than one covers series, a list over
    :data:`MAX_COVERED`, a name not the agent's or the seal's own, a bad key, or a list that
    leaves out a name or key read here."""
    found = [s.labels for s in samples if s.name == schema.SNAPSHOT_COVERS]
    where = f"Ray cluster {cluster!r}"
    if len(found) > 1:
        raise _refused(
            f"{where}: {len(found)} {schema.SNAPSHOT_COVERS} series, the agent exports one"
        )
    got = listed(found[0] if found else None)
    if not got.listed:
        return got
    if len(got.names) + len(got.keys) > MAX_COVERED:
        raise _refused(
            f"{where}: the seal lists {len(got.names)} names and {len(got.keys)} label keys, "
            f"at most {MAX_COVERED} together"
        )
    for name in sorted(got.names):
        if not _NAME.fullmatch(name) or name in _SEAL_OWN:
            raise _refused(f"{where}: the seal lists {name[:120]!r}, not a series of a snapshot")
    for key in sorted(got.keys):
        if not _KEY.fullmatch(key):
            raise _refused(f"{where}: the seal lists {key[:120]!r}, not a label key of a snapshot")
    left_out = sorted((schema.SNAPSHOT_NAMES - got.names) | (schema.LABELS - got.keys))
    if left_out:
        raise _refused(
            f"{where}: the seal leaves out {', '.join(left_out)}, which this scaler reads"
        )
    return got


def _refused(message: str) -> UntrustedData:
    return UntrustedData(
        Refusal.DIGEST_MISMATCH,
        f"{message}: refusing it; something besides the agent writes series under its origin "
        "(a scrape job with honor_labels true?), or the agent is not one this scaler can check",
    )
