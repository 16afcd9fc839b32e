"""The state directory: a CA, the serving certificate, the admin token, a kubeconfig.

Files (created once, reused by later starts): ``ca.crt``/``ca.key`` (the cluster CA,
what pods get as ``ca.crt``), ``apiserver.crt``/``apiserver.key`` (valid for
localhost, 127.0.0.1, ::1 and ``kubernetes.default.svc[.cluster.local]``),
``admin-token`` and ``kubeconfig`` (rewritten on every start with the bound port).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import ssl
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
IPS = ("127.0.0.1", "::1")


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.write_bytes(data)
    if private:
        os.chmod(path, 0o600)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    signer: ec.EllipticCurvePrivateKey,
    ca: bool,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(n) for n in DNS_NAMES]
                + [x509.IPAddress(ipaddress.ip_address(i)) for i in IPS]
            ),
            critical=False,
        )
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
    return builder.sign(signer, hashes.SHA256())


def ensure(state: Path) -> None:
    """Create the CA, the serving certificate and the admin token when missing."""
    state.mkdir(parents=True, exist_ok=True)
    if not (state / "ca.crt").exists():
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-local-ca")])
        ca = _cert("kube-local-ca", ca_key, ca_name, ca_key, ca=True)
        key = ec.generate_private_key(ec.SECP256R1())
        serving = _cert("kube-apiserver", key, ca_name, ca_key, ca=False)
        _write(state / "ca.key", _key_pem(ca_key), private=True)
        _write(state / "apiserver.key", _key_pem(key), private=True)
        _write(state / "apiserver.crt", serving.public_bytes(serialization.Encoding.PEM))
        _write(state / "ca.crt", ca.public_bytes(serialization.Encoding.PEM))
    if not (state / "admin-token").exists():
        _write(state / "admin-token", secrets.token_urlsafe(32).encode(), private=True)


def server_context(state: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(state / "apiserver.crt", state / "apiserver.key")
    return context


def write_kubeconfig(state: Path, url: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kube-local",
        "clusters": [
            {
                "name": "kube-local",
                "cluster": {
                    "server": url,
                    "certificate-authority": str((state / "ca.crt").resolve()),
                },
            }
        ],
        "users": [
            {"name": "kube-admin", "user": {"token": (state / "admin-token").read_text().strip()}}
        ],
        "contexts": [
            {
                "name": "kube-local",
                "context": {"cluster": "kube-local", "user": "kube-admin", "namespace": "default"},
            }
        ],
    }
    path = state / "kubeconfig"
    tmp = state / "kubeconfig.tmp"
    _write(tmp, yaml.safe_dump(config).encode(), private=True)
    tmp.replace(path)
    return path
