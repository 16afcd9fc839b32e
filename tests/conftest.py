"""Fixtures shared by every test folder: two real S3 servers (SeaweedFS and MinIO) per
session and the matrix of both, a real kube-apiserver per session, the local Kubernetes with its real node per session, and a
real NATS JetStream server per module that asks for one."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from barrier_runtime_testing import minio_server as minio_mod
from cjob_operator_testing import envtest, local_kube
from hypothesis import HealthCheck, settings
from kube_local import control_plane as control_plane_mod

from barrier_runtime.connectors import embedded_nats
from barrier_runtime.storage import embedded
from barrier_runtime.storage import s3_server as s3_server_mod

S3_BUCKET = "cjob-tests"

# Hypothesis times each example against a 200 ms deadline by default: a timing assertion
# that a loaded 2-core machine fails at random (seen: a keyed-path property test in a run
# beside three Spark jobs). Timing belongs in bench/; the properties here are about results.
settings.register_profile(
    "cjob", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("cjob")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[embedded.EmbeddedS3Server]:
    """A real S3 server (SeaweedFS ``weed mini``) on loopback, stopped after the session."""
    with embedded.EmbeddedS3Server(buckets=[S3_BUCKET]) as server:
        yield server


@pytest.fixture(scope="session")
def minio_server() -> Iterator[minio_mod.MinioServer]:
    """A real MinIO server (``minio server``, built by ``scripts/minio-build.sh``) on loopback,
    stopped after the session. Where MinIO is not built the tests that need it skip with
    what to run, or fail where CI requires them (``CJOB_REQUIRE_DOCKER=1``)."""
    try:
        minio_mod.minio_binary()
    except minio_mod.MinioNotBuiltError as exc:
        if os.environ.get("CJOB_REQUIRE_DOCKER") == "1":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))
    with minio_mod.MinioServer(buckets=[S3_BUCKET]) as server:
        yield server


@pytest.fixture(params=["seaweedfs", pytest.param("minio", marks=pytest.mark.minio)])
def each_s3_server(request: pytest.FixtureRequest) -> s3_server_mod.LocalS3Server:
    """The storage matrix: the test runs on SeaweedFS and on MinIO (ids ``[seaweedfs]``,
    ``[minio]``), each the session's server with the bucket ``cjob-tests``."""
    name = "s3_server" if request.param == "seaweedfs" else "minio_server"
    server: s3_server_mod.LocalS3Server = request.getfixturevalue(name)
    return server


@pytest.fixture(scope="session")
def kube_api(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[control_plane_mod.ControlPlane]:
    """A real kube-apiserver with etcd and kube-controller-manager, one per session
    (``tests/support/cjob_operator_testing/envtest.py``); tests keep to namespaces of
    their own."""
    with envtest.control_plane(tmp_path_factory.mktemp("kube-api")) as plane:
        yield plane


@pytest.fixture(scope="session")
def local_kubernetes(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[local_kube.LocalKubernetes]:
    """``scripts/kube-local.sh up`` with the real node, one per session (one real node per
    machine); ``down`` at the end, checked to leave nothing behind. Where a real node
    cannot run (not root, no containerd) the tests that need it skip with the reason,
    or fail where CI requires them (``CJOB_REQUIRE_DOCKER=1``)."""
    why = local_kube.missing_requirements()
    if why:
        if os.environ.get("CJOB_REQUIRE_DOCKER") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    with local_kube.started(tmp_path_factory.mktemp("kube-local") / "kl") as kube:
        yield kube


@pytest.fixture(scope="module")
def nats_server() -> Iterator[embedded_nats.EmbeddedNatsServer]:
    """A real ``nats-server -js`` on loopback for the module (skipped without the binary)."""
    pytest.importorskip("nats", reason="the NATS connector needs nats-py")
    try:
        embedded_nats.find_nats_server_binary()
    except embedded_nats.errors.EmbeddedBrokerError as exc:
        pytest.skip(str(exc))
    with embedded_nats.EmbeddedNatsServer() as server:
        yield server
