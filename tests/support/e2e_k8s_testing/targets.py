"""The scenario's two targets, decided from the environment (pure but for ``kubectl version``).

* ``local``: the control plane ``scripts/kube-local.sh`` starts (the default);
* ``current-context``: the cluster of the current kubeconfig, e.g. kind, k3d, minikube
  (``CJOB_E2E_TARGET=current-context`` or pytest's ``--use-current-context``).

>>> target_from_env({})
'local'
>>> target_from_env({"CJOB_E2E_TARGET": "current-context"})
'current-context'
>>> load_image_command("kind-dev", "cjob-runtime:dev")
['kind', 'load', 'docker-image', '--name', 'dev', 'cjob-runtime:dev']
>>> load_image_command("gke_project_zone_name", "cjob-runtime:dev") is None
True
"""

from __future__ import annotations

import dataclasses
import pathlib
import shutil
import subprocess
from collections.abc import Mapping

from barrier_runtime.storage import s3

LOCAL = "local"
CURRENT_CONTEXT = "current-context"
CLUSTER_S3_ENDPOINT = "http://minio.minio.svc:9000"
"""Where the job pods find S3 on both targets, as the examples name it."""
S3_SETTINGS = ("CJOB_E2E_S3_HOST_ENDPOINT", "CJOB_E2E_S3_ACCESS_KEY", "CJOB_E2E_S3_SECRET_KEY")


class TargetError(ValueError):
    """``CJOB_E2E_TARGET`` names no target."""


def target_from_env(env: Mapping[str, str]) -> str:
    value = env.get("CJOB_E2E_TARGET", LOCAL) or LOCAL
    if value not in (LOCAL, CURRENT_CONTEXT):
        raise TargetError(f"CJOB_E2E_TARGET={value!r}: use {LOCAL!r} or {CURRENT_CONTEXT!r}")
    return value


@dataclasses.dataclass(frozen=True)
class S3Access:
    """An S3 server as the test process (``host_endpoint``) and the pods see it."""

    host_endpoint: str
    cluster_endpoint: str
    access_key: str
    secret_key: str

    def open_store(self, bucket: str, prefix: str = "") -> s3.S3ObjectStore:
        """A store on ``bucket`` through the host endpoint; creates the bucket."""
        return s3.S3ObjectStore(
            self.host_endpoint,
            bucket,
            prefix,
            access_key=self.access_key,
            secret_key=self.secret_key,
            create_bucket=True,
        )

    def create_bucket(self, bucket: str) -> None:
        self.open_store(bucket)


@dataclasses.dataclass(frozen=True)
class UserCluster:
    kubeconfig: pathlib.Path
    context: str
    s3: S3Access


def given_images(env: Mapping[str, str]) -> dict[str, str] | None:
    """Both images named in the environment, or ``None`` when either is missing."""
    operator, runtime = env.get("CJOB_OPERATOR_IMAGE"), env.get("CJOB_RUNTIME_IMAGE")
    if not operator or not runtime:
        return None
    return {"operator": operator, "runtime": runtime}


def load_image_command(context: str, image: str) -> list[str] | None:
    """How a local image gets into the cluster of ``context`` (kind, k3d, minikube)."""
    if context.startswith("kind-"):
        return ["kind", "load", "docker-image", "--name", context.removeprefix("kind-"), image]
    if context.startswith("k3d-"):
        return ["k3d", "image", "import", "--cluster", context.removeprefix("k3d-"), image]
    if context == "minikube":
        return ["minikube", "image", "load", image]
    return None


def user_cluster(env: Mapping[str, str], workdir: pathlib.Path) -> UserCluster | str:
    """The current context's cluster and the S3 settings, or why the tests cannot run.

    The current context is written, flattened, to ``workdir/kubeconfig``: what the
    scenario's tools and the Python client read, whatever ``KUBECONFIG`` lists."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return "kubectl is not installed (scripts/install-test-tools.sh puts one in .venv/bin)"
    try:
        version = subprocess.run(
            [kubectl, "version", "--request-timeout=5s"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "no Kubernetes cluster reachable (kubectl version timed out)"
    if version.returncode != 0:
        last = (version.stderr.strip().splitlines() or ["no output"])[-1]
        return (
            f"no Kubernetes cluster reachable through the current kubeconfig ({last}); "
            "start one (kind create cluster, k3d cluster create, minikube start)"
        )
    context = subprocess.run(
        [kubectl, "config", "current-context"], capture_output=True, text=True, check=False
    ).stdout.strip()
    flat = subprocess.run(
        [kubectl, "config", "view", "--raw", "--minify", "--flatten"],
        capture_output=True,
        text=True,
        check=False,
    )
    if flat.returncode != 0:
        return f"kubectl config view failed: {flat.stderr.strip()}"
    kubeconfig = workdir / "kubeconfig"
    kubeconfig.write_text(flat.stdout)
    kubeconfig.chmod(0o600)
    missing = [name for name in S3_SETTINGS if not env.get(name)]
    if missing:
        return (
            f"set {', '.join(missing)}: an S3 server the cluster reaches as "
            f"{env.get('CJOB_E2E_S3_ENDPOINT') or CLUSTER_S3_ENDPOINT} and this process "
            "reaches at CJOB_E2E_S3_HOST_ENDPOINT (docs/operations.md, 'Testing on your "
            "own cluster')"
        )
    return UserCluster(
        kubeconfig=kubeconfig,
        context=context,
        s3=S3Access(
            host_endpoint=env["CJOB_E2E_S3_HOST_ENDPOINT"],
            cluster_endpoint=env.get("CJOB_E2E_S3_ENDPOINT") or CLUSTER_S3_ENDPOINT,
            access_key=env["CJOB_E2E_S3_ACCESS_KEY"],
            secret_key=env["CJOB_E2E_S3_SECRET_KEY"],
        ),
    )
