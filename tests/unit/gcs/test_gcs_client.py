"""The GCS client against a real ``grpc.aio`` server on 127.0.0.1 playing Ray's GCS (no Ray).

The server implements Ray's ``AutoscalerStateService`` and ``InternalKVGcsService`` from the
generated stubs, records what each call brought (request and metadata) and answers what the test
set; a test can make it sleep, or refuse with a status.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
from grpc import aio

from keda_ray_scaler.agent.interfaces import DrainResult
from keda_ray_scaler.agent.ray.drain import DRAIN_NODE_REASON_IDLE_TERMINATION, RayDrainer
from keda_ray_scaler.agent.ray.ray_state import RayReader
from keda_ray_scaler.agent.ray.ray_status import V1_REQUEST_KEY
from keda_ray_scaler.demo.raylets import free_port
from keda_ray_scaler.errors import RayError
from keda_ray_scaler.gcs import auth, versions
from keda_ray_scaler.gcs._generated import autoscaler_pb2 as pb
from keda_ray_scaler.gcs._generated import (
    autoscaler_pb2_grpc,
    gcs_service_pb2,
    gcs_service_pb2_grpc,
)
from keda_ray_scaler.gcs.client import GcsClient, GcsConnection
from keda_ray_scaler.model import Bundle, ClusterSpec, Resources, WorkerGroup

SPEC = ClusterSpec("demo", (WorkerGroup("cpu", Resources.of(CPU=10), max_replicas=50),))
NODE_ID = "ab" * 28
TOKEN = "s3cret-token"


@dataclass
class FakeGcs:
    """What the fake GCS answers, and what it was asked."""

    status: Any = field(default_factory=pb.GetClusterStatusReply)
    kv: dict[tuple[bytes, bytes], bytes] = field(default_factory=dict)
    drain: Any = field(default_factory=lambda: pb.DrainNodeReply(is_accepted=True))
    sleep_s: float = 0.0
    refuse: grpc.StatusCode | None = None
    kv_status: int | None = None
    calls: list[tuple[str, Any, dict[str, str]]] = field(default_factory=list)

    async def answer(self, rpc: str, request: Any, context: aio.ServicerContext, reply: Any) -> Any:
        self.calls.append((rpc, request, dict(context.invocation_metadata() or ())))
        if self.sleep_s:
            await asyncio.sleep(self.sleep_s)
        if self.refuse is not None:
            await context.abort(self.refuse, f"refused by the test ({self.refuse.name})")
        return reply


class Autoscaler(autoscaler_pb2_grpc.AutoscalerStateServiceServicer):
    def __init__(self, gcs: FakeGcs) -> None:
        self.gcs = gcs

    async def GetClusterStatus(self, request: Any, context: Any) -> Any:
        return await self.gcs.answer("GetClusterStatus", request, context, self.gcs.status)

    async def DrainNode(self, request: Any, context: Any) -> Any:
        return await self.gcs.answer("DrainNode", request, context, self.gcs.drain)


class InternalKV(gcs_service_pb2_grpc.InternalKVGcsServiceServicer):
    def __init__(self, gcs: FakeGcs) -> None:
        self.gcs = gcs

    async def InternalKVGet(self, request: Any, context: Any) -> Any:
        value = self.gcs.kv.get((request.namespace, request.key))
        code = self.gcs.kv_status if self.gcs.kv_status is not None else (0 if value else 17)
        reply = gcs_service_pb2.InternalKVGetReply(
            status=gcs_service_pb2.GcsStatus(code=code, message="" if code == 0 else "no key"),
            value=value or b"",
        )
        return await self.gcs.answer("InternalKVGet", request, context, reply)


@dataclass
class Served:
    gcs: FakeGcs
    address: str


@pytest_asyncio.fixture
async def served() -> AsyncIterator[Served]:
    """A fake GCS listening on 127.0.0.1."""
    gcs = FakeGcs()
    server = aio.server()
    autoscaler_pb2_grpc.add_AutoscalerStateServiceServicer_to_server(Autoscaler(gcs), server)
    gcs_service_pb2_grpc.add_InternalKVGcsServiceServicer_to_server(InternalKV(gcs), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield Served(gcs, f"127.0.0.1:{port}")
    finally:
        await server.stop(None)


@pytest_asyncio.fixture
async def client(served: Served) -> AsyncIterator[GcsClient]:
    """A client of the fake GCS, without a token."""
    made = GcsClient(served.address)
    yield made
    await made.close()


def one_node_status() -> Any:
    reply = pb.GetClusterStatusReply()
    state = reply.cluster_resource_state
    node = state.node_states.add(
        node_id=bytes.fromhex(NODE_ID),
        instance_id="ray-cpu-a",
        ray_node_type_name="cpu",
        status=pb.RUNNING,
        idle_duration_ms=2500,
    )
    node.total_resources["CPU"] = 10.0
    node.available_resources["CPU"] = 10.0
    demand = state.pending_resource_requests.add(count=20)
    demand.request.resources_bundle["CPU"] = 5.0
    return reply


async def test_cluster_status_is_the_message_the_gcs_sent(
    served: Served, client: GcsClient
) -> None:
    """GetClusterStatus returns Ray's reply as sent; no token configured, no authorization."""
    served.gcs.status = one_node_status()
    reply = await client.get_cluster_status(timeout_s=5)
    assert reply.SerializeToString() == served.gcs.status.SerializeToString()
    [(rpc, _, metadata)] = served.gcs.calls
    assert rpc == "GetClusterStatus"
    assert "authorization" not in metadata


async def test_cluster_status_bytes_are_the_reply_as_sent_unparsed(
    served: Served, client: GcsClient
) -> None:
    """The look between polls gets the same call's reply as bytes."""
    served.gcs.status = one_node_status()
    raw = await client.get_cluster_status_bytes(timeout_s=5)
    assert raw == served.gcs.status.SerializeToString()
    assert [rpc for rpc, _, _ in served.gcs.calls] == ["GetClusterStatus"]


async def test_a_configured_token_goes_as_a_bearer_authorization_on_every_call(
    served: Served,
) -> None:
    """``authorization: Bearer <token>`` on each of the three RPCs."""
    served.gcs.kv[(b"", V1_REQUEST_KEY)] = b"[]"
    made = GcsClient(served.address, token=TOKEN)
    try:
        await made.get_cluster_status(timeout_s=5)
        await made.internal_kv_get(V1_REQUEST_KEY, None, timeout_s=5)
        await made.drain_node(NODE_ID, 1, "idle", 0, timeout_s=5)
    finally:
        await made.close()
    assert [(rpc, md.get("authorization")) for rpc, _, md in served.gcs.calls] == [
        ("GetClusterStatus", f"Bearer {TOKEN}"),
        ("InternalKVGet", f"Bearer {TOKEN}"),
        ("DrainNode", f"Bearer {TOKEN}"),
    ]


async def test_internal_kv_get_returns_the_value_or_none_when_ray_says_not_found(
    served: Served, client: GcsClient
) -> None:
    """The value under the key (empty namespace for None), None for Ray's NotFound status."""
    served.gcs.kv[(b"", b"k")] = b"v1"
    served.gcs.kv[(b"ns", b"k")] = b"v2"
    assert await client.internal_kv_get(b"k", None, timeout_s=5) == b"v1"
    assert await client.internal_kv_get(b"k", b"ns", timeout_s=5) == b"v2"
    assert await client.internal_kv_get(b"absent", None, timeout_s=5) is None
    served.gcs.kv_status = 5  # Ray's IOError
    with pytest.raises(RayError, match=r"InternalKVGet b'k': Ray status 5: no key"):
        await client.internal_kv_get(b"k", None, timeout_s=5)


async def test_drain_node_sends_the_binary_id_and_returns_rays_verdict(
    served: Served, client: GcsClient
) -> None:
    """DrainNode carries the node id as bytes, the reason, message and deadline."""
    served.gcs.drain = pb.DrainNodeReply(is_accepted=False, rejection_reason_message="busy")
    verdict = await client.drain_node(
        NODE_ID, DRAIN_NODE_REASON_IDLE_TERMINATION, "idle 60s", 1234, timeout_s=5
    )
    assert verdict == (False, "busy")
    [(_, request, _)] = served.gcs.calls
    assert request == pb.DrainNodeRequest(
        node_id=bytes.fromhex(NODE_ID),
        reason=pb.DRAIN_NODE_REASON_IDLE_TERMINATION,
        reason_message="idle 60s",
        deadline_timestamp_ms=1234,
    )


async def test_a_gcs_slower_than_the_deadline_is_a_ray_error_naming_the_call(
    served: Served, client: GcsClient
) -> None:
    """The call ends at its deadline, not when the GCS answers."""
    served.gcs.sleep_s = 10.0
    started = time.monotonic()
    with pytest.raises(RayError) as caught:
        await client.get_cluster_status(timeout_s=0.3)
    assert time.monotonic() - started < 2.0
    assert str(caught.value) == (
        f"GCS {served.address}: GetClusterStatus: no answer within 0.3s (DEADLINE_EXCEEDED)"
    )


async def test_nothing_listening_is_unavailable_naming_call_and_address() -> None:
    """A refused connection fails at once (no wait for a GCS to come up)."""
    address = f"127.0.0.1:{free_port()}"
    made = GcsClient(address)
    started = time.monotonic()
    try:
        with pytest.raises(RayError, match=rf"^GCS {address}: InternalKVGet: GCS unavailable "):
            await made.internal_kv_get(b"k", None, timeout_s=5)
    finally:
        await made.close()
    assert time.monotonic() - started < 4.0


@pytest.mark.parametrize("token", [None, TOKEN])
async def test_unauthenticated_says_token_authentication_failed_and_whether_one_was_sent(
    served: Served, token: str | None
) -> None:
    """Ray's answer to a missing or wrong token, in words an operator can act on."""
    served.gcs.refuse = grpc.StatusCode.UNAUTHENTICATED
    made = GcsClient(served.address, token=token)
    try:
        with pytest.raises(RayError) as caught:
            await made.get_cluster_status(timeout_s=5)
    finally:
        await made.close()
    sent = "the token sent was refused" if token else "no token was sent"
    assert str(caught.value).startswith(
        f"GCS {served.address}: GetClusterStatus: Ray token authentication failed, {sent} "
        "(UNAUTHENTICATED: refused by the test (UNAUTHENTICATED)); the token comes from "
    )


async def test_other_statuses_name_the_code(served: Served, client: GcsClient) -> None:
    """Anything else: the call, the code and Ray's details."""
    served.gcs.refuse = grpc.StatusCode.INTERNAL
    with pytest.raises(RayError, match=r"DrainNode failed \(INTERNAL: refused by the test"):
        await client.drain_node(NODE_ID, 1, "idle", 0, timeout_s=5)


async def test_a_bad_node_id_or_timeout_is_refused_before_any_call(
    served: Served, client: GcsClient
) -> None:
    """No call leaves with a malformed id or a deadline that is not in the future."""
    with pytest.raises(RayError, match="not a hex node id"):
        await client.drain_node("zz", 1, "idle", 0, timeout_s=5)
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        await client.get_cluster_status(timeout_s=0)
    assert served.gcs.calls == []


# --- the agent's reader and drainer over the client -------------------------------------------


async def test_the_reader_parses_the_status_and_reads_the_v1_key_without_constraints(
    served: Served,
) -> None:
    """RayReader over GcsConnection: one status call, then the v1 KV key (no v2 constraints)."""
    served.gcs.status = one_node_status()
    served.gcs.kv[(b"", V1_REQUEST_KEY)] = b'[{"GPU": 1}, {"GPU": 1}]'
    gcs = GcsConnection(served.address)
    try:
        state = await RayReader(gcs, SPEC, timeout_s=5, now=lambda: 1_700_000_000.0).read()
    finally:
        await gcs.close()
    idle = [(n.pod, n.group, n.idle_at(1_700_000_000.0)) for n in state.nodes]
    assert idle == [("ray-cpu-a", "cpu", 2.5)]
    assert state.demand.bundles == (Bundle(Resources.of(CPU=5), 20),)
    assert state.demand.constraints == (Bundle(Resources.of(GPU=1), 2),)
    assert [rpc for rpc, _, _ in served.gcs.calls] == ["GetClusterStatus", "InternalKVGet"]


async def test_a_failed_read_makes_the_next_one_use_a_new_client(served: Served) -> None:
    """After a RayError the connection drops its client (new channel, token read again)."""
    gcs = GcsConnection(served.address)
    reader = RayReader(gcs, SPEC, timeout_s=5)
    try:
        first = gcs.get()
        served.gcs.refuse = grpc.StatusCode.UNAVAILABLE
        with pytest.raises(RayError, match="GCS unavailable"):
            await reader.read()
        served.gcs.refuse = None
        await reader.read()
        assert gcs.get() is not first
    finally:
        await gcs.close()


async def test_the_drainer_returns_rays_verdict_and_a_failed_call_as_a_result(
    served: Served,
) -> None:
    """Accepted, rejected with Ray's message, and a refused call as a rejected DrainResult."""
    gcs = GcsConnection(served.address)
    drainer = RayDrainer(gcs.get, timeout_s=5)
    try:
        assert await drainer.drain(NODE_ID, "idle", 0) == DrainResult(True, "")
        served.gcs.drain = pb.DrainNodeReply(is_accepted=False, rejection_reason_message="busy")
        assert await drainer.drain(NODE_ID, "idle", 0) == DrainResult(False, "busy")
        served.gcs.refuse = grpc.StatusCode.UNAUTHENTICATED
        result = await drainer.drain(NODE_ID, "idle", 0)
    finally:
        await gcs.close()
    assert not result.accepted
    assert result.rejection.startswith(
        f"drain_node failed: RayError: GCS {served.address}: DrainNode: Ray token authentication"
    )


async def test_the_connection_reads_the_token_from_the_environment(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GcsConnection's default client carries RAY_AUTH_TOKEN."""
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    gcs = GcsConnection(served.address)
    try:
        await gcs.get().get_cluster_status(timeout_s=5)
    finally:
        await gcs.close()
    assert served.gcs.calls[0][2].get("authorization") == f"Bearer {TOKEN}"


# --- which token: Ray's sources, in Ray's order -----------------------------------------------


def test_the_token_comes_from_ray_auth_token_first(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("from-path\n")
    env = {"RAY_AUTH_TOKEN": "  from-env \n", "RAY_AUTH_TOKEN_PATH": str(path)}
    assert auth.load_token(env) == "from-env"


def test_then_from_the_first_line_of_the_token_path_then_from_home(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(" from-path \nsecond line\n")
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("from-home\n")
    assert auth.load_token({"RAY_AUTH_TOKEN_PATH": str(path), "HOME": str(tmp_path)}) == (
        "from-path"
    )
    assert auth.load_token({"HOME": str(tmp_path)}) == "from-home"
    assert auth.load_token({"HOME": str(tmp_path / "nowhere")}) is None


def test_auth_mode_disabled_sends_nothing_and_token_mode_needs_a_token(tmp_path: Path) -> None:
    assert auth.load_token({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "x"}) is None
    with pytest.raises(RayError, match="RAY_AUTH_MODE=token but no token"):
        auth.load_token({"RAY_AUTH_MODE": "token", "HOME": str(tmp_path)})
    with pytest.raises(RayError, match=r"RAY_AUTH_TOKEN_PATH is set but .* cannot be read"):
        auth.load_token({"RAY_AUTH_TOKEN_PATH": str(tmp_path / "missing")})


def test_the_metadata_is_a_bearer_authorization() -> None:
    assert auth.metadata(TOKEN) == (("authorization", f"Bearer {TOKEN}"),)
    assert auth.metadata(None) == ()


# --- the head's Ray version: read before anything else, refused outside the range ------------


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        ("2.10.0", None),
        ("2.10.0rc1", None),
        ("2.30.0", None),
        ("2.47.1", None),
        ("2.60.0", None),
        ("2.60.7", None),
        ("2.9.3", "Ray 2.9.3 is older than the oldest supported, 2.10.0 to 2.60.x"),
        ("1.13.1", "Ray 1.13.1 is older than the oldest supported, 2.10.0 to 2.60.x"),
        ("2.61.0", "Ray 2.61.0 is newer than the newest supported, 2.10.0 to 2.60.x"),
        ("3.0.0", "Ray 3.0.0 is newer than the newest supported, 2.10.0 to 2.60.x"),
        (
            "3.0.0.dev0",
            "Ray '3.0.0.dev0' is not a released Ray version; supported: 2.10.0 to 2.60.x",
        ),
        ("latest", "Ray 'latest' is not a released Ray version; supported: 2.10.0 to 2.60.x"),
    ],
)
def test_a_version_outside_2_10_to_2_60_is_refused_with_one_line(
    version: str, problem: str | None
) -> None:
    assert versions.unsupported(version) == problem


def test_the_version_is_the_cluster_metadata_ray_version() -> None:
    assert versions.parse_cluster_metadata(
        b'{"ray_version": "2.47.1", "python_version": "3.11"}'
    ) == ("2.47.1")
    with pytest.raises(RayError, match="CLUSTER_METADATA: not JSON"):
        versions.parse_cluster_metadata(b"{")
    with pytest.raises(RayError, match="CLUSTER_METADATA: no ray_version"):
        versions.parse_cluster_metadata(b'{"python_version": "3.11"}')


def metadata_of(version: str) -> dict[tuple[bytes, bytes], bytes]:
    """The fake GCS's KV holding a head's cluster metadata of ``version``."""
    key = (versions.CLUSTER_NAMESPACE, versions.CLUSTER_METADATA_KEY)
    return {key: json.dumps({"ray_version": version, "python_version": "3.11.7"}).encode()}


async def test_the_reader_checks_the_version_once_before_its_first_read(served: Served) -> None:
    """A supported version is read once; the status then as before."""
    served.gcs.status = one_node_status()
    served.gcs.kv.update(metadata_of("2.30.0"))
    gcs = GcsConnection(served.address)
    reader = RayReader(gcs, SPEC, timeout_s=5, on_unsupported=lambda exc: None)
    try:
        await reader.read()
        await reader.read()
    finally:
        await gcs.close()
    assert reader.ray_version == "2.30.0"
    asked = [(rpc, getattr(req, "key", b"")) for rpc, req, _ in served.gcs.calls]
    assert asked[0] == ("InternalKVGet", versions.CLUSTER_METADATA_KEY)
    assert [rpc for rpc, _ in asked[1:]] == ["GetClusterStatus", "InternalKVGet"] * 2


async def test_an_unsupported_version_is_refused_before_anything_is_read(served: Served) -> None:
    """Ray 2.9.3: the callback gets it, the read raises it, no status is asked."""
    served.gcs.status = one_node_status()
    served.gcs.kv.update(metadata_of("2.9.3"))
    refused: list[versions.UnsupportedRayVersion] = []
    gcs = GcsConnection(served.address)
    reader = RayReader(gcs, SPEC, timeout_s=5, on_unsupported=refused.append)
    try:
        with pytest.raises(versions.UnsupportedRayVersion) as raised:
            await reader.read()
    finally:
        await gcs.close()
    assert refused == [raised.value]
    assert raised.value.version == "2.9.3"
    assert str(raised.value) == (
        f"GCS {served.address}: Ray 2.9.3 is older than the oldest supported, 2.10.0 to 2.60.x"
    )
    assert [rpc for rpc, _, _ in served.gcs.calls] == ["InternalKVGet"]


async def test_no_version_yet_is_a_failed_read_not_a_read_of_an_unknown_ray(
    served: Served,
) -> None:
    """A head that has not written its metadata yet: the read fails, and is tried next poll."""
    served.gcs.status = one_node_status()
    gcs = GcsConnection(served.address)
    reader = RayReader(gcs, SPEC, timeout_s=5, on_unsupported=lambda exc: None)
    try:
        with pytest.raises(RayError, match=r"no Ray version yet \(CLUSTER_METADATA not written\)"):
            await reader.read()
        served.gcs.kv.update(metadata_of("2.60.0"))
        assert (await reader.read()).nodes
    finally:
        await gcs.close()
    assert reader.ray_version == "2.60.0"


def http_get(url: str) -> tuple[int, str]:
    """The status and body of a GET (an error status is an answer too)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def http_until(url: str, status: int, timeout_s: float = 30.0) -> tuple[int, str]:
    """GET ``url`` until it answers ``status`` (or the time is up); the last answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            got = await asyncio.to_thread(http_get, url)
        except OSError:  # not listening yet
            got = (0, "")
        if got[0] == status or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.2)


async def test_an_unsupported_ray_keeps_the_agent_up_unready_and_a_supported_one_is_read(
    served: Served, tmp_path: Path
) -> None:
    """`keda-ray-scaler agent` against a Ray 2.9.3 head (issue 35: it exited 2, a crash loop
    under Kubernetes): the agent stays up, alive (/healthz 200) but not ready (/readyz 503),
    both naming the version and the range; it reads nothing else and exports no fresh data
    (success 0), and counts the refusal. The head restarted on Ray 2.60: read, ready."""
    served.gcs.status = one_node_status()
    served.gcs.kv.update(metadata_of("2.9.3"))
    spec = tmp_path / "cluster.yaml"
    spec.write_text(
        json.dumps({"cluster": "demo", "workerGroups": [{"name": "cpu", "resources": {"CPU": 10}}]})
    )
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "keda_ray_scaler", "agent", "--cluster-spec", str(spec), "--no-scale-down"),
        *("--gcs-address", served.address, "--host", "127.0.0.1", "--port", str(port)),
        *("--interval", "0.2", "--log-format", "console", "--log-level", "error"),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    refused = (
        f"GCS {served.address}: Ray 2.9.3 is older than the oldest supported, 2.10.0 to 2.60.x"
    )
    try:
        status, body = await http_until(base + "/readyz", 503)
        assert status == 503
        assert body.startswith(f"refused: {refused}: nothing read (refused ")
        status, body = await asyncio.to_thread(http_get, base + "/healthz")
        assert (status, body.startswith(f"refused: {refused}")) == (200, True)
        _, text = await asyncio.to_thread(http_get, base + "/metrics")
        assert 'ray_scaler_snapshot_success{cluster="demo"} 0.0' in text.splitlines()
        assert 'reason="unsupported_ray_version"' in text
        assert "GetClusterStatus" not in [rpc for rpc, _, _ in served.gcs.calls]
        assert proc.returncode is None
        served.gcs.kv.update(metadata_of("2.60.0"))  # the head restarted on a supported Ray
        status, body = await http_until(base + "/readyz", 200)
        assert (status, body.split(":")[0]) == (200, "fresh")
        _, text = await asyncio.to_thread(http_get, base + "/metrics")
        assert 'ray_scaler_snapshot_success{cluster="demo"} 1.0' in text.splitlines()
    finally:
        if proc.returncode is None:
            proc.terminate()
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert (proc.returncode, err.decode()) == (0, "")
