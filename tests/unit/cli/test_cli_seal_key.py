"""``keda-ray-scaler seal-key`` and the key-file flags of ``agent`` and ``serve``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from keda_ray_scaler.cli import main
from keda_ray_scaler.schema import digest


def test_a_new_master_key_then_a_clusters_key_from_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--new-master-key prints 64 hex digits; with it, --namespace and --cluster print that
    cluster's key, the one the scaler derives."""
    assert main(["seal-key", "--new-master-key"]) == 0
    master_hex = capsys.readouterr().out.strip()
    assert len(master_hex) == 64
    master = tmp_path / "master"
    master.write_text(master_hex + "\n")
    assert (
        main(
            [
                "seal-key",
                "--master-key-file",
                str(master),
                "--namespace",
                "ray",
                "--cluster",
                "demo",
            ]
        )
        == 0
    )
    key = capsys.readouterr().out.strip()
    assert key == digest.cluster_key(bytes.fromhex(master_hex), "ray", "demo").hex()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--namespace", "ray", "--cluster", "demo"], "--master-key-file: required"),
        (["--master-key-file", "{master}", "--cluster", "demo"], "--namespace: required"),
        (
            ["--master-key-file", "{master}", "--namespace", "Ray_", "--cluster", "demo"],
            "--namespace: 'Ray_' is not an RFC 1123 label",
        ),
        (
            ["--master-key-file", "{missing}", "--namespace", "ray", "--cluster", "demo"],
            "--master-key-file: {missing}: No such file",
        ),
        (
            ["--master-key-file", "{short}", "--namespace", "ray", "--cluster", "demo"],
            "at least 32 bytes",
        ),
    ],
    ids=["no-master", "no-namespace", "bad-namespace", "missing-file", "short-key"],
)
def test_bad_input_exits_2_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    files = {
        "master": tmp_path / "master",
        "missing": tmp_path / "missing",
        "short": tmp_path / "short",
    }
    files["master"].write_text("ab" * 32)
    files["short"].write_text("ab" * 8)
    names = {k: str(v) for k, v in files.items()}
    assert main(["seal-key", *(a.format(**names) for a in argv)]) == 2
    err = capsys.readouterr().err
    assert says.format(**names) in err and "Traceback" not in err
    assert "ab" * 8 not in err  # a key is never echoed


def test_agent_and_serve_refuse_a_bad_key_file_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key file that is not a key: exit 2, one line naming the flag and the file."""
    bad = tmp_path / "key"
    bad.write_text("not a key")
    assert (
        main(["agent", "--cluster-spec", str(tmp_path / "spec.yaml"), "--seal-key-file", str(bad)])
        == 2
    )
    assert (
        f"--seal-key-file: {bad}: a key file holds the key as hex digits only"
        in capsys.readouterr().err
    )
    # serve in a process of its own, as a user runs it (it owns its event loop)
    argv = ["serve", "--host=127.0.0.1", "--port=0", "--health-port=0", "--metrics-port=-1"]
    argv += ["--prometheus-url=http://127.0.0.1:9", f"--seal-master-key-file={bad}"]
    done = subprocess.run(
        [sys.executable, "-m", "keda_ray_scaler", *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"keda-ray-scaler serve: --seal-master-key-file: {bad}: "
        "a key file holds the key as hex digits only"
    ]


@pytest.fixture(autouse=True)
def _structlog_defaults() -> Iterator[None]:
    """The agent command configures structlog globally: undo it."""
    yield
    structlog.reset_defaults()
