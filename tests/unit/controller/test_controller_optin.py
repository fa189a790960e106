"""The opt-in annotation and the per-cluster overrides: each value read to a typed decision, a
malformed one refused naming the annotation and the value, Ray's own autoscaler a conflict."""

from __future__ import annotations

import pytest
from controller_input import raycluster, worker

from keda_ray_scaler.controller.optin import (
    COOLDOWN_PERIOD_ANNOTATION,
    IN_TREE_FIELD,
    OPT_IN_ANNOTATION,
    POLLING_INTERVAL_ANNOTATION,
    SCALER_ADDRESS_ANNOTATION,
    Conflict,
    Invalid,
    NotOptedIn,
    OptIn,
    Refusal,
    address_problem,
    read_cluster,
    read_opt_in,
)


def notes(**annotations: str) -> dict[str, dict[str, str]]:
    """Metadata holding these annotations."""
    return {"annotations": annotations}


def opted(**overrides: str) -> dict[str, dict[str, str]]:
    """Metadata of an opted-in cluster with these annotations too."""
    return {"annotations": {OPT_IN_ANNOTATION: "enabled", **overrides}}


def test_the_annotation_is_the_documented_one() -> None:
    """One key, in the project's own domain."""
    assert OPT_IN_ANNOTATION == "keda-ray-scaler.io/autoscaling"


@pytest.mark.parametrize("value", ["enabled", "true", "Enabled", "TRUE"])
def test_enabled_and_true_opt_in(value: str) -> None:
    """Either word, in any case, opts in with no override."""
    assert read_opt_in(notes(**{OPT_IN_ANNOTATION: value})) == OptIn()


@pytest.mark.parametrize("value", ["disabled", "false", "Disabled", "FALSE"])
def test_disabled_and_false_leave_the_cluster_alone(value: str) -> None:
    """Either word leaves it out, and says which value did."""
    assert read_opt_in(notes(**{OPT_IN_ANNOTATION: value})) == NotOptedIn(value)


@pytest.mark.parametrize("metadata", [{}, {"annotations": None}, notes(other="x")])
def test_no_annotation_leaves_the_cluster_alone(metadata: dict[str, object]) -> None:
    """No annotations, or others only: not opted in, value None."""
    assert read_opt_in(metadata) == NotOptedIn(None)


@pytest.mark.parametrize("value", ["yes", "", "1", "enable", " enabled", "on"])
def test_any_other_value_is_refused_naming_the_annotation_and_value(value: str) -> None:
    """A typo must not read as off: a refusal naming the key, the value and the choices."""
    decision = read_opt_in(notes(**{OPT_IN_ANNOTATION: value}))
    assert decision == Refusal(
        Invalid.UNKNOWN_VALUE,
        OPT_IN_ANNOTATION,
        value,
        f'annotation {OPT_IN_ANNOTATION}: {value!r}: use "enabled" or "disabled"',
    )


def test_an_untrusted_value_is_shown_escaped_and_truncated() -> None:
    """Control characters escaped, at most 64 characters shown."""
    decision = read_opt_in(notes(**{OPT_IN_ANNOTATION: "on\n" + "x" * 100}))
    assert isinstance(decision, Refusal)
    assert decision.value == "on\\n" + "x" * 61 + "..."
    assert "\n" not in decision.message


def test_overrides_are_read_when_opted_in() -> None:
    """Both interval overrides, parsed."""
    decision = read_opt_in(
        opted(**{POLLING_INTERVAL_ANNOTATION: "10", COOLDOWN_PERIOD_ANNOTATION: "120"})
    )
    assert decision == OptIn(10, 120)


@pytest.mark.parametrize("value", ["scaler.team-a.svc:9090", "evil.example:443", "x"])
def test_the_scaler_address_is_never_a_clusters_to_set(value: str) -> None:
    """Whatever its value: refused naming the annotation (KEDA presents its client certificate
    to that address: a RayCluster's editor must not choose it)."""
    decision = read_opt_in(opted(**{SCALER_ADDRESS_ANNOTATION: value}))
    assert isinstance(decision, Refusal) and decision.reason is Invalid.NOT_ALLOWED
    assert (
        SCALER_ADDRESS_ANNOTATION in decision.message and "client certificate" in decision.message
    )


def test_overrides_of_a_cluster_not_opted_in_are_not_read() -> None:
    """A malformed override on a cluster left alone refuses nothing."""
    metadata = notes(**{OPT_IN_ANNOTATION: "disabled", POLLING_INTERVAL_ANNOTATION: "soon"})
    assert read_opt_in(metadata) == NotOptedIn("disabled")


@pytest.mark.parametrize(
    ("annotation", "value", "reason", "problem"),
    [
        (POLLING_INTERVAL_ANNOTATION, "5s", Invalid.NOT_AN_INTEGER, "expected whole seconds"),
        (POLLING_INTERVAL_ANNOTATION, "-1", Invalid.NOT_AN_INTEGER, "expected whole seconds"),
        (POLLING_INTERVAL_ANNOTATION, "1.5", Invalid.NOT_AN_INTEGER, "expected whole seconds"),
        (POLLING_INTERVAL_ANNOTATION, "0", Invalid.OUT_OF_BOUNDS, "0 is outside 1..3600 seconds"),
        (POLLING_INTERVAL_ANNOTATION, "3601", Invalid.OUT_OF_BOUNDS, "outside 1..3600"),
        (COOLDOWN_PERIOD_ANNOTATION, "", Invalid.NOT_AN_INTEGER, "expected whole seconds"),
        (COOLDOWN_PERIOD_ANNOTATION, "0", Invalid.OUT_OF_BOUNDS, "0 is outside 1..86400 seconds"),
        (COOLDOWN_PERIOD_ANNOTATION, "86401", Invalid.OUT_OF_BOUNDS, "outside 1..86400"),
    ],
)
def test_a_bad_override_refuses_the_cluster_naming_it(
    annotation: str, value: str, reason: Invalid, problem: str
) -> None:
    """Each malformed override: its typed reason, the annotation, the value and the problem."""
    decision = read_opt_in(opted(**{annotation: value}))
    assert isinstance(decision, Refusal)
    assert (decision.reason, decision.field, decision.value) == (reason, annotation, value)
    assert decision.message.startswith(f"annotation {annotation}: {value!r}: ")
    assert problem in decision.message


@pytest.mark.parametrize(
    "address",
    ["keda-ray-scaler.keda.svc.cluster.local:9090", "10.0.0.7:9090", "[fd00::7]:443", "s:65535"],
)
def test_host_port_addresses_pass(address: str) -> None:
    """A DNS name, an IPv4 address or a bracketed IPv6 address, and a port."""
    assert address_problem(address) == ""


def test_the_in_tree_autoscaler_is_a_conflict_saying_what_to_change() -> None:
    """Opted in with enableInTreeAutoscaling: refused, typed, naming the field and the fix."""
    decision = read_cluster(raycluster(worker(), in_tree=True))
    assert isinstance(decision, Refusal)
    assert (decision.reason, decision.field, decision.value) == (
        Conflict.IN_TREE_AUTOSCALER,
        IN_TREE_FIELD,
        "true",
    )
    assert f"set {IN_TREE_FIELD}: false" in decision.message
    assert "or remove the annotation" in decision.message


def test_the_in_tree_autoscaler_alone_is_none_of_our_business() -> None:
    """A cluster that runs Ray's autoscaler and does not opt in is simply left alone."""
    cluster = raycluster(worker(), in_tree=True, annotations={})
    assert read_cluster(cluster) == NotOptedIn(None)


def test_a_malformed_annotation_is_reported_before_the_conflict() -> None:
    """Both wrong: the annotation's refusal comes first (fix it and the conflict shows)."""
    cluster = raycluster(worker(), in_tree=True, annotations={OPT_IN_ANNOTATION: "yes"})
    decision = read_cluster(cluster)
    assert isinstance(decision, Refusal) and decision.reason is Invalid.UNKNOWN_VALUE


def test_an_opted_in_cluster_without_in_tree_autoscaling_is_served() -> None:
    """``enableInTreeAutoscaling: false`` (the example's) and the annotation: opted in."""
    assert read_cluster(raycluster(worker())) == OptIn()


def test_the_label_opts_in_and_wins_over_an_annotation_of_the_same_key() -> None:
    """The label (what the webhook selects) opts in; an annotation of the key is read only
    without the label."""
    from keda_ray_scaler.controller.optin import OPT_IN_LABEL

    assert read_opt_in({"labels": {OPT_IN_LABEL: "enabled"}}) == OptIn()
    both = {"labels": {OPT_IN_LABEL: "disabled"}, "annotations": {OPT_IN_ANNOTATION: "enabled"}}
    assert read_opt_in(both) == NotOptedIn("disabled")
