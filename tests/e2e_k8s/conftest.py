"""The cluster the scenario runs on: the local control plane, or the user's own.

Two targets, chosen by ``CJOB_E2E_TARGET`` (or pytest's ``--use-current-context``):

``local`` (the default)
    the Docker engine and the project's images (``scripts/docker-smoke.sh --build-only``);
    ``scripts/kube-local.sh up`` once per session (the root conftest's
    ``local_kubernetes``, shared with the real node's own tests): etcd, kube-apiserver,
    kube-controller-manager and kube-scheduler built from the Go modules
    (``scripts/kube-build.sh``) and a real node (the kubelet on containerd, kube-proxy,
    CoreDNS) into which ``scripts/kube-local.sh load`` puts the images;
    the object store: MinIO in namespace ``minio`` (``minio.minio.svc:9000``), the image
    ``scripts/minio-image.sh`` builds from ``scripts/minio-build.sh``'s binary, run by
    ``devtools/kube_local/manifests/minio.yaml`` (:mod:`object_store`); this process
    reaches it at its Service's ClusterIP.
    Where Docker cannot run, everything skips with one sentence (CI sets
    ``CJOB_REQUIRE_DOCKER=1``, which turns that into a failure).

``current-context``
    the cluster of the current kubeconfig (kind, k3d, minikube, any other), untouched
    but for what the scenario creates. Images: ``CJOB_OPERATOR_IMAGE`` and
    ``CJOB_RUNTIME_IMAGE`` when the cluster can pull them; otherwise both are built from
    this checkout and loaded into a kind, k3d or minikube cluster (named by the context).
    S3: a server the cluster reaches as ``http://minio.minio.svc:9000`` (the examples'
    endpoint; ``CJOB_E2E_S3_ENDPOINT`` to change it) and this process reaches at
    ``CJOB_E2E_S3_HOST_ENDPOINT`` (e.g. ``kubectl -n minio port-forward svc/minio 9000``),
    keys in ``CJOB_E2E_S3_ACCESS_KEY`` / ``CJOB_E2E_S3_SECRET_KEY``. Without a reachable
    cluster or these settings the tests skip and say what is missing
    (``CJOB_E2E_REQUIRE_CLUSTER=1`` turns that into a failure).

Both targets then get the namespaces and the storage Secret the README's install
creates; the namespaces enforce the restricted Pod Security Standard, as
docs/operations.md says they can.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest
from cjob_operator_testing import envtest
from docker_testing import docker_harness
from e2e_k8s_testing import object_store, targets
from e2e_k8s_testing.cluster import Cluster, ScenarioError

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]

JOB_NAMESPACES = ("cjob-system", "streaming")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--use-current-context",
        action="store_true",
        help="run tests/e2e_k8s on the cluster of the current kubeconfig "
        "(same as CJOB_E2E_TARGET=current-context)",
    )


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest) -> str:
    """``local`` or ``current-context``."""
    if request.config.getoption("--use-current-context", default=False):
        return targets.CURRENT_CONTEXT
    return targets.target_from_env(os.environ)


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
def user_cluster(target: str, e2e_dir: pathlib.Path) -> targets.UserCluster | None:
    """The current context's cluster and S3 settings (``None`` on the local target)."""
    if target != targets.CURRENT_CONTEXT:
        return None
    found = targets.user_cluster(os.environ, e2e_dir)
    if isinstance(found, str):
        if os.environ.get("CJOB_E2E_REQUIRE_CLUSTER") == "1":
            pytest.fail(found, pytrace=False)
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def images(
    target: str, user_cluster: targets.UserCluster | None, e2e_dir: pathlib.Path
) -> Iterator[dict[str, str]]:
    """The operator and runtime images the cluster runs (and on the local target its
    MinIO's, ``minio``)."""
    given = targets.given_images(os.environ)
    if user_cluster is not None and given is not None:
        yield {**given, "pull_policy": "IfNotPresent"}  # the cluster pulls them
        return
    docker_harness.require_docker()
    tag = os.environ.get("CJOB_IMAGE_TAG", "dev")
    env = {**os.environ, "CJOB_IMAGE_TAG": tag, "CJOB_DOCKER_WORKDIR": str(e2e_dir / "build")}
    was_running = engine_answers()
    _run(["bash", "scripts/docker-smoke.sh", "--build-only"], env, e2e_dir / "build.log", 1800)
    built = {"operator": f"cjob-operator:{tag}", "runtime": f"cjob-runtime:{tag}"}
    try:
        if user_cluster is None:  # the local cluster's object store
            built["minio"] = _minio_image(env, e2e_dir / "build.log")
        else:
            for image in built.values():
                argv = targets.load_image_command(user_cluster.context, image)
                if argv is None:
                    pytest.skip(
                        f"the context {user_cluster.context!r} is not kind, k3d or minikube: "
                        "push the images somewhere it pulls from and set CJOB_OPERATOR_IMAGE "
                        "and CJOB_RUNTIME_IMAGE"
                    )
                _run(argv, env, e2e_dir / "load.log", 600)
        yield {**built, "pull_policy": "Never"}
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


def _minio_image(env: dict[str, str], log: pathlib.Path) -> str:
    """``scripts/minio-image.sh``: the tag of the local cluster's MinIO image."""
    with log.open("a") as err:
        done = subprocess.run(
            ["bash", "scripts/minio-image.sh"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            timeout=1800,
            check=False,
        )
    if done.returncode != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
        pytest.fail(f"scripts/minio-image.sh failed ({done.returncode}):\n{tail}", pytrace=False)
    return done.stdout.strip().splitlines()[-1]


def engine_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="session")
def kubeconfig(
    user_cluster: targets.UserCluster | None,
    images: dict[str, str],
    request: pytest.FixtureRequest,
) -> Iterator[pathlib.Path]:
    """The kubeconfig of the cluster under test: on the local target the session's local
    Kubernetes (the root conftest's ``local_kubernetes``) with the images loaded."""
    if user_cluster is not None:
        yield user_cluster.kubeconfig
        return
    kube = request.getfixturevalue("local_kubernetes")
    kube.load(images["operator"], images["runtime"], images["minio"])
    yield kube.kubeconfig


@pytest.fixture(scope="session")
def load_image(
    user_cluster: targets.UserCluster | None, kubeconfig: pathlib.Path, e2e_dir: pathlib.Path
) -> Callable[[str], None]:
    """Put an image built here where the cluster's node finds it: ``kube-local.sh load``
    on the local target, ``kind load docker-image`` and the like on the user's cluster."""

    def load(image: str) -> None:
        if user_cluster is None:
            argv = ["bash", "scripts/kube-local.sh", "load", image]
        else:
            found = targets.load_image_command(user_cluster.context, image)
            if found is None:
                pytest.skip(f"no way to load {image} into the context {user_cluster.context!r}")
            argv = found
        env = {**os.environ, "CJOB_KUBE_LOCAL_DIR": str(kubeconfig.parent)}
        _run(argv, env, e2e_dir / "load.log", 600)

    return load


@pytest.fixture(scope="session")
def tools(kubeconfig: pathlib.Path, target: str) -> Cluster:
    """kubectl and helm on the cluster under test (nothing created yet)."""
    if target == targets.LOCAL:  # the kubectl of the same release as the local API server
        kubectl = str(envtest.binaries() / "kubectl")
    elif shutil.which("kubectl") is None:
        pytest.fail("kubectl is not installed: run scripts/install-test-tools.sh", pytrace=False)
    else:
        kubectl = "kubectl"
    return Cluster(kubeconfig=kubeconfig, helm=_helm(), kubectl=kubectl)


@pytest.fixture(scope="session")
def s3_server(
    user_cluster: targets.UserCluster | None, tools: Cluster, images: dict[str, str]
) -> targets.S3Access:
    """The S3 server of the jobs: ``create_bucket``, ``open_store``, keys, both endpoints.
    On the local target, MinIO in namespace ``minio`` (:mod:`object_store`)."""
    if user_cluster is not None:
        return user_cluster.s3
    return object_store.deploy_minio(tools, images["minio"])


@pytest.fixture(scope="session")
def s3_identity(s3_server: targets.S3Access) -> object_store.ServerIdentity:
    """What the jobs' S3 server says it is (``Server`` header, release)."""
    return object_store.server_identity(s3_server)


@pytest.fixture(scope="session")
def host_s3_endpoint(s3_server: targets.S3Access) -> str:
    """The S3 server as the test process (outside the cluster) reaches it."""
    return s3_server.host_endpoint


def _helm() -> str:
    helm = shutil.which("helm", path=str(ROOT / ".venv" / "bin")) or shutil.which("helm")
    if helm is None:
        pytest.fail("helm is not installed: run scripts/install-test-tools.sh", pytrace=False)
    return helm


@pytest.fixture(scope="session")
def cluster(tools: Cluster, target: str, s3_server: targets.S3Access) -> Iterator[Cluster]:
    cl = tools
    taken = [ns for ns in JOB_NAMESPACES if cl.namespace_exists(ns)]
    if taken and target == targets.CURRENT_CONTEXT:
        pytest.skip(
            f"namespace(s) {', '.join(taken)} already exist on this cluster: the scenario "
            "creates and deletes them, so it does not run where they are in use"
        )
    for ns in JOB_NAMESPACES:
        if not cl.namespace_exists(ns):  # the local plane creates them restricted itself
            cl.kubectl_run("create", "namespace", ns)
        cl.kubectl_run(
            "label",
            "--overwrite",
            "namespace",
            ns,
            "pod-security.kubernetes.io/enforce=restricted",
            "pod-security.kubernetes.io/warn=restricted",
        )
    cl.kubectl_run(
        "-n",
        "streaming",
        "create",
        "secret",
        "generic",
        "minio-credentials",
        f"--from-literal=AWS_ACCESS_KEY_ID={s3_server.access_key}",
        f"--from-literal=AWS_SECRET_ACCESS_KEY={s3_server.secret_key}",
    )
    try:
        yield cl
    finally:
        if target == targets.CURRENT_CONTEXT:
            for ns in JOB_NAMESPACES:
                with contextlib.suppress(ScenarioError):
                    cl.run("kubectl", "delete", "namespace", ns, "--wait=false")
