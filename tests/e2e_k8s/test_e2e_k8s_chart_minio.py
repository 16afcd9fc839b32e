"""The chart's evaluation MinIO (``minio.enabled=true``) runs the local cluster's image.

The local cluster's object store is our own manifest (``devtools/kube_local/manifests/
minio.yaml``): the chart names its MinIO ``<release>-checkpointed-operator-minio`` in the
release's namespace, never ``minio.minio.svc``, and installs an operator beside it. This
test renders only the chart's MinIO (``helm template --show-only templates/minio.yaml``)
with the image overridden to ``cjob-minio:<release>`` (``scripts/minio-image.sh``),
applies it in ``cjob-system`` (restricted Pod Security), and checks that it becomes
ready under the chart's own securityContext and probes and reports that release through
its admin API with the keys of the chart's Secret, and stores an object. Local target only: the user's cluster
pulls ``quay.io/minio/minio``.
"""

from __future__ import annotations

import base64
import pathlib

import pytest
from e2e_k8s_testing import object_store, targets
from e2e_k8s_testing.cluster import Cluster

ROOT = pathlib.Path(__file__).resolve().parents[2]
RELEASE = "evaluation"
NAMESPACE = "cjob-system"
NAME = f"{RELEASE}-checkpointed-operator-minio"


def test_the_charts_evaluation_minio_runs_the_local_image_and_reports_its_release(
    cluster: Cluster, images: dict[str, str], target: str
) -> None:
    if target != targets.LOCAL:
        pytest.skip("the chart's MinIO with the image built here: local target only")
    repository, tag = images["minio"].rsplit(":", 1)
    rendered = cluster.helm_run(
        "template",
        RELEASE,
        str(ROOT / "charts" / "checkpointed-operator"),
        "--namespace",
        NAMESPACE,
        "--show-only",
        "templates/minio.yaml",
        "--set",
        "minio.enabled=true",
        "--set",
        f"minio.image.repository={repository}",
        "--set",
        f"minio.image.tag={tag}",
        "--set",
        "minio.image.pullPolicy=Never",
    )
    cluster.kubectl_run("apply", "-f", "-", stdin=rendered)
    try:
        cluster.run(
            "kubectl",
            *("-n", NAMESPACE, "rollout", "status", f"deployment/{NAME}", "--timeout=180s"),
            timeout=210,
        )
        keys = {
            key: base64.b64decode(
                cluster.kubectl_run(
                    "-n", NAMESPACE, "get", "secret", NAME, "-o", f"jsonpath={{.data.{key}}}"
                )
            ).decode()
            for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
        }
        address = cluster.kubectl_run(
            "-n", NAMESPACE, "get", "service", NAME, "-o", "jsonpath={.spec.clusterIP}"
        ).strip()
        endpoint = f"http://{address}:9000"
        object_store.wait_ready(endpoint, 60)
        access = targets.S3Access(
            host_endpoint=endpoint,
            cluster_endpoint=f"http://{NAME}.{NAMESPACE}.svc:9000",
            access_key=keys["AWS_ACCESS_KEY_ID"],
            secret_key=keys["AWS_SECRET_ACCESS_KEY"],
        )
        identity = object_store.server_identity(access)
        assert identity.describe() == f"MinIO {tag}", identity
        store = access.open_store("checkpoints")  # the docs: create the jobs' bucket first
        store.put("probe", b"stored in the chart's MinIO")
        assert store.get("probe") == b"stored in the chart's MinIO"
    finally:
        cluster.kubectl_run("delete", "--wait=true", "--timeout=120s", "-f", "-", stdin=rendered)
