"""A snapshot sealed and ready to serve, sealed and written again only where it changed.

:class:`SnapshotWriter` turns each published snapshot into a :class:`SealedBody`: its runs
(:class:`~keda_ray_scaler.agent.http.series_memo.SeriesMemo`) grouped by family, each family's
digest lines sorted and its exposition text joined. A family whose runs are the very runs of the
snapshot before keeps both; the digest is then one SHA-256 (or HMAC) pass over the families'
sorted lines in name order. That is :func:`~keda_ray_scaler.schema.digest.digest` exactly:
the series' lines sorted are the families' sorted lines in the order of their names (every line
starts with ``["<name>",``, and ``"`` sorts before any character of a name). The seal closes the
body, as :func:`~keda_ray_scaler.schema.digest.seal` puts it: its covers series
(:func:`~keda_ray_scaler.schema.coverage.covers`, covered too; the same at every snapshot of a
cluster, so made once, and fed to the digest again only when a family before it in name order
changed), then its count and digest.

A body is immutable; its samples (for ``prometheus_client``'s own rendering) are made on
demand, its text in a format (:class:`~keda_ray_scaler.agent.http.exposition.Format`) on first
use, then kept with it (two threads making it at once make the same).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http import gzip_body
from keda_ray_scaler.agent.http.exposition import Format, family_header
from keda_ray_scaler.agent.http.series_memo import SeriesMemo
from keda_ray_scaler.agent.http.series_runs import Run, runs_of
from keda_ray_scaler.schema import ClusterSnapshot, Sample, coverage, digest


@dataclass(frozen=True, slots=True, eq=False)
class Family:
    """One family's runs, their digest lines sorted (each ended by a newline, ASCII) and how
    many, and their exposition lines in order."""

    name: str
    runs: tuple[Run, ...]
    digest: bytes
    count: int
    text: str
    #: the family as served, by format, plain and deflated (made on first use, kept with it)
    _served: dict[tuple[str, bool], bytes] = field(default_factory=dict, repr=False)

    def served(self, form: Format, deflate: bool = False) -> bytes:
        """The family in ``form`` (its header as the format's encoder writes it, then its
        lines), or that as a part of a deflate stream (:func:`gzip_body.deflated`: a family
        kept is never compressed again)."""
        key = (form.content_type, deflate)
        done = self._served.get(key)
        if done is None:
            if deflate:
                done = gzip_body.deflated(self.served(form))
            else:
                done = (family_header(form, self.name) + self.text).encode("utf-8")
            self._served[key] = done
        return done

    @classmethod
    def of(cls, name: str, runs: Iterable[Run], kept: Family | None = None) -> Family:
        """The family ``name`` of ``runs``: ``kept`` when it holds the very same runs."""
        runs = tuple(runs)
        if kept is not None and kept.runs == runs:  # runs compare by identity
            return kept
        lines = sorted(itertools.chain.from_iterable(r.digest for r in runs))
        sealed = "".join(f"{line}\n" for line in lines).encode("ascii")
        return cls(name, runs, sealed, len(lines), "".join(r.text for r in runs))


class SealedBody:
    """One sealed snapshot as served: its families in order, the seal's last."""

    __slots__ = ("_parts", "_texts", "families")

    def __init__(self, families: Iterable[Family]) -> None:
        self.families = tuple(families)
        self._texts: dict[tuple[str, bool], bytes] = {}
        self._parts: dict[str, gzip_body.Parts] = {}

    @classmethod
    def of_samples(cls, samples: Iterable[Sample]) -> SealedBody:
        """A body of sealed ``samples`` as they are (nothing kept: the slow, simple way)."""
        by_name: dict[str, list[Run]] = {}
        for r in runs_of(samples):
            by_name.setdefault(r.name, []).append(r)
        return cls(Family.of(name, runs) for name, runs in by_name.items())

    def samples(self) -> list[Sample]:
        """Every sample, family by family (each family's in ``seal(encode(snapshot))``'s
        order)."""
        return [s for f in self.families for r in f.runs for s in r.samples]

    def text(self, form: Format) -> bytes:
        """The body in ``form``: each family's header as its encoder writes it, then its lines
        (no end: the rest of the registry's body ends it)."""
        key = (form.content_type, False)
        done = self._texts.get(key)
        if done is None:
            done = self._texts[key] = b"".join(f.served(form) for f in self.families)
        return done

    def parts(self, form: Format) -> gzip_body.Parts:
        """The body in ``form`` as parts of a gzip body (:func:`gzip_body.gzip_body` ends it)."""
        done = self._parts.get(form.content_type)
        if done is None:
            pairs = ((f.served(form), f.served(form, deflate=True)) for f in self.families)
            done = self._parts[form.content_type] = gzip_body.Parts.of(pairs)
        return done


class DigestMemo:
    """The digest of the covered families in name order (:func:`digest.digest_text` of their
    lines), fed again only from the first family that is not the one fed before: the hash's
    state after each family is kept (an unchanged snapshot's first change, its timestamp, sorts
    near the end)."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key
        self._fed: list[tuple[Family, digest.Hasher]] = []

    def value(self, covered: Sequence[Family]) -> int:
        """The digest of ``covered``'s lines, in that order."""
        same = 0
        for family, (before, _) in zip(covered, self._fed, strict=False):
            if family is not before:
                break
            same += 1
        fed = self._fed[:same]
        h = fed[-1][1].copy() if fed else digest.hasher(self._key)
        for f in covered[same:]:
            h.update(f.digest)
            fed.append((f, h.copy()))
        self._fed = fed
        return digest.digest_value(h)


def covers_family(cluster: str) -> Family:
    """The family of ``cluster``'s covers series (:func:`coverage.covers`)."""
    return Family.of(schema.SNAPSHOT_COVERS, runs_of([coverage.covers(cluster)]))


def sealed(
    cluster: str,
    families: Sequence[Family],
    value: Callable[[Sequence[Family]], int],
    covers: Family | None = None,
) -> SealedBody:
    """``families`` (one cluster's snapshot) with their seal, its digest ``value`` of the covered
    families in name order: ``digest.seal`` of their samples. ``covers``: the cluster's
    :func:`covers_family`, kept by the caller (made here when not given)."""
    listed = covers_family(cluster) if covers is None else covers
    own = (f for f in families if coverage.OWN.counts(f.name))
    covered = sorted((*own, listed), key=_name)
    labels = {schema.LABEL_CLUSTER: cluster}
    seal = (
        Sample(schema.SNAPSHOT_SERIES, labels, float(sum(f.count for f in covered))),
        Sample(schema.SNAPSHOT_DIGEST, labels, float(value(covered))),
    )
    return SealedBody((*families, listed, *(Family.of(r.name, (r,)) for r in runs_of(seal))))


def _name(family: Family) -> str:
    return family.name


class SnapshotWriter:
    """Seals and writes each snapshot, again only where it changed (module doc); keyed with
    ``key`` (the cluster's seal key) when given."""

    def __init__(self, key: bytes | None = None) -> None:
        self._digest = DigestMemo(key)
        self._series = SeriesMemo()
        self._families: dict[str, Family] = {}
        self._covers: tuple[str, Family] | None = None  # the cluster's covers family

    def write(self, snapshot: ClusterSnapshot) -> SealedBody:
        """``snapshot`` sealed and ready to serve."""
        cluster = snapshot.input.cluster.name
        parts = self._series.families(snapshot)
        families = [Family.of(name, runs, self._families.get(name)) for name, runs in parts.items()]
        self._families = {f.name: f for f in families}
        if self._covers is None or self._covers[0] != cluster:
            self._covers = (cluster, covers_family(cluster))
        return sealed(cluster, families, self._digest.value, self._covers[1])
