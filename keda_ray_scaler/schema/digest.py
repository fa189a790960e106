"""The snapshot digest: the series a reader got are one snapshot, as its agent exported it. Pure.

Prometheus names a series' origin (``job``, ``instance``) after its scrape target, but a job that
honours its targets' labels (``honor_labels: true``: the prometheus-community chart's
``kubernetes-pods``, a Pushgateway's job) lets any target write series under the agent's origin,
beside the agent's own or over them. So the agent seals each snapshot (:func:`seal`): beside its
series it exports how many there are (:data:`~keda_ray_scaler.schema.SNAPSHOT_SERIES`), a
digest of them (:data:`~keda_ray_scaler.schema.SNAPSHOT_DIGEST`) and the list of the names and
label keys the digest covers (:mod:`~keda_ray_scaler.schema.coverage`); the scaler recomputes
count and digest over what it got (:func:`check`), names it does not know included. A series
added, missing or altered (a value another writer interleaved under the same labels) does not
match: :class:`~keda_ray_scaler.errors.UntrustedData` (``digest_mismatch``), never planned.

The digest (version 1), language-neutral. For each series the seal covers
(:mod:`~keda_ray_scaler.schema.coverage`: the series of the names its covers series list, and
those covers series; a seal listing none, an older agent's, covers
:data:`~keda_ray_scaler.schema.SNAPSHOT_NAMES`), one line: the compact ASCII JSON array
``[name, [[key, value], ...], bits]`` of its name, its labels of the keys covered (listed, or
:data:`~keda_ray_scaler.schema.LABELS`) with a non-empty value sorted by key (Prometheus drops
empty ones), and its value as the 16 lowercase hex digits of a big-endian IEEE 754 double (``-0`` as
``0``). The lines sorted, each ended by a newline; SHA-256 of that; its first 6 bytes as a
big-endian unsigned integer (below 2**48, so exact in a sample's float64). Cost: linear in the
labels' size plus a sort, once per poll on the agent and once per fetch on the scaler (after the
``--max-series`` cap): 50,000 series take about 0.2 s.

Unkeyed, it holds no secret: whoever can read the agent's series can compute the digest of a
forgery, so a target that honours labels and re-serves the agent's whole snapshot, altered, under
its labels and with its own digest, reads as one consistent snapshot. Keyed (version 2), the
digest is HMAC-SHA256 under the cluster's own key instead of SHA-256 (same lines, same 6 bytes):
the key is :func:`cluster_key` of a master key only the scaler holds, the namespace and the
cluster, so the scaler derives every cluster's key itself and an agent holds only its own. A
forger without that key cannot seal a forgery, whatever Prometheus lets it write: the scaler
refuses it (``digest_mismatch``). What a key cannot stop: a writer under the agent's labels still
makes the cluster UNAVAILABLE (two snapshots mixed), which keeps its replicas.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

from keda_ray_scaler import schema
from keda_ray_scaler.errors import Refusal, UntrustedData
from keda_ray_scaler.schema import Sample, coverage
from keda_ray_scaler.schema.coverage import Coverage

#: The series of a seal: the list of what it covers, its count and its digest.
SEAL_NAMES: Final = frozenset(
    {schema.SNAPSHOT_COVERS, schema.SNAPSHOT_SERIES, schema.SNAPSHOT_DIGEST}
)
#: The two series every seal has (an older agent's lists nothing it covers).
_COUNT_AND_DIGEST: Final = frozenset({schema.SNAPSHOT_SERIES, schema.SNAPSHOT_DIGEST})
#: Bytes of the SHA-256 kept: 48 bits, exact in a float64.
DIGEST_BYTES: Final = 6
#: What a cluster's key is derived for (version 1 of the derivation).
KEY_CONTEXT: Final = b"keda-ray-scaler snapshot seal v1"
#: Bytes of a master key at least (256 bits).
MIN_MASTER_KEY_BYTES: Final = 32


def cluster_key(master: bytes, namespace: str, cluster: str) -> bytes:
    """The seal key of Ray cluster ``namespace/cluster``: HMAC-SHA256 of the master key over
    :data:`KEY_CONTEXT`, the namespace and the cluster, each ended by a NUL byte (neither may
    hold one: both are RFC 1123 names). 32 bytes; :func:`key_text` is how the agent is given it."""
    if len(master) < MIN_MASTER_KEY_BYTES:
        raise ValueError(
            f"a master key has at least {MIN_MASTER_KEY_BYTES} bytes, got {len(master)}"
        )
    message = b"".join(part + b"\0" for part in (KEY_CONTEXT, namespace.encode(), cluster.encode()))
    return hmac.new(master, message, hashlib.sha256).digest()


def key_text(key: bytes) -> str:
    """A key as the agent's key file holds it: lowercase hex."""
    return key.hex()


def parse_key_text(text: str) -> bytes:
    """The key of a key file (hex, surrounding whitespace ignored); ``ValueError`` saying what is
    wrong otherwise (a key is never logged)."""
    stripped = text.strip()
    try:
        key = bytes.fromhex(stripped)
    except ValueError:
        raise ValueError("a key file holds the key as hex digits only") from None
    if len(key) < MIN_MASTER_KEY_BYTES:
        raise ValueError(
            f"a key has at least {MIN_MASTER_KEY_BYTES} bytes (64 hex digits), got {len(key)}"
        )
    return key


class Seal(enum.Enum):
    """What :func:`check` found."""

    #: the series carry a seal and match it
    HELD = "held"
    #: the series carry no seal (an agent older than the digest)
    ABSENT = "absent"


def line_prefix(name: str, labels: Mapping[str, str], keys: frozenset[str] = schema.LABELS) -> str:
    """A series' digest line up to its value (``["name",[[key,value],...],"``), its labels of
    the ``keys`` covered: what :func:`value_line` completes, so a writer keeps it while only the
    value changes."""
    kept = sorted((k, v) for k, v in labels.items() if k in keys and v)
    return json.dumps([name, kept, ""], ensure_ascii=True, separators=(",", ":"))[:-2]


def value_line(prefix: str, value: float) -> str:
    """The digest line of the series of ``prefix`` (:func:`line_prefix`) holding ``value``."""
    return prefix + struct.pack(">d", value + 0.0).hex() + '"]'  # + 0.0: -0.0 is 0.0


def series_line(s: Sample, keys: frozenset[str] = schema.LABELS) -> str:
    """One series' digest line (module doc), its labels of the ``keys`` covered, without its
    newline."""
    return value_line(line_prefix(s.name, s.labels, keys), s.value)


class Hasher(Protocol):
    """A SHA-256 or HMAC-SHA256 in progress (``hashlib`` and ``hmac`` objects)."""

    def update(self, data: bytes, /) -> None: ...

    def copy(self) -> Hasher: ...

    def digest(self) -> bytes: ...


def hasher(key: bytes | None = None) -> Hasher:
    """A new hash of the digest: HMAC-SHA256 under ``key`` when given, else SHA-256; fed the
    sorted lines (each ended by a newline), read by :func:`digest_value`."""
    return hashlib.sha256() if key is None else hmac.new(key, digestmod=hashlib.sha256)


def digest_value(h: Hasher) -> int:
    """The digest of what ``h`` was fed: its first :data:`DIGEST_BYTES` bytes, big-endian."""
    return int.from_bytes(h.digest()[:DIGEST_BYTES], "big")


def digest_text(text: Iterable[bytes], key: bytes | None = None) -> int:
    """The digest of the sorted lines, given as ASCII chunks of whole lines (each ended by a
    newline) in their sorted order; keyed with ``key`` (HMAC-SHA256) when given."""
    h = hasher(key)
    for chunk in text:
        h.update(chunk)
    return digest_value(h)


def digest(
    samples: Iterable[Sample], key: bytes | None = None, covered: Coverage = coverage.OWN
) -> tuple[int, int]:
    """``(series, digest)`` of the series ``covered`` in ``samples`` (any other name is left
    out; by default this agent's names and its covers series); keyed with ``key``
    (HMAC-SHA256) when given."""
    keys = covered.keys
    lines = sorted(series_line(s, keys) for s in samples if covered.counts(s.name))
    return len(lines), digest_text((f"{line}\n".encode("ascii") for line in lines), key)


def seal(
    samples: Iterable[Sample], key: bytes | None = None, covered: Coverage = coverage.OWN
) -> list[Sample]:
    """``samples`` without any earlier seal, each cluster's new seal after them: its covers
    series (listing ``covered``: this agent's names and keys by default), its count and its
    digest (keyed with ``key``, the agent's cluster key, when given).

    Never raises on samples ``encoding.encode`` made (strings and floats only), so the agent can
    re-seal a snapshot whatever broke its poll.
    """
    body = [s for s in samples if s.name not in SEAL_NAMES]
    by_cluster: dict[str, list[Sample]] = {}
    for s in body:
        if s.name in covered.names:
            by_cluster.setdefault(s.labels.get(schema.LABEL_CLUSTER, ""), []).append(s)
    for cluster, own in sorted(by_cluster.items()):
        listed = coverage.covers(cluster, covered)
        count, value = digest([*own, listed], key, covered)
        labels = {schema.LABEL_CLUSTER: cluster}
        body += [
            listed,
            Sample(schema.SNAPSHOT_SERIES, labels, float(count)),
            Sample(schema.SNAPSHOT_DIGEST, labels, float(value)),
        ]
    return body


def check(cluster: str, samples: Sequence[Sample], key: bytes | None = None) -> Seal:
    """Whether one cluster's ``samples`` match their seal (keyed with ``key``, the cluster's key,
    when the reader has one: then only a seal made with it matches).

    :attr:`Seal.HELD` when they do, :attr:`Seal.ABSENT` when they carry none; raises
    :class:`UntrustedData` (``digest_mismatch``) saying what differs: another number of series
    (one added or missing), other labels or values (one altered, or sealed without the
    cluster's key), a seal written twice, or a list of what it covers this scaler cannot take
    (:func:`coverage.read`). Series of names the list holds but this scaler does not know are
    checked as they came.
    """
    seals = {name: [s for s in samples if s.name == name] for name in _COUNT_AND_DIGEST}
    if not any(seals.values()):
        return Seal.ABSENT
    where = f"Ray cluster {cluster!r}"
    for name, found in sorted(seals.items()):
        if len(found) != 1:
            raise _mismatch(f"{where}: {len(found)} {name} series, the agent exports one")
    (counted,), (sealed,) = seals[schema.SNAPSHOT_SERIES], seals[schema.SNAPSHOT_DIGEST]
    count, value = digest(samples, key, coverage.read(cluster, samples))
    if count != counted.value:
        raise _mismatch(
            f"{where}: {count} series where the agent's seal counts {counted.value:g} "
            "(a series added or missing)"
        )
    if value != sealed.value:
        detail = "a series altered"
        if key is not None:
            detail += ", or sealed without the cluster's key: the agent's --seal-key-file"
        raise _mismatch(
            f"{where}: the series' labels or values differ from the agent's digest ({detail})"
        )
    return Seal.HELD


def require(samples: Iterable[Sample]) -> None:
    """Raise :class:`UntrustedData` (``no_digest``) naming the first cluster of ``samples`` whose
    series carry no seal."""
    clusters: set[str] = set()
    sealed: set[str] = set()
    for s in samples:
        cluster = s.labels.get(schema.LABEL_CLUSTER, "")
        (sealed if s.name == schema.SNAPSHOT_DIGEST else clusters).add(cluster)
    for cluster in sorted(clusters - sealed):
        raise UntrustedData(
            Refusal.NO_DIGEST,
            f"Ray cluster {cluster!r} carries no {schema.SNAPSHOT_DIGEST} series (an agent "
            "older than the digest?): refusing it; upgrade the agent, or accept such agents "
            "with --accept-agents-without-digest",
        )


def _mismatch(message: str) -> UntrustedData:
    return UntrustedData(
        Refusal.DIGEST_MISMATCH,
        f"{message}: refusing them; something besides the agent writes series under its "
        "origin (a scrape job with honor_labels true?)",
    )
