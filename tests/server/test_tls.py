"""Optional TLS: a server with a certificate, a client that trusts it, and one that does not."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import seaway
from seaway.server import ServerProcess


def _self_signed(tmp_path: Path) -> tuple[Path, Path, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    return tmp_path / "cert.pem", tmp_path / "key.pem", cert_pem


def test_tls_with_a_token(tmp_path: Path) -> None:
    cert, key, cert_pem = _self_signed(tmp_path)
    with ServerProcess(tmp_path / "data", token="t0k", extra_args=("--tls-cert", str(cert), "--tls-key", str(key))) \
            as server:
        url = f"seaways://{server.address}"
        with seaway.connect(url, token="t0k", tls_root_cert=cert_pem) as sw:
            log = sw.logs.create("secure")
            assert log.append(b"over tls") > 0
            assert [i.payload for i in log.read() if isinstance(i, seaway.Record)] == [b"over tls"]
        with seaway.connect(url, token="t0k", retry=seaway.RetryPolicy(attempts_max=1), timeout_s=5) as untrusting, \
                pytest.raises(seaway.UnavailableError):
            untrusting.logs.list()  # the system's roots do not vouch for this certificate
        with seaway.connect(server.url, token="t0k", retry=seaway.RetryPolicy(attempts_max=1), timeout_s=5) as plain, \
                pytest.raises(seaway.UnavailableError):
            plain.logs.list()  # plain text to a TLS port
