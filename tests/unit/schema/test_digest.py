"""The snapshot seal: the agent's series count and digest, and the scaler's check of them."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable

import pytest
from full_snapshot import full_snapshot
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from keda_ray_scaler import schema
from keda_ray_scaler.agent.http.exporter import SnapshotCollector
from keda_ray_scaler.errors import Refusal, UntrustedData
from keda_ray_scaler.schema import Sample, decoding, digest, encoding
from keda_ray_scaler.schema.digest import Seal

#: What Prometheus adds to every series of the agent's (never part of the digest).
SCRAPE_LABELS = {"job": "ray-scaler-agents", "instance": "10.0.0.1:9400", "namespace": "ray"}


def sealed() -> list[Sample]:
    """Every kind of series the agent exports, sealed."""
    return digest.seal(encoding.encode(full_snapshot()))


def seal_of(samples: list[Sample]) -> tuple[float, float]:
    """The ``(series, digest)`` values the samples carry."""
    (count,) = [s.value for s in samples if s.name == schema.SNAPSHOT_SERIES]
    (value,) = [s.value for s in samples if s.name == schema.SNAPSHOT_DIGEST]
    return count, value


def mismatch(samples: list[Sample]) -> str:
    """The message of the digest_mismatch refusal ``samples`` get."""
    with pytest.raises(UntrustedData) as info:
        digest.check("c", samples)
    assert info.value.reason is Refusal.DIGEST_MISMATCH
    return str(info.value)


def test_a_sealed_snapshot_decodes_to_itself_and_holds() -> None:
    """seal adds one covers series, one series count and one digest per cluster; decode checks
    and drops them."""
    samples = sealed()
    body = encoding.encode(full_snapshot())
    assert samples[: len(body)] == body
    assert [s.name for s in samples[len(body) :]] == [
        schema.SNAPSHOT_COVERS,
        schema.SNAPSHOT_SERIES,
        schema.SNAPSHOT_DIGEST,
    ]
    assert seal_of(samples)[0] == len(body) + 1  # the covers series is covered too
    assert digest.check("c", samples) is Seal.HELD
    assert decoding.decode(samples) == {"c": full_snapshot()}


def test_the_digest_is_the_documented_one() -> None:
    """An implementation written from schema/digest.py's text (JSON lines of name, non-empty
    schema labels sorted, the value's IEEE 754 bits; sorted; SHA-256; 48 bits) and
    schema/coverage.py's (one covers series: the names and keys covered, sorted, joined by
    ``,``; covered too) agrees."""
    covers = Sample(
        schema.SNAPSHOT_COVERS,
        {
            "cluster": "c",
            "families": ",".join(sorted(schema.SNAPSHOT_NAMES)),
            "label_keys": ",".join(sorted(schema.LABELS)),
        },
        1.0,
    )
    lines = []
    for s in [*encoding.encode(full_snapshot()), covers]:
        labels = [[k, v] for k, v in sorted(s.labels.items()) if v]
        bits = struct.pack(">d", s.value).hex()
        lines.append(json.dumps([s.name, labels, bits], separators=(",", ":")))
    text = "".join(line + "\n" for line in sorted(lines))
    expected = int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "big")
    assert seal_of(sealed()) == (len(lines), float(expected))
    assert 0 < expected < 2**48  # exact in a float64 sample


def test_what_prometheus_adds_or_drops_leaves_the_seal_intact() -> None:
    """job, instance, namespace added to every series, empty labels dropped (as Prometheus
    stores them), -0.0 for 0.0, the agent's own non-snapshot series beside: still held."""
    scraped = [
        Sample(
            s.name,
            {**{k: v for k, v in s.labels.items() if v}, **SCRAPE_LABELS},
            -0.0 if s.value == 0.0 else s.value,
        )
        for s in sealed()
    ]
    scraped.append(Sample(schema.NODES_UNMAPPED, {"cluster": "c", **SCRAPE_LABELS}, 3.0))
    assert digest.check("c", scraped) is Seal.HELD


def test_the_collectors_scrape_text_holds_its_seal() -> None:
    """Through the /metrics text format (values printed Go-style, labels escaped) the seal
    still holds, and a failed poll's re-sealed data too."""
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry)
    collector.publish(full_snapshot())

    def scrape() -> list[Sample]:
        text = generate_latest(registry).decode()
        families = text_string_to_metric_families(text)
        return [Sample(s.name, s.labels, s.value) for f in families for s in f.samples]

    assert digest.check("c", scrape()) is Seal.HELD
    before = seal_of(scrape())
    collector.mark_failed()
    assert digest.check("c", scrape()) is Seal.HELD
    assert seal_of(scrape())[0] == before[0] and seal_of(scrape())[1] != before[1]


def test_a_series_added_is_refused() -> None:
    """One more demand series (the reported attack: CPU=1 x 1,000): refused, never decoded."""
    forged = Sample(
        schema.DEMAND_BUNDLES,
        {"cluster": "c", "kind": "task", "shape": "CPU=1", "strategy": ""},
        1000.0,
    )
    text = mismatch([*sealed(), forged])
    assert "series where the agent's seal counts" in text and "added or missing" in text
    with pytest.raises(UntrustedData):
        decoding.decode([*sealed(), forged])


def test_a_series_missing_is_refused() -> None:
    """A series of the snapshot gone (or hidden): the count differs."""
    samples = [s for s in sealed() if s.name != schema.NODE_IDLE_SINCE]
    assert "added or missing" in mismatch(samples)


@pytest.mark.parametrize(
    "alter",
    [
        pytest.param(lambda s: Sample(s.name, s.labels, 1000.0), id="value"),
        pytest.param(lambda s: Sample(s.name, {**s.labels, "shape": "CPU=1"}, s.value), id="label"),
        pytest.param(lambda s: Sample(schema.CLUSTER_MAX_WORKERS, s.labels, s.value), id="name"),
    ],
)
def test_a_series_altered_is_refused(alter: Callable[[Sample], Sample]) -> None:
    """The same number of series, one with another value, label or name (another writer's
    sample under the agent's labels): the digest differs."""
    samples = sealed()
    i = next(i for i, s in enumerate(samples) if s.name == schema.DEMAND_BUNDLES)
    samples[i] = alter(samples[i])
    assert "labels or values differ" in mismatch(samples)


def test_a_copy_differing_only_outside_the_schema_is_one_series_too_many() -> None:
    """A forger's exact copy of a series with one label of its own (``pod`` of its job) is a
    second series with the same digest line: counted, refused."""
    samples = sealed()
    demand = next(s for s in samples if s.name == schema.DEMAND_BUNDLES)
    copy = Sample(demand.name, {**demand.labels, "head_pod": "evil"}, demand.value)
    assert "added or missing" in mismatch([*samples, copy])


def test_a_second_seal_is_refused() -> None:
    """Two digests (the agent's and a forger's, under other labels): refused, whichever holds."""
    samples = sealed()
    forged_seal = [Sample(s.name, {**s.labels, "x": "1"}, s.value) for s in samples[-2:]]
    assert "2 ray_scaler_snapshot_digest series" in mismatch([*samples, *forged_seal])
    assert "0 ray_scaler_snapshot_digest series" in mismatch(samples[:-1])  # half a seal


def test_series_without_a_seal_are_absent_for_decode_and_refused_when_required() -> None:
    """An agent older than the seal: decode plans on it (the source decides); require refuses
    it (no_digest) naming the cluster."""
    body = encoding.encode(full_snapshot())
    assert digest.check("c", body) is Seal.ABSENT
    assert decoding.decode(body) == {"c": full_snapshot()}
    digest.require(sealed())
    with pytest.raises(UntrustedData) as info:
        digest.require(body)
    assert info.value.reason is Refusal.NO_DIGEST and "'c'" in str(info.value)


def test_resealing_replaces_the_old_seal() -> None:
    """seal(seal(x)) == seal(x): the agent re-seals after changing a value."""
    assert digest.seal(sealed()) == sealed()


# --- keyed seals ---------------------------------------------------------------------------------

MASTER = bytes(range(32))


def test_a_keyed_seal_holds_only_under_its_clusters_key() -> None:
    """Sealed with team-a/c's key (HMAC-SHA256 of the lines): the same key holds it; no key,
    another cluster's key, another namespace's or another master's does not, and says to check
    the agent's --seal-key-file."""
    key = digest.cluster_key(MASTER, "team-a", "c")
    samples = [Sample(s.name, {**s.labels, "cluster": "c"}, s.value) for s in sealed()]
    keyed = digest.seal(samples, key)
    assert digest.check("c", keyed, key) is Seal.HELD
    for other in (
        digest.cluster_key(MASTER, "team-a", "d"),
        digest.cluster_key(MASTER, "team-b", "c"),
        digest.cluster_key(bytes(32), "team-a", "c"),
    ):
        assert other != key
        with pytest.raises(UntrustedData, match="--seal-key-file") as info:
            digest.check("c", keyed, other)
        assert info.value.reason is Refusal.DIGEST_MISMATCH
    with pytest.raises(UntrustedData):
        digest.check("c", keyed)  # an unkeyed reader: the keyed digest is no SHA-256
    # an unkeyed forgery (a valid SHA-256 digest) does not hold for a keyed reader
    with pytest.raises(UntrustedData, match="--seal-key-file"):
        digest.check("c", digest.seal(samples), key)


def test_the_key_derivation_is_hmac_sha256_of_context_namespace_and_cluster() -> None:
    """Language-neutral: HMAC-SHA256(master, context NUL namespace NUL cluster NUL), so another
    implementation (the controller, a script) derives the same key; hex in a key file."""
    import hmac

    want = hmac.new(MASTER, digest.KEY_CONTEXT + b"\0ns\0c\0", hashlib.sha256).digest()
    key = digest.cluster_key(MASTER, "ns", "c")
    assert key == want and len(key) == 32
    assert digest.parse_key_text(" " + digest.key_text(key) + "\n") == key
    # "ns-a"/"b" and "ns"/"a-b" never share a key: each part is ended
    assert digest.cluster_key(MASTER, "ns-a", "b") != digest.cluster_key(MASTER, "ns", "a-b")


@pytest.mark.parametrize(
    ("text", "says"),
    [("zz" * 32, "hex digits only"), ("ab" * 16, "at least 32 bytes"), ("", "at least 32 bytes")],
)
def test_a_bad_key_file_says_what_is_wrong(text: str, says: str) -> None:
    """Not hex, or shorter than 256 bits: ValueError saying which, never echoing the text."""
    with pytest.raises(ValueError, match=says) as info:
        digest.parse_key_text(text)
    assert text not in str(info.value) or not text


def test_a_short_master_key_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        digest.cluster_key(bytes(16), "ns", "c")


def test_the_exporter_seals_with_the_agents_key() -> None:
    """SnapshotCollector(seal_key=...) serves a seal that holds under that key (and, after a
    failed poll, re-seals with it)."""
    key = digest.cluster_key(MASTER, "ray", "c")
    registry = CollectorRegistry()
    collector = SnapshotCollector(registry, seal_key=key)
    collector.publish(full_snapshot())
    collector.mark_failed()
    text = generate_latest(registry).decode()
    samples = [
        Sample(s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in schema.SNAPSHOT_NAMES | digest.SEAL_NAMES
    ]
    cluster = samples[0].labels["cluster"]
    assert digest.check(cluster, samples, key) is Seal.HELD
