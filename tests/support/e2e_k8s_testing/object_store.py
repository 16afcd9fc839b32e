"""The jobs' S3 server: the local cluster's MinIO pod, and what any S3 server says it is.

On the local target the object store is MinIO in namespace ``minio``
(``devtools/kube_local/manifests/minio.yaml``, the image ``scripts/minio-image.sh``
builds): :func:`deploy_minio` creates its Secret with a random password (or keeps the one
an earlier call created), applies the
manifest with the image built here, waits for the rollout and for the server to answer
this process at the Service's ClusterIP (kube-proxy's rules apply to traffic from the
host, which has a route to the pod network), and returns the :class:`targets.S3Access`
the tests use: the pods reach it as ``minio.minio.svc:9000``.

:func:`server_identity` asks a server what it is: the ``Server`` header of its health
endpoint (``MinIO`` for MinIO) and, where the keys are an admin's, the release the admin
info API reports (``RELEASE.2026-02-12T20-18-48Z``, as ``minio --version`` names it).

>>> release_tag("2026-02-12T20:18:48Z")
'RELEASE.2026-02-12T20-18-48Z'
>>> image_release("cjob-minio:RELEASE.2026-02-12T20-18-48Z")
'RELEASE.2026-02-12T20-18-48Z'
"""

from __future__ import annotations

import base64
import dataclasses
import json
import pathlib
import re
import secrets
import time
import urllib.error
import urllib.request

import urllib3
from minio import MinioAdmin
from minio import error as minio_error
from minio.credentials.providers import StaticProvider

from e2e_k8s_testing import targets
from e2e_k8s_testing.cluster import Cluster, ScenarioError

ROOT = pathlib.Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "devtools" / "kube_local" / "manifests" / "minio.yaml"
NAMESPACE = "minio"
ACCESS_KEY = "e2e-access"
_IMAGE_LINE = re.compile(r"(?m)^(\s+image:\s*)cjob-minio:\S+$")


def release_tag(version: str) -> str:
    """MinIO's release tag of the version its admin API reports (an ISO time)."""
    return "RELEASE." + version.replace(":", "-")


def image_release(image: str) -> str:
    """The release in the tag of an image ``scripts/minio-image.sh`` built."""
    return image.rsplit(":", 1)[1]


@dataclasses.dataclass(frozen=True)
class ServerIdentity:
    """What an S3 server says it is: its ``Server`` header and, if the admin API
    answered, its release (``""`` otherwise)."""

    server: str
    release: str

    def describe(self) -> str:
        return f"{self.server} {self.release}".strip()


def deploy_minio(cluster: Cluster, image: str, timeout: float = 180.0) -> targets.S3Access:
    """MinIO in namespace ``minio`` running ``image``, ready, reachable from here."""
    manifest, found = _IMAGE_LINE.subn(rf"\g<1>{image}", MANIFEST.read_text())
    if found != 1:
        raise ScenarioError(f"{MANIFEST} names no cjob-minio image to replace with {image}")
    cluster.kubectl_run("apply", "-f", "-", stdin=_namespace_only(manifest))
    secret_key = _existing_password(cluster) or _create_secret(cluster)
    cluster.kubectl_run("apply", "-f", "-", stdin=manifest)
    cluster.run(
        "kubectl",
        *("-n", NAMESPACE, "rollout", "status", "deployment/minio", f"--timeout={timeout:.0f}s"),
        timeout=timeout + 30,
    )
    address = cluster.kubectl_run(
        "-n", NAMESPACE, "get", "service", "minio", "-o", "jsonpath={.spec.clusterIP}"
    ).strip()
    endpoint = f"http://{address}:9000"
    wait_ready(endpoint, timeout)
    return targets.S3Access(
        host_endpoint=endpoint,
        cluster_endpoint=targets.CLUSTER_S3_ENDPOINT,
        access_key=ACCESS_KEY,
        secret_key=secret_key,
    )


def _existing_password(cluster: Cluster) -> str:
    """The password of a Secret ``minio`` an earlier run created (``""`` if none)."""
    try:
        encoded = cluster.kubectl_run(
            "-n", NAMESPACE, "get", "secret", "minio", "-o", "jsonpath={.data.MINIO_ROOT_PASSWORD}"
        )
    except ScenarioError:
        return ""
    return base64.b64decode(encoded.strip()).decode()


def _create_secret(cluster: Cluster) -> str:
    secret_key = secrets.token_urlsafe(24)
    cluster.kubectl_run(
        "-n",
        NAMESPACE,
        "create",
        "secret",
        "generic",
        "minio",
        f"--from-literal=MINIO_ROOT_USER={ACCESS_KEY}",
        f"--from-literal=MINIO_ROOT_PASSWORD={secret_key}",
    )
    return secret_key


def _namespace_only(manifest: str) -> str:
    """The manifest's first document, the Namespace (the Secret goes in before the pod)."""
    first = manifest.split("\n---\n", 1)[0]
    if "kind: Namespace" not in first:
        raise ScenarioError(f"{MANIFEST} does not start with the Namespace")
    return first


def wait_ready(endpoint: str, timeout: float) -> None:
    """Until ``/minio/health/ready`` answers 200 from this process, or ScenarioError."""
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{endpoint}/minio/health/ready", timeout=5) as reply:
                if reply.status == 200:
                    return
                last = f"HTTP {reply.status}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.5)
    raise ScenarioError(f"MinIO at {endpoint} was not ready within {timeout:.0f} s: {last}")


def server_identity(access: targets.S3Access) -> ServerIdentity:
    """The ``Server`` header of ``access``'s server and, when its keys may ask the admin
    info API, the release the server runs."""
    request = urllib.request.Request(f"{access.host_endpoint}/minio/health/live", method="GET")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            server = reply.headers.get("Server", "")
    except urllib.error.HTTPError as exc:  # a server that is not MinIO may answer 4xx
        server = exc.headers.get("Server", "")
    host = access.host_endpoint.split("://", 1)[1]
    admin = MinioAdmin(
        endpoint=host,
        credentials=StaticProvider(access.access_key, access.secret_key),
        secure=access.host_endpoint.startswith("https://"),
    )
    try:
        info = json.loads(admin.info())
    except (minio_error.MinioAdminException, urllib3.exceptions.HTTPError, ValueError):
        # no admin API there, or keys without admin rights
        return ServerIdentity(server=server, release="")
    versions = {s.get("version", "") for s in info.get("servers", [])}
    release = release_tag(versions.pop()) if len(versions) == 1 else ""
    return ServerIdentity(server=server, release=release)
