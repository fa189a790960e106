"""TriggerConfig.from_metadata: allow-listed keys, DNS-1123 values, errors naming the key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.rpc.trigger import ALLOWED_KEYS, TriggerConfig, TriggerParser


def parse(**metadata: str) -> TriggerConfig:
    return TriggerConfig.from_metadata(metadata, server_max_age_s=60)


def test_required_keys_give_cluster_group_and_stable_metric_name() -> None:
    """rayCluster + workerGroup parse; metric name is ray-<cluster>.<group>."""
    c = parse(rayCluster="ray-prod", workerGroup="gpu-a100")
    assert (c.cluster, c.group, c.max_age_s, c.metric_name) == (
        "ray-prod",
        "gpu-a100",
        None,
        "ray-ray-prod.gpu-a100",
    )


def test_keda_own_trigger_keys_are_accepted_and_ignored() -> None:
    """scalerAddress and KEDA's TLS keys, passed through by KEDA, are not errors."""
    c = parse(
        rayCluster="r",
        workerGroup="g",
        scalerAddress="keda-ray-scaler.keda:6000",
        caCert="/x",
        tlsClientCert="/y",
        tlsClientKey="/z",
        tlsCertFile="/w",
        unsafeSsl="false",
    )
    assert (c.cluster, c.group) == ("r", "g")


@pytest.mark.parametrize(
    ("metadata", "key", "problem"),
    [
        ({"workerGroup": "g"}, "rayCluster", "required"),
        ({"rayCluster": "", "workerGroup": "g"}, "rayCluster", "required"),
        ({"rayCluster": "r"}, "workerGroup", "required"),
        ({"rayCluster": "Ray", "workerGroup": "g"}, "rayCluster", "not a DNS-1123 label"),
        ({"rayCluster": "r", "workerGroup": "g-"}, "workerGroup", "not a DNS-1123 label"),
        ({"rayCluster": "a" * 64, "workerGroup": "g"}, "rayCluster", "not a DNS-1123 label"),
        (
            {"rayCluster": 'r"} or vector(1000) #', "workerGroup": "g"},
            "rayCluster",
            "not a DNS-1123 label",
        ),
        ({"rayCluster": "r", "workerGroup": "g.*"}, "workerGroup", "not a DNS-1123 label"),
        ({"rayCluster": "r", "workerGroup": "g", "query": "up"}, "query", "unknown key"),
        (
            {"rayCluster": "r", "workerGroup": "g", "prometheusUrl": "http://evil"},
            "prometheusUrl",
            "unknown key",
        ),
        ({"rayCluster": "r", "workerGroup": "g", "maxAgeSeconds": "0"}, "maxAgeSeconds", "0 is"),
        ({"rayCluster": "r", "workerGroup": "g", "maxAgeSeconds": "61"}, "maxAgeSeconds", "61 is"),
        (
            {"rayCluster": "r", "workerGroup": "g", "maxAgeSeconds": "1e3"},
            "maxAgeSeconds",
            "not a whole number",
        ),
        (
            {"rayCluster": "r", "workerGroup": "g", "maxAgeSeconds": "\uff13"},
            "maxAgeSeconds",
            "not a whole number",
        ),
    ],
    ids=[
        "missing-cluster",
        "empty-cluster",
        "missing-group",
        "uppercase",
        "trailing-dash",
        "too-long",
        "promql-injection",
        "regex-injection",
        "query-key",
        "url-key",
        "max-age-zero",
        "max-age-above-server",
        "max-age-float",
        "max-age-fullwidth-digit",
    ],
)
def test_bad_metadata_names_the_key(metadata: dict[str, str], key: str, problem: str) -> None:
    """Every rejection is a ConfigError whose field is the offending key."""
    with pytest.raises(ConfigError) as info:
        TriggerConfig.from_metadata(metadata, server_max_age_s=60)
    assert info.value.field == key
    assert problem in info.value.problem


def test_max_age_within_server_limit_is_kept() -> None:
    """maxAgeSeconds=15 under a 60 s server limit gives 15.0."""
    assert parse(rayCluster="r", workerGroup="g", maxAgeSeconds="15").max_age_s == 15.0


def test_the_cluster_namespace_is_optional_and_a_namespace_name() -> None:
    """rayClusterNamespace absent: None (the ScaledObject's own); present: a DNS-1123 label."""
    assert parse(rayCluster="r", workerGroup="g").namespace is None
    assert parse(rayCluster="r", workerGroup="g", rayClusterNamespace="team-a").namespace == (
        "team-a"
    )
    with pytest.raises(ConfigError) as info:
        parse(rayCluster="r", workerGroup="g", rayClusterNamespace='a"} or vector(1)')
    assert info.value.field == "rayClusterNamespace"


def test_unknown_key_with_control_characters_is_reported_escaped() -> None:
    """A hostile key is echoed escaped and truncated, never raw."""
    with pytest.raises(ConfigError) as info:
        TriggerConfig.from_metadata({"rayCluster": "r", "workerGroup": "g", "x\ny" + "z" * 99: ""})
    assert info.value.field == "x\\ny" + "z" * 61 + "..."


_KEYS = st.sampled_from([*sorted(ALLOWED_KEYS), "query", "rayclust", "x\ny"])
_VALUES = st.sampled_from(["", "r", "g-1", "Ray", "a" * 64, "0", "15", "61", "1e3", "/ca.pem"])


@given(st.lists(st.dictionaries(_KEYS, _VALUES, max_size=6), min_size=1, max_size=4))
def test_cached_parser_answers_exactly_like_from_metadata(maps: list[dict[str, str]]) -> None:
    """Same config or same error (key and problem) as from_metadata, cached or not."""
    parser = TriggerParser(60, maxsize=2)
    for metadata in maps + maps:
        try:
            expected: TriggerConfig | tuple[str | None, str] = TriggerConfig.from_metadata(
                metadata, 60
            )
        except ConfigError as exc:
            expected = (exc.field, exc.problem)
        try:
            got: TriggerConfig | tuple[str | None, str] = parser(metadata)
        except ConfigError as exc:
            got = (exc.field, exc.problem)
        assert got == expected


def test_cached_parser_ignores_the_values_of_keda_keys() -> None:
    """Metadata differing only in a KEDA key's value is one cache entry, parsed once."""
    parser = TriggerParser(60)
    a = parser({"rayCluster": "r", "workerGroup": "g", "caCert": "A" * 5000})
    b = parser({"rayCluster": "r", "workerGroup": "g", "caCert": "B"})
    info = parser.cache_info()
    assert (a is b, info.hits, info.misses, info.currsize) == (True, 1, 1, 1)


def test_cached_parser_refuses_bad_metadata_on_every_call() -> None:
    """A rejected map is never cached: the second call raises the same error again."""
    parser = TriggerParser(60)
    for _ in range(2):
        with pytest.raises(ConfigError, match="workerGroup: required"):
            parser({"rayCluster": "r"})
    assert parser.cache_info().currsize == 0


def test_cached_parser_is_bounded() -> None:
    """At most maxsize configs are kept; the least recently used goes first."""
    parser = TriggerParser(60, maxsize=2)
    for group in ("a", "b", "c"):
        parser({"rayCluster": "r", "workerGroup": group})
    info = parser.cache_info()
    assert (info.currsize, info.maxsize) == (2, 2)
