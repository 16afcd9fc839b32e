"""The control plane's credentials: one CA, serving and client certificates, the
ServiceAccount signing key, and a kubeconfig per client.

Files under ``STATE/pki`` (created once, reused by later starts, so a kubeconfig a user
exported stays valid across ``down``/``up``):

* ``ca.crt``/``ca.key``: the cluster CA; it signs every certificate below, the API
  server trusts client certificates it signed (``--client-ca-file``) and pods get it as
  the ``ca.crt`` of their ServiceAccount token volume;
* ``apiserver.crt``/``.key``: serving, valid for ``localhost``, ``127.0.0.1``, ``::1``,
  the ``kubernetes`` Service's names and its cluster IP;
* ``sa.key``/``sa.pub``: the ServiceAccount token signing key pair;
* ``<client>.crt``/``.key`` for each entry of :data:`CLIENTS` (the user name is the
  common name, the groups are the organisations, as the API server reads them).

``STATE/<client>.kubeconfig`` is written on every start with the bound URL.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import os
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE_CIDR = "10.96.0.0/24"
KUBERNETES_SERVICE_IP = "10.96.0.1"
DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
IPS = ("127.0.0.1", "::1", KUBERNETES_SERVICE_IP)


@dataclasses.dataclass(frozen=True, slots=True)
class Client:
    """A client certificate: ``user`` is its common name, ``groups`` its organisations."""

    file: str
    user: str
    groups: tuple[str, ...] = ()


ADMIN = Client("admin", "kube-admin", ("system:masters",))
CONTROLLER_MANAGER = Client("controller-manager", "system:kube-controller-manager")
SCHEDULER = Client("scheduler", "system:kube-scheduler")
KUBE_PROXY = Client("kube-proxy", "system:kube-proxy")
"""Bound to ``system:node-proxier`` by the API server's bootstrap policy: the real node's
kube-proxy runs as it."""
CLIENTS = (ADMIN, CONTROLLER_MANAGER, SCHEDULER, KUBE_PROXY)


def node_client(node: str) -> Client:
    """The credentials of a node's agent, as the Node authorizer expects them."""
    return Client(f"node-{node}", f"system:node:{node}", ("system:nodes",))


def _write(path: Path, data: bytes, private: bool = False) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    if private:
        os.chmod(tmp, 0o600)
    tmp.replace(path)


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common: str, organisations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organisations]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey) -> Any:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
    )


class Authority:
    """The CA of one state directory; creates what is missing, never replaces."""

    def __init__(self, state: Path) -> None:
        self.dir = state / "pki"
        self.dir.mkdir(parents=True, exist_ok=True)
        if not (self.dir / "ca.crt").exists():
            self._create_ca()
        self._key = serialization.load_pem_private_key((self.dir / "ca.key").read_bytes(), None)
        self._cert = x509.load_pem_x509_certificate((self.dir / "ca.crt").read_bytes())

    def path(self, name: str) -> Path:
        return self.dir / name

    def _create_ca(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        name = _name("cjob-kube-local-ca")
        usage = x509.KeyUsage(
            digital_signature=True,
            key_cert_sign=True,
            crl_sign=True,
            content_commitment=False,
            key_encipherment=False,
            data_encipherment=False,
            key_agreement=False,
            encipher_only=False,
            decipher_only=False,
        )
        cert = (
            _builder(name, name, key)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(usage, critical=True)
            .sign(key, hashes.SHA256())
        )
        _write(self.dir / "ca.key", _key_pem(key), private=True)
        _write(self.dir / "ca.crt", cert.public_bytes(serialization.Encoding.PEM))

    def _issue(
        self,
        file: str,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        sans: list[x509.GeneralName],
    ) -> None:
        if (self.dir / f"{file}.crt").exists():
            return
        key = ec.generate_private_key(ec.SECP256R1())
        builder = _builder(subject, self._cert.subject, key).add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        )
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        _write(self.dir / f"{file}.key", _key_pem(key), private=True)
        _write(self.dir / f"{file}.crt", cert.public_bytes(serialization.Encoding.PEM))

    def serving(self, node_ip: str | None = None) -> tuple[Path, Path]:
        """The API server's certificate (cert, key): the names a client may use for it,
        plus ``node_ip`` when it serves on a node address (a file of its own per address,
        as certificates are never replaced)."""
        ips = (*IPS, node_ip) if node_ip else IPS
        sans: list[x509.GeneralName] = [x509.DNSName(n) for n in DNS_NAMES]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        file = f"apiserver-{node_ip}" if node_ip else "apiserver"
        self._issue(file, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans)
        return self.path(f"{file}.crt"), self.path(f"{file}.key")

    def kubelet_serving(self, node: str, ip: str = "127.0.0.1") -> tuple[Path, Path]:
        """A kubelet's serving certificate for ``node`` at ``ip`` (cert, key): the API
        server checks it against its CA and the node's address for logs and exec."""
        sans: list[x509.GeneralName] = [
            x509.DNSName(node),
            x509.IPAddress(ipaddress.ip_address(ip)),
        ]
        file = f"kubelet-{node}" if ip == "127.0.0.1" else f"kubelet-{node}-{ip}"
        subject = _name(f"system:node:{node}", ("system:nodes",))
        self._issue(file, subject, ExtendedKeyUsageOID.SERVER_AUTH, sans)
        return self.path(f"{file}.crt"), self.path(f"{file}.key")

    def client(self, client: Client) -> None:
        subject = _name(client.user, client.groups)
        self._issue(client.file, subject, ExtendedKeyUsageOID.CLIENT_AUTH, [])

    def service_account_keys(self) -> None:
        if (self.dir / "sa.key").exists():
            return
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        _write(self.dir / "sa.key", _key_pem(key), private=True)
        _write(self.dir / "sa.pub", public)

    def ensure_all(self) -> None:
        self.serving()
        self.service_account_keys()
        for client in CLIENTS:
            self.client(client)

    def write_kubeconfig(
        self, path: Path, url: str, client: Client, namespace: str = "default"
    ) -> Path:
        """A kubeconfig for ``client`` at ``url`` (its files named by absolute path)."""
        self.client(client)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "kube-local",
            "clusters": [
                {
                    "name": "kube-local",
                    "cluster": {
                        "server": url,
                        "certificate-authority": str(self.path("ca.crt").resolve()),
                    },
                }
            ],
            "users": [
                {
                    "name": client.user,
                    "user": {
                        "client-certificate": str(self.path(f"{client.file}.crt").resolve()),
                        "client-key": str(self.path(f"{client.file}.key").resolve()),
                    },
                }
            ],
            "contexts": [
                {
                    "name": "kube-local",
                    "context": {
                        "cluster": "kube-local",
                        "user": client.user,
                        "namespace": namespace,
                    },
                }
            ],
        }
        _write(path, yaml.safe_dump(config).encode(), private=True)
        return path
