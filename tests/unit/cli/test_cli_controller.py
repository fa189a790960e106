"""``keda-ray-scaler controller``: flags read into the controller's settings, bad input exits 2 with
one line naming the flag, and ``--help`` loads neither the Kubernetes client nor structlog."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import yaml

from keda_ray_scaler.cli import build_parser, main
from keda_ray_scaler.cli.controller_flags import controller_settings
from keda_ray_scaler.controller.settings import ControllerSettings
from keda_ray_scaler.controller.template import ControllerTemplate


@pytest.fixture(autouse=True)
def _default_logging() -> Iterator[None]:
    """The command configures structlog; put the default back for the other tests."""
    yield
    structlog.reset_defaults()


def settings(*argv: str) -> ControllerSettings:
    """The settings ``controller ARGV`` gives."""
    return controller_settings(build_parser().parse_args(["controller", *argv]))


def test_flags_become_settings_and_the_defaults_are_the_template_s() -> None:
    """Two namespaces, a resync, the template's fields; unset flags keep the template's."""
    got = settings("--namespace=a", "--namespace=b", "--resync=5", "--polling-interval=2")
    assert (got.namespaces, got.resync_s, got.template.polling_interval_s) == (("a", "b"), 5.0, 2)
    default = ControllerTemplate()
    assert got.template.scaler_address == default.scaler_address
    assert got.template.trigger_authentication == default.trigger_authentication
    none = settings("--namespace=a", "--trigger-authentication=")
    assert none.template.trigger_authentication is None


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        ([], "--namespace: required"),
        (["--namespace=Ray"], "--namespace: 'Ray' is not a namespace"),
        (["--namespace=a", "--namespace=a"], "--namespace: a namespace is named twice"),
        (["--namespace=a", "--resync=0"], "--resync: 0.0 is not a positive number"),
        (["--namespace=a", "--scaler-address=http://x:1"], "--scaler-address: expected host:port"),
        (["--namespace=a", "--cooldown-period=0"], "--cooldown-period: 0 is outside 1..86400"),
        (["--namespace=a", "--metrics-port=70000"], "--metrics-port: 70000 is not a port"),
        (
            ["--namespace=a", "--kubeconfig=/nonexistent"],
            "--kubeconfig: /nonexistent is not a file",
        ),
    ],
    ids=[
        "no-namespace",
        "bad-namespace",
        "twice",
        "zero-resync",
        "scheme-in-address",
        "zero-cooldown",
        "bad-port",
        "no-kubeconfig",
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_flag(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2, one line: ``keda-ray-scaler controller: FLAG: PROBLEM``."""
    assert main(["controller", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"keda-ray-scaler controller: {line}"), err
    assert len(err.splitlines()) == 1


def test_a_metrics_port_in_use_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The /metrics port taken: exit 2 naming --metrics-port, before any API call."""
    kubeconfig = tmp_path / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    kubeconfig.write_text(yaml.safe_dump(config))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [
            "controller",
            "--namespace=a",
            f"--kubeconfig={kubeconfig}",
            f"--metrics-port={port}",
        ]
        assert main(argv) == 2
    assert "controller: --metrics-port: 127.0.0.1:" in capsys.readouterr().err
    assert main([*argv[:3], "--context=nope", f"--metrics-port={port}"]) == 2
    assert "--context:" in capsys.readouterr().err


def test_help_loads_neither_the_kubernetes_client_nor_structlog() -> None:
    """The flags module alone builds the parser."""
    probe = (
        "import sys\nfrom keda_ray_scaler.cli import main\n"
        "try:\n    main(['controller', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'structlog')),"
        " file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "--namespace" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"
