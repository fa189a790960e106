"""The stream quota and the certificate names, as plain values: peers parsed, bounds kept."""

from __future__ import annotations

import pytest

from keda_ray_scaler.errors import Limit
from keda_ray_scaler.rpc.caller_gate import certificate_names
from keda_ray_scaler.rpc.stream_quota import StreamQuota, peer_address


@pytest.mark.parametrize(
    ("peer", "address"),
    [
        ("ipv4:10.0.0.7:41234", "10.0.0.7"),
        ("ipv6:[fd00::7]:41234", "fd00::7"),
        ("ipv6:%5Bfd00::7%5D:41234", "fd00::7"),
        ("ipv6:%5B%3A%3A1%5D:5000", "::1"),
        ("unix:/run/scaler.sock", "unix:/run/scaler.sock"),
        ("ipv4:10.0.0.7", "ipv4:10.0.0.7"),
    ],
    ids=["ipv4", "ipv6", "ipv6-encoded-brackets", "ipv6-all-encoded", "unix", "no-port"],
)
def test_a_peer_is_its_address_without_the_port(peer: str, address: str) -> None:
    """grpc's peer strings give one address whatever the source port; odd ones are their own."""
    assert peer_address(peer) == address


def test_each_bound_is_named_and_a_refused_stream_is_not_counted() -> None:
    """Two a connection, three an address: the third on one connection and the fourth from
    one address are refused with their limit, and neither is counted."""
    quota = StreamQuota(per_peer=3, per_connection=2)
    a, b = "ipv4:10.0.0.7:1000", "ipv4:10.0.0.7:1001"
    assert [quota.open(a), quota.open(a)] == [None, None]
    refused = quota.open(a)
    assert refused is not None and refused.limit is Limit.STREAMS_PER_CONNECTION
    assert "--max-streams-per-connection" in refused.message
    assert quota.open(b) is None
    refused = quota.open(b)
    assert refused is not None and refused.limit is Limit.STREAMS_PER_PEER
    assert "--max-streams-per-peer" in refused.message
    assert quota.open_streams(a) == (2, 3)
    assert quota.open("ipv4:10.0.0.8:1000") is None  # another address has its own


def test_closed_streams_free_their_slot_and_are_forgotten() -> None:
    """Closing gives the slot back; an address with nothing open leaves no entry behind."""
    quota = StreamQuota(per_peer=1, per_connection=1)
    peer = "ipv4:10.0.0.7:1000"
    assert quota.open(peer) is None
    quota.close(peer)
    assert quota.open_streams(peer) == (0, 0)
    assert quota.open(peer) is None
    quota.close(peer)
    assert (quota._by_peer, quota._by_connection) == ({}, {})


def test_a_bound_below_one_is_refused() -> None:
    """A quota that admits nothing is a configuration error, not a silent outage."""
    with pytest.raises(ValueError, match="per_connection"):
        StreamQuota(per_peer=1, per_connection=0)


def test_the_names_of_a_certificate_are_its_common_name_and_alternative_names() -> None:
    """grpc's auth context gives bytes; both keys count, other keys do not."""
    context = {
        "x509_common_name": [b"keda"],
        "x509_subject_alternative_name": [b"keda-operator.keda.svc", b"spiffe://c/ns/keda"],
        "transport_security_type": [b"ssl"],
    }
    assert certificate_names(context) == (
        "keda",
        "keda-operator.keda.svc",
        "spiffe://c/ns/keda",
    )
    assert certificate_names({}) == ()
