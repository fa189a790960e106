"""The chart-level template: the example's settings by default, a bad value refused naming the
field, a cluster's overrides applied over it."""

from __future__ import annotations

from typing import Any

import pytest

from keda_ray_scaler.controller.optin import OptIn
from keda_ray_scaler.controller.template import ControllerTemplate, HpaBehavior
from keda_ray_scaler.errors import ConfigError


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ({"scaler_address": "http://s:1"}, "scaler_address", "expected host:port"),
        ({"polling_interval_s": 0}, "polling_interval_s", "0 is outside 1..3600 seconds"),
        ({"cooldown_period_s": 86401}, "cooldown_period_s", "outside 1..86400"),
        ({"trigger_authentication": ""}, "trigger_authentication", "None for no reference"),
        ({"service_account_pattern": "agent"}, "service_account_pattern", "{cluster} once"),
        ({"service_account_pattern": "{cluster}-{cluster}"}, "service_account_pattern", "once"),
        ({"service_account_pattern": "Ray-{cluster}"}, "service_account_pattern", "DNS label"),
        ({"service_account_pattern": "ray-{cluster}-"}, "service_account_pattern", "DNS label"),
    ],
)
def test_a_bad_template_value_is_refused_naming_the_field(
    fields: dict[str, Any], field: str, problem: str
) -> None:
    """ConfigError with the field's name and what is wrong."""
    with pytest.raises(ConfigError) as caught:
        ControllerTemplate(**fields)
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_overrides_replace_only_what_the_cluster_sets() -> None:
    """Set fields replace the template's; unset ones keep it."""
    template = ControllerTemplate()
    assert template.with_overrides(OptIn()) == template
    changed = template.with_overrides(OptIn(polling_interval_s=30))
    assert (changed.polling_interval_s, changed.cooldown_period_s, changed.scaler_address) == (
        30,
        template.cooldown_period_s,
        template.scaler_address,
    )


def test_the_service_account_pattern_names_the_cluster() -> None:
    """``{cluster}`` replaced by the RayCluster's name."""
    assert ControllerTemplate().service_account("demo") == "ray-demo-agent"
    assert ControllerTemplate(service_account_pattern="{cluster}").service_account("x") == "x"


def test_a_pods_policy_is_at_least_one_pod() -> None:
    """A group of maxReplicas 0 still gets a valid HPA policy (the HPA refuses value 0)."""
    pods = HpaBehavior().body(0)["scaleUp"]["policies"][1]
    assert pods == {"type": "Pods", "value": 1, "periodSeconds": 15}
