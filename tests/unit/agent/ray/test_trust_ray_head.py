"""The head's ``CLUSTER_METADATA`` is untrusted too (issue 35, finding 3, second round): any task
may overwrite it. A value that names no version is refused as an unsupported version is (the
agent up, unready with the reason, counted), and a supported version once read holds for that
head: neither a failed call nor a rewrite of the key makes the agent read it again; a new GCS
session (a restarted head) does."""

from __future__ import annotations

import json

import pytest
from fake_clock import FakeClock
from prometheus_client import CollectorRegistry
from ray_input_fakes import FakeGcs, node, reader_of, refused_total, status

from keda_ray_scaler.agent.http.agent_health import HeadRefusal, Health, check
from keda_ray_scaler.agent.ray.refusals import Refusal
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs.versions import (
    CLUSTER_METADATA_KEY,
    MalformedClusterMetadata,
    UnsupportedRayVersion,
)


def metadata(version: str) -> bytes:
    """What a head of Ray ``version`` writes."""
    return json.dumps({"ray_version": version, "python_version": "3.11.7"}).encode()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"not json", "CLUSTER_METADATA: not JSON"),
        (b"\xff\xfe", "CLUSTER_METADATA: not JSON"),
        (b"[" * 100_000, "CLUSTER_METADATA: not JSON"),  # RecursionError: before, a poll crash
        (b'{"ray_version": 2}', "CLUSTER_METADATA: no ray_version"),
        (metadata("9" * 100_000), "CLUSTER_METADATA: no ray_version"),  # before: in every line
    ],
)
async def test_metadata_naming_no_version_is_a_counted_refusal_and_the_agent_stays_up(
    raw: bytes, problem: str
) -> None:
    """Before: a plain RayError at every poll, uncounted; /healthz went stale and liveness
    restarted the agent in a loop. Now: refused as an unsupported version (nothing else read),
    counted as malformed_cluster_metadata, /readyz down and /healthz up with the reason."""
    registry = CollectorRegistry()
    gcs = FakeGcs(status(node(b"a", "w-a", "10.0.0.1")), metadata=raw)
    clock = FakeClock(1000.0)
    head = HeadRefusal(clock)
    reader = reader_of(gcs, registry, on_unsupported=head.refuse)
    for _ in range(2):
        with pytest.raises(MalformedClusterMetadata) as raised:
            await reader.read()
    assert isinstance(raised.value, UnsupportedRayVersion)
    assert str(raised.value).startswith(f"GCS fake:0: {problem}")
    assert len(str(raised.value)) < 400
    assert refused_total(registry, Refusal.MALFORMED_METADATA) == 2.0
    assert refused_total(registry, Refusal.UNSUPPORTED_VERSION) is None
    assert gcs.asked == [CLUSTER_METADATA_KEY] * 2  # no status, no other key
    verdict = check(None, 990.0, 1001.0, 30.0, head.last)
    assert (verdict.health, verdict.ok, verdict.ready) == (Health.REFUSED, True, False)
    assert problem in verdict.reason


async def test_a_supported_version_holds_across_a_failure_and_a_rewrite_until_a_new_session() -> (
    None
):
    """2.60 read once for session s1; a task writes `not json` over the key and a call fails:
    the next polls read on without asking again (before: the failure made the agent ask again,
    and the rewritten key stopped it for good). A reply of session s2 (a restarted head) has the
    version asked again before it is read: refused now, read again once the head wrote its own."""
    registry = CollectorRegistry()
    one = node(b"a", "w-a", "10.0.0.1")
    gcs = FakeGcs(status(one, session="s1"), metadata=metadata("2.60.0"))
    reader = reader_of(gcs, registry, on_unsupported=lambda exc: None)
    await reader.read()
    gcs.metadata, gcs.fail = b"not json", True
    with pytest.raises(RayError) as failed:
        await reader.read()
    assert not isinstance(failed.value, UnsupportedRayVersion)
    for _ in range(2):
        assert [n.pod for n in (await reader.read()).nodes] == ["w-a"]
    assert gcs.asked.count(CLUSTER_METADATA_KEY) == 1
    assert refused_total(registry, Refusal.MALFORMED_METADATA) is None
    gcs.reply = status(one, session="s2")
    with pytest.raises(MalformedClusterMetadata):
        await reader.read()
    assert refused_total(registry, Refusal.MALFORMED_METADATA) == 1.0
    gcs.metadata = metadata("2.47.1")
    assert [n.pod for n in (await reader.read()).nodes] == ["w-a"]
    assert reader.ray_version == "2.47.1"
    assert gcs.asked.count(CLUSTER_METADATA_KEY) == 3
