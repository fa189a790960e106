"""TLS and mTLS with certificates made in the test; certificate reload from files."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from fake_clock import FakeClock
from rpc_builders import T0, cluster_ref, meta, snapshot
from tls_certs import Certs, make_certs

from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.server import ScalerServer, build_server
from keda_ray_scaler.rpc.target_settings import TargetSettings
from keda_ray_scaler.rpc.tls import TlsFiles
from keda_ray_scaler.sources.base import MemorySource

#: The tests' Ray cluster: ``ray`` in namespace ``ray``.
RAY = cluster_ref("ray")

DEADLINE_S = 5.0


@pytest.fixture(scope="module")
def certs() -> Certs:
    return make_certs()


async def serve(tmp_path: Path, certs: Certs, *, mtls: bool) -> ScalerServer:
    cert, key = certs.server.write(tmp_path, "server")
    ca = tmp_path / "ca.crt"
    ca.write_bytes(certs.ca.cert)
    server = build_server(
        MemorySource({RAY: snapshot(tasks={5: 20})}),
        clock=FakeClock(T0),
        tls=TlsFiles(cert, key, ca if mtls else None),
        target_settings=TargetSettings(refresh_interval_s=3600),
    )
    await server.start()
    return server


@pytest.fixture
async def tls_server(tmp_path: Path, certs: Certs) -> AsyncIterator[ScalerServer]:
    server = await serve(tmp_path, certs, mtls=False)
    yield server
    await server.stop(grace_s=0)


@pytest.fixture
async def mtls_server(tmp_path: Path, certs: Certs) -> AsyncIterator[ScalerServer]:
    server = await serve(tmp_path, certs, mtls=True)
    yield server
    await server.stop(grace_s=0)


async def is_active(port: int, credentials: grpc.ChannelCredentials | None) -> bool:
    target = f"localhost:{port}"
    channel = (
        grpc.aio.secure_channel(target, credentials)
        if credentials
        else grpc.aio.insecure_channel(target)
    )
    async with channel:
        stub = pb_grpc.ExternalScalerStub(channel)
        reply = await stub.IsActive(
            pb.ScaledObjectRef(namespace="ray", scalerMetadata=meta()), timeout=DEADLINE_S
        )
        return bool(reply.result)


def creds(
    certs: Certs, *, trust_wrong_ca: bool = False, client: str | None = None
) -> grpc.ChannelCredentials:
    pem = {"client": certs.client, "wrong_client": certs.wrong_client}.get(client or "")
    return grpc.ssl_channel_credentials(
        root_certificates=(certs.wrong_ca if trust_wrong_ca else certs.ca).cert,
        private_key=pem.key if pem else None,
        certificate_chain=pem.cert if pem else None,
    )


async def test_tls_client_trusting_the_ca_is_served(tls_server: ScalerServer, certs: Certs) -> None:
    """TLS: a client with the right CA gets the answer."""
    assert await is_active(tls_server.port, creds(certs)) is True


@pytest.mark.parametrize("client", ["plaintext", "wrong-ca"])
async def test_tls_refuses_plaintext_and_clients_trusting_another_ca(
    tls_server: ScalerServer, certs: Certs, client: str
) -> None:
    """TLS: a plaintext client and one that trusts a different CA both fail with UNAVAILABLE."""
    credentials = None if client == "plaintext" else creds(certs, trust_wrong_ca=True)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await is_active(tls_server.port, credentials)
    assert info.value.code() is grpc.StatusCode.UNAVAILABLE


async def test_mtls_client_with_a_certificate_from_the_ca_is_served(
    mtls_server: ScalerServer, certs: Certs
) -> None:
    """mTLS: a client certificate signed by the client CA is accepted."""
    assert await is_active(mtls_server.port, creds(certs, client="client")) is True


@pytest.mark.parametrize("client", [None, "wrong_client"], ids=["no-cert", "wrong-ca-cert"])
async def test_mtls_refuses_clients_without_a_valid_certificate(
    mtls_server: ScalerServer, certs: Certs, client: str | None
) -> None:
    """mTLS: no client certificate, or one from another CA, is refused."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await is_active(mtls_server.port, creds(certs, client=client))
    assert info.value.code() is grpc.StatusCode.UNAVAILABLE


def served_certificate(port: int, ca: bytes) -> x509.Certificate:
    """The certificate the server presents in a fresh handshake (blocking)."""
    context = ssl.create_default_context(cadata=ca.decode())
    context.set_alpn_protocols(["h2"])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


async def test_rotated_certificate_files_are_served_without_restart(
    tmp_path: Path, tls_server: ScalerServer, certs: Certs
) -> None:
    """Replacing cert and key files on disk: the next handshake presents the new certificate."""
    first = await asyncio.to_thread(served_certificate, tls_server.port, certs.ca.cert)
    assert first.subject.rfc4514_string() == "CN=scaler"
    staging = tmp_path / "staging"
    staging.mkdir()
    cert, key = certs.server2.write(staging, "server")
    os.replace(key, tmp_path / "server.key")  # atomic renames, as kubelet's symlink swap
    os.replace(cert, tmp_path / "server.crt")
    second = await asyncio.to_thread(served_certificate, tls_server.port, certs.ca.cert)
    assert second.subject.rfc4514_string() == "CN=scaler-rotated"
    assert tls_server.reloader is not None and tls_server.reloader.reloads == 1
    assert await is_active(tls_server.port, creds(certs)) is True


async def test_unreadable_new_files_keep_the_previous_certificate(
    tmp_path: Path, tls_server: ScalerServer, certs: Certs
) -> None:
    """A half-written certificate file is ignored; the old one keeps serving."""
    (tmp_path / "server.crt").write_bytes(b"not a certificate")
    served = await asyncio.to_thread(served_certificate, tls_server.port, certs.ca.cert)
    assert served.subject.rfc4514_string() == "CN=scaler"
    assert tls_server.reloader is not None and tls_server.reloader.reloads == 0
