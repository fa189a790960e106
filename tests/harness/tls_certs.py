"""Certificates made in the test with ``cryptography``: a CA, server and client certs, a wrong CA.

EC P-256 keys, valid from one hour ago for one day. The server certificate names
``localhost`` and ``127.0.0.1``.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pem:
    """A certificate and its key, PEM encoded."""

    cert: bytes
    key: bytes

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """Write ``<stem>.crt`` and ``<stem>.key`` (mode 0600); return their paths."""
        cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        cert.write_bytes(self.cert)
        key.write_bytes(self.key)
        key.chmod(0o600)
        return cert, key


@dataclass(frozen=True)
class Certs:
    """Everything a TLS test needs."""

    ca: Pem
    server: Pem
    client: Pem  # KEDA's: CN keda, as the chart issues it
    wrong_ca: Pem
    wrong_client: Pem  # signed by the wrong CA
    server2: Pem  # a second server certificate from the right CA (rotation)
    impostor: Pem  # a client certificate from the right CA naming someone else (team-a)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _build(
    cn: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    server: bool = False,
) -> bytes:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer else (_name(cn), key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    cert = builder.sign(issuer_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM)


def _ca(cn: str) -> tuple[Pem, x509.Name, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    return Pem(_build(cn, key, None, ca=True), _key_pem(key)), _name(cn), key


def _leaf(cn: str, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey], *, server: bool) -> Pem:
    key = ec.generate_private_key(ec.SECP256R1())
    return Pem(_build(cn, key, issuer, server=server), _key_pem(key))


def make_certs() -> Certs:
    """A fresh set of certificates."""
    ca, ca_name, ca_key = _ca("test-ca")
    wrong_ca, wrong_name, wrong_key = _ca("wrong-ca")
    return Certs(
        ca=ca,
        server=_leaf("scaler", (ca_name, ca_key), server=True),
        client=_leaf("keda", (ca_name, ca_key), server=False),
        wrong_ca=wrong_ca,
        wrong_client=_leaf("intruder", (wrong_name, wrong_key), server=False),
        server2=_leaf("scaler-rotated", (ca_name, ca_key), server=True),
        impostor=_leaf("team-a", (ca_name, ca_key), server=False),
    )
