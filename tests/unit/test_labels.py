"""Ray node labels and label selectors: Ray's syntax, Ray's matching, one canonical text."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ray._private.label_utils import validate_label_key, validate_label_value
from ray.autoscaler.v2.scheduler import SchedulingNode
from ray.core.generated import autoscaler_pb2 as ray_pb
from ray.core.generated import common_pb2 as ray_common

from keda_ray_scaler.labels import (
    MAX_SELECTORS,
    LabelConstraint,
    LabelError,
    LabelOperator,
    Labels,
    LabelSelector,
    constraint_from_text,
    key_problem,
    parse_selectors,
    selectors_of,
    selectors_text,
    value_problem,
)

KEYS = ["market-type", "zone", "ray.io/accelerator-type", "a", "example.com/gpu"]
VALUES = ["spot", "on-demand", "a", "b", "A100", ""]


@pytest.mark.parametrize(
    "key",
    [
        "market-type",
        "ray.io/node-group",
        "Example.Com/x",
        "a" * 63,
        "a" * 64,
        "-x",
        "x-",
        "x y",
        "a/b/c",
        "/x",
        "p" * 254 + "/x",
        "",
        "x=y",
        "x,y",
    ],
)
def test_key_syntax_is_rays(key: str) -> None:
    """A key passes exactly when Ray's ``validate_label_key`` lets it."""
    assert (key_problem(key) is None) == (validate_label_key(key) is None)


@pytest.mark.parametrize(
    "value", ["spot", "", "A100", "a" * 63, "a" * 64, "-x", "a b", "a,b", "!x"]
)
def test_value_syntax_is_rays(value: str) -> None:
    """A value passes exactly when Ray's ``validate_label_value`` does not raise."""
    try:
        validate_label_value(value)
        ray_ok = True
    except ValueError:
        ray_ok = False
    assert (value_problem(value) is None) == ray_ok


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("spot", LabelConstraint("k", LabelOperator.IN, ("spot",))),
        ("!spot", LabelConstraint("k", LabelOperator.NOT_IN, ("spot",))),
        ("in(b,a)", LabelConstraint("k", LabelOperator.IN, ("a", "b"))),
        ("!in(a, b)", LabelConstraint("k", LabelOperator.NOT_IN, ("a", "b"))),
    ],
)
def test_rays_value_syntax_reads_as_constraints(text: str, expected: LabelConstraint) -> None:
    """``spot``, ``!spot``, ``in(a,b)``, ``!in(a, b)`` as Ray's ``label_utils`` writes them."""
    assert constraint_from_text("k", text) == expected


@pytest.mark.parametrize("bad", ["in()", "in(a,)", "a b", "!!a", "(a,b"])
def test_a_bad_value_in_a_selector_is_refused(bad: str) -> None:
    """A selector value Ray's syntax does not allow raises LabelError, never matches anything."""
    with pytest.raises(LabelError):
        LabelSelector.from_ray({"k": bad})


def test_exists_and_does_not_exist_test_only_the_keys_presence() -> None:
    """``k`` holds when the key is there (any value), ``!k`` when it is not."""
    exists = LabelConstraint.of("gpu", LabelOperator.EXISTS)
    absent = LabelConstraint.of("gpu", LabelOperator.DOES_NOT_EXIST)
    assert (exists.matches({"gpu": ""}), exists.matches({})) == (True, False)
    assert (absent.matches({"gpu": "x"}), absent.matches({})) == (False, True)
    assert parse_selectors("gpu,!tpu") == (
        LabelSelector.of([exists, constraint_from_text("!tpu", None)]),
    )


def test_a_list_is_cut_after_an_empty_selector_and_a_lone_empty_one_is_none() -> None:
    """``[spot, {}, on-demand]`` is ``spot;*``: the empty selector admits every node."""
    spot, any_node = LabelSelector.from_ray({"m": "spot"}), LabelSelector()
    assert (
        selectors_text(selectors_of([spot, any_node, LabelSelector.from_ray({"m": "x"})]))
        == "m=spot;*"
    )
    assert selectors_of([any_node]) == ()
    assert selectors_of([spot, spot]) == (spot,)


def test_more_fallbacks_than_the_bound_are_refused() -> None:
    """Nine distinct selectors: LabelError (the bound keeps the export and the plan small)."""
    with pytest.raises(LabelError):
        selectors_of(LabelSelector.from_ray({"k": str(i)}) for i in range(MAX_SELECTORS + 1))


_constraint = st.builds(
    LabelConstraint.of,
    st.sampled_from(KEYS),
    st.sampled_from([LabelOperator.IN, LabelOperator.NOT_IN]),
    st.lists(st.sampled_from(VALUES[:-1]), min_size=1, max_size=3),
)
_selector = st.lists(_constraint, max_size=3).map(LabelSelector.of)
_labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)


def _ray_request(sels: list[LabelSelector]) -> ray_pb.ResourceRequest:
    req = ray_pb.ResourceRequest()
    for sel in sels:
        out = req.label_selectors.add()
        for c in sel.constraints:
            op = {
                LabelOperator.IN: ray_common.LABEL_OPERATOR_IN,
                LabelOperator.NOT_IN: ray_common.LABEL_OPERATOR_NOT_IN,
            }[c.operator]
            out.label_constraints.add(label_key=c.key, operator=op, label_values=list(c.values))
    return req


@settings(max_examples=300, deadline=None)
@given(st.lists(_selector, min_size=1, max_size=4), _labels)
def test_the_first_selector_a_node_satisfies_is_rays(
    sels: list[LabelSelector], labels: dict[str, str]
) -> None:
    """Against Ray 2.60's own ``_satisfies_label_constraints``: the same first match."""
    ray_score = SchedulingNode._satisfies_label_constraints(
        SimpleNamespace(labels=labels), [_ray_request(sels)]
    )
    ours = next((i for i, s in enumerate(sels) if s.matches(labels)), None)
    assert ray_score == (0 if ours is None else len(sels) - ours)


@settings(max_examples=200, deadline=None)
@given(st.lists(_selector, max_size=4))
def test_the_canonical_text_round_trips(sels: list[LabelSelector]) -> None:
    """What :func:`selectors_text` writes, :func:`parse_selectors` reads back, equal."""
    found = selectors_of(sels)
    assert parse_selectors(selectors_text(found)) == found


def test_labels_are_a_hashable_mapping_equal_to_a_dict() -> None:
    """``Labels`` compares equal to a dict and to itself in any order, and hashes."""
    a, b = Labels({"z": "1", "a": "2"}), Labels([("a", "2"), ("z", "1")])
    assert a == b == {"a": "2", "z": "1"} and hash(a) == hash(b)
    assert (str(a), list(a)) == ("a=2,z=1", ["a", "z"])
    with pytest.raises(LabelError):
        Labels.parse("a=1,a=2")
