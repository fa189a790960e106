"""A seal that names what it covers: a later agent's names are checked, an older agent's seal
still holds, and the list itself is under the digest."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct

import pytest
from full_snapshot import full_snapshot

from keda_ray_scaler import schema
from keda_ray_scaler.errors import Refusal, UntrustedData
from keda_ray_scaler.schema import Sample, coverage, decoding, digest, encoding
from keda_ray_scaler.schema.coverage import Coverage
from keda_ray_scaler.schema.digest import Seal

#: A series name and a label key a later agent adds to the contract (this scaler knows neither).
NEW_NAME = schema.PREFIX + "node_future_seconds"
NEW_KEY = "zone"
#: What that later agent's seal covers.
LATER = Coverage(schema.SNAPSHOT_NAMES | {NEW_NAME}, schema.LABELS | {NEW_KEY}, listed=True)
KEY = digest.cluster_key(bytes(range(32)), "ray", "c")


def later_body() -> list[Sample]:
    """A later agent's snapshot: this one's, one series of a new name, a new label on a node."""
    body = [
        Sample(s.name, {**s.labels, NEW_KEY: "eu-1"}, s.value) if s.name == schema.NODE_INFO else s
        for s in encoding.encode(full_snapshot())
    ]
    return [*body, Sample(NEW_NAME, {"cluster": "c", "pod": "p-1"}, 7.0)]


def refused(samples: list[Sample], key: bytes | None = None) -> str:
    """The message of the digest_mismatch refusal ``samples`` get."""
    with pytest.raises(UntrustedData) as info:
        digest.check("c", samples, key)
    assert info.value.reason is Refusal.DIGEST_MISMATCH
    return str(info.value)


def covers_of(samples: list[Sample]) -> Sample:
    """The one covers series of ``samples``."""
    (found,) = [s for s in samples if s.name == schema.SNAPSHOT_COVERS]
    return found


def with_covers(samples: list[Sample], **labels: str) -> list[Sample]:
    """``samples`` with their covers series' labels changed (nothing resealed)."""
    return [
        Sample(s.name, {**s.labels, **labels}, s.value) if s.name == schema.SNAPSHOT_COVERS else s
        for s in samples
    ]


@pytest.mark.parametrize("key", [None, KEY], ids=["unkeyed", "keyed"])
def test_a_later_agents_new_name_and_label_are_checked_and_the_snapshot_decodes(
    key: bytes | None,
) -> None:
    """Its seal lists a name and a key this scaler does not know: held, and what it knows
    decodes as before (the new series is hashed as it came, never decoded)."""
    samples = digest.seal(later_body(), key, LATER)
    assert NEW_NAME in covers_of(samples).labels["families"].split(",")
    assert digest.check("c", samples, key) is Seal.HELD
    assert decoding.decode_cluster("c", samples, key) == full_snapshot()


@pytest.mark.parametrize("key", [None, KEY], ids=["unkeyed", "keyed"])
def test_a_later_agents_unknown_series_altered_or_dropped_is_refused(key: bytes | None) -> None:
    """Its value, its labels, or the new label of a known series altered: the digest differs;
    the unknown series dropped: the count differs."""
    samples = digest.seal(later_body(), key, LATER)

    def altered(name: str, **labels: str) -> list[Sample]:
        return [
            Sample(s.name, {**s.labels, **labels}, s.value + (0 if labels else 1))
            if s.name == name
            else s
            for s in samples
        ]

    assert "labels or values differ" in refused(altered(NEW_NAME), key)
    assert "labels or values differ" in refused(altered(NEW_NAME, pod="p-2"), key)
    assert "labels or values differ" in refused(altered(schema.NODE_INFO, zone="us-1"), key)
    dropped = [s for s in samples if s.name != NEW_NAME]
    assert "added or missing" in refused(dropped, key)


@pytest.mark.parametrize("covered", [coverage.OWN, LATER], ids=["this agent", "a later agent"])
def test_the_covers_series_dropped_or_a_covered_series_dropped_is_refused(
    covered: Coverage,
) -> None:
    """Without its list the seal reads as an older agent's, whose digest never covered a list:
    refused; so is any covered series gone."""
    body = later_body() if covered is LATER else encoding.encode(full_snapshot())
    samples = digest.seal(body, None, covered)
    assert "added or missing" in refused([s for s in samples if s.name != schema.SNAPSHOT_COVERS])
    gone = next(i for i, s in enumerate(samples) if s.name == schema.DEMAND_BUNDLES)
    assert "added or missing" in refused(samples[:gone] + samples[gone + 1 :])


def old_seal(body: list[Sample]) -> list[Sample]:
    """``body`` sealed as an agent older than the list did (3242bb0's digest.py, from its text):
    the lines of the snapshot's series only, no covers series."""
    lines = []
    for s in body:
        labels = [[k, v] for k, v in sorted(s.labels.items()) if v and k in schema.LABELS]
        bits = struct.pack(">d", s.value).hex()
        lines.append(json.dumps([s.name, labels, bits], separators=(",", ":")))
    text = "".join(line + "\n" for line in sorted(lines)).encode()
    value = int.from_bytes(hashlib.sha256(text).digest()[:6], "big")
    return [
        *body,
        Sample(schema.SNAPSHOT_SERIES, {"cluster": "c"}, float(len(lines))),
        Sample(schema.SNAPSHOT_DIGEST, {"cluster": "c"}, float(value)),
    ]


def test_an_older_agents_seal_without_a_list_still_holds() -> None:
    """No covers series: the digest is over this scaler's names, as before; a series altered
    is still refused."""
    samples = old_seal(encoding.encode(full_snapshot()))
    assert digest.check("c", samples) is Seal.HELD
    assert decoding.decode(samples) == {"c": full_snapshot()}
    altered = [
        Sample(s.name, s.labels, s.value + 1) if s.name == schema.DEMAND_BUNDLES else s
        for s in samples
    ]
    assert "labels or values differ" in refused(altered)


def test_a_list_forged_without_the_key_is_refused() -> None:
    """Keyed: the new name dropped from the list with its series, a name added, a key dropped,
    the list resealed without the key or under another cluster's: refused."""
    samples = digest.seal(later_body(), KEY, LATER)
    families = covers_of(samples).labels["families"]
    fewer = ",".join(n for n in families.split(",") if n != NEW_NAME)
    count = len([s for s in samples if s.name != NEW_NAME and LATER.counts(s.name)])
    without = [  # the count rewritten too: a forger under the agent's labels can
        Sample(s.name, s.labels, float(count)) if s.name == schema.SNAPSHOT_SERIES else s
        for s in samples
        if s.name != NEW_NAME
    ]
    assert "labels or values differ" in refused(with_covers(without, families=fewer), KEY)
    more = f"{families},{schema.PREFIX}zzz"
    assert "labels or values differ" in refused(with_covers(samples, families=more), KEY)
    keys = ",".join(k for k in covers_of(samples).labels["label_keys"].split(",") if k != NEW_KEY)
    assert "labels or values differ" in refused(with_covers(samples, label_keys=keys), KEY)
    body = [s for s in later_body() if s.name != NEW_NAME]
    for other in (None, digest.cluster_key(bytes(range(32)), "ray", "d")):
        assert "--seal-key-file" in refused(digest.seal(body, other), KEY)


def test_a_list_over_the_bound_is_refused() -> None:
    """More than MAX_COVERED names and keys together: refused; at the bound: held."""
    many = sorted(f"{schema.PREFIX}extra_{i:03d}" for i in range(coverage.MAX_COVERED))
    over = dataclasses.replace(LATER, names=LATER.names | frozenset(many))
    message = refused(digest.seal(later_body(), None, over))
    assert f"at most {coverage.MAX_COVERED} together" in message
    room = coverage.MAX_COVERED - len(LATER.names) - len(LATER.keys)
    fits = dataclasses.replace(LATER, names=LATER.names | frozenset(many[:room]))
    assert digest.check("c", digest.seal(later_body(), None, fits)) is Seal.HELD


@pytest.mark.parametrize(
    ("labels", "says"),
    [
        ({"families": "up"}, "'up', not a series of a snapshot"),
        ({"families": "process_cpu_seconds_total"}, "not a series of a snapshot"),
        ({"families": schema.SNAPSHOT_DIGEST}, "not a series of a snapshot"),
        ({"families": schema.SNAPSHOT_COVERS}, "not a series of a snapshot"),
        ({"families": f'{schema.PREFIX}x{{job="a"}}'}, "not a series of a snapshot"),
        ({"label_keys": "__name__"}, "'__name__', not a label key"),
        ({"label_keys": "a-b"}, "not a label key"),
    ],
)
def test_a_list_naming_what_is_no_snapshots_is_refused(labels: dict[str, str], says: str) -> None:
    """A listed name outside the agent's prefix (no series of another job smuggled in), the
    seal's own, or a key no label can have: refused, whatever else the list holds."""
    samples = digest.seal(later_body(), None, LATER)
    listed = covers_of(samples).labels
    merged = {k: f"{listed[k]},{v}" for k, v in labels.items()}
    assert says in refused(with_covers(samples, **merged))


def test_a_list_leaving_out_a_name_this_scaler_reads_is_refused() -> None:
    """A seal that does not cover node_info (its series would be decoded unchecked): refused,
    naming it, though the digest over what it lists holds."""
    less = dataclasses.replace(coverage.OWN, names=coverage.OWN.names - {schema.NODE_INFO})
    samples = digest.seal(encoding.encode(full_snapshot()), None, less)
    assert f"leaves out {schema.NODE_INFO}, which this scaler reads" in refused(samples)


def test_two_lists_are_refused() -> None:
    """A second covers series (a forger's, under other labels): refused."""
    samples = digest.seal(later_body(), None, LATER)
    second = Sample(schema.SNAPSHOT_COVERS, {**covers_of(samples).labels, "x": "1"}, 1.0)
    assert "2 ray_scaler_snapshot_covers series" in refused([*samples, second])
