"""telemetry.py: log processors as plain callables, logging configuration, metric factory."""

from __future__ import annotations

import enum
import json

import pytest
import structlog
from prometheus_client import CollectorRegistry

from keda_ray_scaler.telemetry import (
    configure_logging,
    redact_secrets,
    scaler_metrics,
    stringify_enums,
)


class Outcome(enum.Enum):
    SKIP_BUSY = "skip_busy"


def test_redact_secrets_hides_values_of_secret_keys_only() -> None:
    """password/token/Authorization values become [redacted]; other keys are untouched."""
    event = {"event": "x", "password": "p", "Authorization": "Bearer t", "cluster": "ray"}
    assert redact_secrets(None, "info", event) == {
        "event": "x",
        "password": "[redacted]",
        "Authorization": "[redacted]",
        "cluster": "ray",
    }


def test_stringify_enums_logs_the_plain_value() -> None:
    """Enum members are logged as their value."""
    assert stringify_enums(None, "info", {"outcome": Outcome.SKIP_BUSY}) == {"outcome": "skip_busy"}


def test_configure_logging_refuses_an_unknown_level() -> None:
    """An unknown level name raises ValueError naming it."""
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging(json=True, level="loud")


def test_configure_logging_json_writes_one_object_per_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """JSON logging: one line, level, event and bound fields, secrets redacted."""
    configure_logging(json=True, level="info")
    try:
        structlog.get_logger("t").bind(cluster="ray").info("hello", token="s3cret")
        structlog.get_logger("t").debug("hidden")
        line = capsys.readouterr().err.strip()
    finally:
        structlog.reset_defaults()
    event = json.loads(line)
    assert {k: event[k] for k in ("event", "level", "cluster", "token")} == {
        "event": "hello",
        "level": "info",
        "cluster": "ray",
        "token": "[redacted]",
    }


def test_scaler_metrics_register_in_the_given_registry_only() -> None:
    """Two registries hold independent metrics; the names carry the project prefix."""
    a, b = CollectorRegistry(), CollectorRegistry()
    scaler_metrics(a).target.labels("ray", "cpu").set(3)
    scaler_metrics(b)
    assert (
        a.get_sample_value("keda_ray_scaler_target_replicas", {"cluster": "ray", "group": "cpu"})
        == 3
    )
    assert (
        b.get_sample_value("keda_ray_scaler_target_replicas", {"cluster": "ray", "group": "cpu"})
        is None
    )
