"""A new user's first try: a bad environment is one line naming the flag, exit 2, no traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from keda_ray_scaler.cli import error_line, main
from keda_ray_scaler.errors import ConfigError

HINT_FLAGS = ("--kubeconfig", "--context", "--no-scale-down")


@pytest.fixture(autouse=True)
def _structlog_defaults() -> Iterator[None]:
    """The commands configure structlog globally: undo it."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text("cluster: demo\nworkerGroups:\n  - {name: cpu, resources: {CPU: 10}}\n")
    return path


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port some other process holds (a listening socket of this one)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ([], "--kubeconfig", "not in a Kubernetes pod"),
        (["--kubeconfig", "/nonexistent/kubeconfig"], "--kubeconfig", "is not a file"),
    ],
    ids=["outside-a-cluster", "missing-kubeconfig"],
)
def test_agent_without_kubernetes_says_which_flags_help(
    spec: Path,
    extra: list[str],
    field: str,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Scale-down with no reachable Kubernetes config: exit 2, one line naming the three flags."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    argv = ["agent", "--cluster-spec", str(spec), "--namespace", "ray", "--log-format=console"]
    assert main([*argv, *extra]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"keda-ray-scaler agent: {field}: ")
    assert says in lines[0]
    assert all(flag in lines[0] for flag in HINT_FLAGS)


def test_agent_with_an_unknown_context_names_context(
    spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kubeconfig without the asked context: the line names --context."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    argv = ["agent", "--cluster-spec", str(spec), "--namespace", "ray", "--log-format=console"]
    assert main([*argv, "--kubeconfig", str(kubeconfig), "--context", "nope"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("keda-ray-scaler agent: --context: ")


@pytest.mark.parametrize("flag", ["--port", "--metrics-port", "--health-port"])
def test_serve_on_a_busy_port_exits_2_naming_the_flag(busy_port: int, flag: str) -> None:
    """A busy port: exit 2, exactly one stderr line naming the flag; no coroutine warning."""
    ports = {"--port": "0", "--metrics-port": "-1", "--health-port": "0"}
    ports[flag] = str(busy_port)
    argv = ["serve", "--host=127.0.0.1", "--prometheus-url=http://127.0.0.1:9"]
    argv += [f"{k}={v}" for k, v in ports.items()]
    done = subprocess.run(
        [sys.executable, "-m", "keda_ray_scaler", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"keda-ray-scaler serve: {flag}: cannot listen on 127.0.0.1:{busy_port}: "
        "Address already in use"
    ]


@pytest.mark.parametrize(
    ("where", "line"),
    [
        ("serve", "keda-ray-scaler serve: --port: bad port"),
        ("cluster.yaml", "keda-ray-scaler serve: cluster.yaml: --port: bad port"),
    ],
    ids=["own", "a-file"],
)
def test_the_command_is_named_once(where: str, line: str) -> None:
    """The command's own errors are not prefixed twice; an error from a file keeps its place."""
    assert error_line("serve", ConfigError(where, "--port", "bad port")) == line
