"""The local Kubernetes the scenario runs on, and what a cluster of a user would have.

Session fixtures, in the order they start:

* the Docker engine and the project's images (``scripts/docker-smoke.sh --build-only``:
  both Dockerfile targets from this checkout; the engine's cache makes a rebuild of
  an unchanged tree take seconds);
* the local Kubernetes with its kubelet (``scripts/kube-local.sh up`` in a state
  directory of its own), stopped again with every container it ran;
* an S3 server where a cluster would have MinIO: the real SeaweedFS on its own loopback
  address, port 9000, published as the Service ``minio.minio.svc`` (a Service without
  selector and its Endpoints, the Kubernetes way of naming a server outside the cluster);
* the namespaces and the storage Secret the README's install creates.

Where Docker cannot run, everything here skips with one sentence (CI sets
``CJOB_REQUIRE_DOCKER=1``, which turns that into a failure).
"""

from __future__ import annotations

import os
import pathlib
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for folder in (HERE, ROOT / "tests" / "docker"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import docker_harness  # noqa: E402
from cluster import Cluster  # noqa: E402

MINIO_SERVICE = ROOT / "devtools" / "kube_local" / "manifests" / "minio.yaml"
S3_HOST = "127.0.9.1"
"""Outside the kubelet's pod range (127.1.0.0/16): the S3 server's own address, as the
Endpoints in ``MINIO_SERVICE`` (shared with scripts/try-kubernetes.sh) name it."""
S3_PORT = 9000
S3_ACCESS_KEY = "e2e-access"


def _run(argv: list[str], env: dict[str, str], log: pathlib.Path, timeout: float) -> None:
    with log.open("a") as out:
        done = subprocess.run(
            argv,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    if done.returncode != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
        pytest.fail(f"{' '.join(argv)} failed ({done.returncode}):\n{tail}", pytrace=False)


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("e2e-k8s")


@pytest.fixture(scope="session")
def images(e2e_dir: pathlib.Path) -> Iterator[dict[str, str]]:
    """Both images built from this checkout; an engine started for them stops at the end."""
    docker_harness.require_docker()
    tag = os.environ.get("CJOB_IMAGE_TAG", "dev")
    env = {**os.environ, "CJOB_IMAGE_TAG": tag, "CJOB_DOCKER_WORKDIR": str(e2e_dir / "build")}
    was_running = engine_answers()
    _run(["bash", "scripts/docker-smoke.sh", "--build-only"], env, e2e_dir / "build.log", 1800)
    try:
        yield {"operator": f"cjob-operator:{tag}", "runtime": f"cjob-runtime:{tag}"}
    finally:
        if not was_running:
            subprocess.run(
                ["bash", "scripts/docker-smoke.sh", "--stop-engine"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                timeout=120,
                check=False,
            )


def engine_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="session")
def kube_local(images: dict[str, str], e2e_dir: pathlib.Path) -> Iterator[pathlib.Path]:
    state = e2e_dir / "kube-local"
    env = {**os.environ, "CJOB_KUBE_LOCAL_DIR": str(state), "CJOB_KUBE_LOCAL_KUBELET": "1"}
    log = e2e_dir / "kube-local.log"
    _run(["bash", "scripts/kube-local.sh", "up"], env, log, 120)
    try:
        yield state / "kubeconfig"
    finally:
        subprocess.run(
            ["bash", "scripts/kube-local.sh", "down"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            timeout=180,
            check=False,
        )


@pytest.fixture(scope="session")
def s3_server() -> Iterator[object]:
    from barrier_runtime.storage import embedded

    server = embedded.EmbeddedS3Server(
        host=S3_HOST,
        s3_port=S3_PORT,
        access_key=S3_ACCESS_KEY,
        secret_key=secrets.token_urlsafe(18),
    )
    with server:
        yield server


@pytest.fixture(scope="session")
def host_s3_endpoint() -> str:
    """The S3 server as the test process (outside the cluster) reaches it."""
    return f"http://{S3_HOST}:{S3_PORT}"


def _helm() -> str:
    helm = shutil.which("helm", path=str(ROOT / ".venv" / "bin")) or shutil.which("helm")
    if helm is None:
        pytest.fail("helm is not installed: run scripts/install-test-tools.sh", pytrace=False)
    return helm


@pytest.fixture(scope="session")
def cluster(kube_local: pathlib.Path, s3_server: object, e2e_dir: pathlib.Path) -> Cluster:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is not installed: run scripts/install-test-tools.sh", pytrace=False)
    cl = Cluster(kubeconfig=kube_local, helm=_helm())
    access = S3_ACCESS_KEY
    secret = s3_server.secret_key  # type: ignore[attr-defined]
    cl.kubectl_run("apply", "-f", str(MINIO_SERVICE))
    for ns in ("cjob-system", "streaming"):
        cl.kubectl_run("create", "namespace", ns)
    cl.kubectl_run(
        "-n",
        "streaming",
        "create",
        "secret",
        "generic",
        "minio-credentials",
        f"--from-literal=AWS_ACCESS_KEY_ID={access}",
        f"--from-literal=AWS_SECRET_ACCESS_KEY={secret}",
    )
    return cl
