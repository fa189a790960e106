"""``keda-ray-scaler status`` against a real scaler on loopback, plaintext and mTLS."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog
from fake_clock import FakeClock
from rpc_builders import T0, cluster_ref, group, snapshot
from tls_certs import Certs, make_certs

from keda_ray_scaler.cli import main
from keda_ray_scaler.decisions import Placed, Plan
from keda_ray_scaler.labels import LabelSelector, selectors_of
from keda_ray_scaler.model import PlanningInput, Resources
from keda_ray_scaler.planner import plan
from keda_ray_scaler.rpc.cluster_refresh import Planner
from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.tls import TlsFiles
from keda_ray_scaler.sources.base import MemorySource

#: The tests' Ray cluster: ``ray`` in namespace ``ray``.
RAY = cluster_ref("ray")

AGE_S = 3.0  # the fake clock runs this far past the snapshot time


@pytest.fixture(autouse=True)
def _structlog_defaults() -> Iterator[None]:
    """Commands may configure structlog globally: undo it."""
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="module")
def certs() -> Certs:
    return make_certs()


def source() -> MemorySource:
    """Cluster ray: 20 pending {CPU: 5} tasks; group cpu of 10-CPU pods, group gpu idle."""
    groups = (group("cpu", cpu=10), group("gpu", cpu=8))
    return MemorySource({RAY: snapshot(groups=groups, tasks={5: 20}, t=T0)})


async def started(tls: TlsFiles | None = None, planner: Planner | None = None) -> ScalerServer:
    server = build_server(
        source(),
        clock=FakeClock(T0 + AGE_S),
        tls=tls,
        target_settings=TargetSettings(refresh_interval_s=3600),
        planner=planner,
    )
    await server.start()
    return server


@pytest.fixture
async def plain() -> AsyncIterator[ScalerServer]:
    server = await started()
    yield server
    await server.stop(grace_s=0)


@pytest.fixture
async def mtls(tmp_path: Path, certs: Certs) -> AsyncIterator[tuple[ScalerServer, list[str]]]:
    cert, key = certs.server.write(tmp_path, "server")
    ca = tmp_path / "ca.crt"
    ca.write_bytes(certs.ca.cert)
    client_cert, client_key = certs.client.write(tmp_path, "client")
    server = await started(TlsFiles(cert, key, ca))
    flags = [
        f"--ca-cert={ca}",
        f"--tls-client-cert={client_cert}",
        f"--tls-client-key={client_key}",
    ]
    yield server, flags
    await server.stop(grace_s=0)


def table(out: str) -> list[list[str]]:
    """The rows of the printed table (from its header on), split into cells."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("CLUSTER"))
    return [line.split() for line in lines[start:]]


async def status(*argv: str) -> int:
    """Run the command as the console script does (its blocking client in a thread), as
    ScaledObjects of namespace ray (the cluster's) unless ``argv`` says another."""
    return await asyncio.to_thread(main, ["status", "--namespace=ray", *argv])


async def test_prints_target_active_and_data_age_per_group(
    plain: ScalerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """20 x {CPU: 5} on 10-CPU pods: cpu 10 and active, gpu 0 and inactive, both 3 s old."""
    address = f"127.0.0.1:{plain.port}"
    code = await status("--address", address, "--cluster=ray", "--group=cpu", "--group=gpu")
    assert code == 0
    rows = table(capsys.readouterr().out)
    assert rows[0] == ["CLUSTER", "GROUP", "TARGET", "ACTIVE", "DATA", "AGE"]
    assert rows[1:] == [
        ["ray", "cpu", "10", "true", "3.0", "s"],
        ["ray", "gpu", "0", "false", "3.0", "s"],
    ]


SPOT = LabelSelector.from_ray({"market-type": "spot"})


def planned_by_selectors(inp: PlanningInput) -> Plan:
    """The planner's plan, as if the 20 tasks asked market-type=spot (16) or spot then any
    node (4) and went to group cpu by those selectors."""
    fallback = selectors_of((SPOT, LabelSelector()))
    placed = (
        Placed("cpu", 16, (SPOT,), SPOT, (Resources.of(CPU=5),)),
        Placed("cpu", 4, fallback, SPOT, (Resources.of(CPU=5),)),
    )
    return dataclasses.replace(plan(inp), placed=placed)


async def test_the_label_selectors_behind_a_target_are_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Group cpu's target comes from demand asking spot (and spot then any node): the table
    gets a SELECTORS column naming both lists; gpu, with none, shows ``-``."""
    server = await started(planner=planned_by_selectors)
    try:
        argv = [f"--address=127.0.0.1:{server.port}", "--cluster=ray", "--group=cpu", "--group=gpu"]
        assert await status(*argv) == 0
        assert await status(*argv, "--output=json") == 0
    finally:
        await server.stop(grace_s=0)
    out = capsys.readouterr().out
    rows = table(out)
    assert rows[0] == ["CLUSTER", "GROUP", "TARGET", "ACTIVE", "DATA", "AGE", "SELECTORS"]
    assert rows[1:3] == [
        ["ray", "cpu", "10", "true", "3.0", "s", "market-type=spot|market-type=spot;*"],
        ["ray", "gpu", "0", "false", "3.0", "s", "-"],
    ]
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [row["selectors"] for row in lines] == ["market-type=spot|market-type=spot;*", ""]


async def test_mtls_like_keda_and_json_output(
    mtls: tuple[ScalerServer, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """With KEDA's client certificate the answers come over mTLS; JSON has one line per group."""
    server, flags = mtls
    argv = [f"--address=localhost:{server.port}", "--cluster=ray", "--group=cpu", *flags]
    assert await status(*argv, "--output=json") == 0
    out = capsys.readouterr().out.splitlines()
    (row,) = [json.loads(line) for line in out if line.startswith("{")]
    assert row == {
        "cluster": "ray",
        "group": "cpu",
        "target": 10,
        "active": True,
        "data_age_s": AGE_S,
        "error": None,
        "selectors": "",
    }


async def test_mtls_without_a_client_certificate_is_refused(
    mtls: tuple[ScalerServer, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the CA, no client certificate: the handshake fails, exit 1, UNAVAILABLE printed."""
    server, flags = mtls
    argv = [f"--address=localhost:{server.port}", "--cluster=ray", "--group=cpu", flags[0]]
    assert await status(*argv, "--timeout=3") == 1
    assert "UNAVAILABLE" in capsys.readouterr().out


async def test_an_unknown_group_is_reported_and_exits_1(
    plain: ScalerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A group the scaler does not know: its row shows NOT_FOUND, the others still answer."""
    address = f"127.0.0.1:{plain.port}"
    assert await status("--address", address, "--cluster=ray", "--group=cpu", "--group=nope") == 1
    rows = table(capsys.readouterr().out)[1:]
    assert rows[0][:4] == ["ray", "cpu", "10", "true"]
    assert rows[1][:5] == ["ray", "nope", "-", "-", "NOT_FOUND:"]


async def test_another_namespace_does_not_see_the_cluster(
    plain: ScalerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a ScaledObject of namespace team-b: ray/ray is not its cluster, NOT_FOUND, exit 1."""
    address = f"127.0.0.1:{plain.port}"
    assert (
        await status("--address", address, "--namespace=team-b", "--cluster=ray", "--group=cpu")
        == 1
    )
    rows = table(capsys.readouterr().out)[1:]
    assert rows[0][:5] == ["ray", "cpu", "-", "-", "NOT_FOUND:"]
    assert "team-b/ray" in rows[0][-3]


async def test_groups_from_a_cluster_spec_file(
    plain: ScalerServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--cluster-spec asks for every group of the file's cluster."""
    spec = tmp_path / "cluster.yaml"
    spec.write_text(
        "cluster: ray\nworkerGroups:\n"
        "  - {name: cpu, resources: {CPU: 10}}\n  - {name: gpu, resources: {CPU: 8}}\n"
    )
    assert await status(f"--address=127.0.0.1:{plain.port}", f"--cluster-spec={spec}") == 0
    groups = [row[1] for row in table(capsys.readouterr().out)[1:]]
    assert groups == ["cpu", "gpu"]


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--address=nohost", "--cluster=ray", "--group=cpu"], "--address"),
        (["--address=h:1", "--group=cpu"], "--cluster"),
        (["--address=h:1", "--cluster=ray"], "--group"),
        (["--address=h:1", "--cluster=ray", "--group=cpu", "--ca-cert=/nonexistent"], "--ca-cert"),
        (
            ["--address=h:1", "--cluster=ray", "--group=cpu", "--tls-client-cert=/x"],
            "--tls-client-key",
        ),
    ],
    ids=["address", "no-cluster", "no-group", "missing-ca", "cert-without-key"],
)
def test_bad_flags_exit_2_naming_the_flag(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad flags: exit 2 and one line naming the flag, before any call."""
    assert main(["status", *argv]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"keda-ray-scaler status: {flag}: ")
