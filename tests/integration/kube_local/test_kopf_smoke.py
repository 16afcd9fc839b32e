"""The real operator (kopf 1.45, ``kopf run -m cjob_operator.main``) against kube-local.

A smoke test for the next phase (moving the operator e2e onto kube-local): kopf
discovers the CRD, watches, adds its finalizer, writes status through the status
subresource and creates the driver's objects with owner references; deleting the
job releases it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
import pytest
import waiting
from cjob_operator_testing.local_store_crd import write_local_store_crd
from cjob_operator_testing.loop import free_port
from tests.integration.kube_local.conftest import Kube, running_operator

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

GROUP, VERSION, PLURAL = "checkpointed.dev", "v1alpha1", "checkpointedjobs"
NS = "operated"


@pytest.fixture
def operator(kube: Kube, tmp_path: Path) -> Iterator[Path]:
    # the job keeps its checkpoints in a local directory, which the real CRD refuses
    crd = write_local_store_crd(tmp_path / "crd.yaml")
    with running_operator(
        kube,
        NS,
        tmp_path / "operator.log",
        CJOB_METRICS_PORT=str(free_port()),
        CJOB_RECONCILE_INTERVAL="0.5",
        CJOB_CRD_FILE=str(crd),
    ) as log:
        kube.kubectl("apply", "-f", str(crd))  # the server must admit file:// too
        yield log


def test_the_operator_reconciles_a_job_on_kube_local(
    kube: Kube, operator: Path, tmp_path: Path
) -> None:
    custom = kubernetes.client.CustomObjectsApi(kube.client())
    core = kubernetes.client.CoreV1Api(kube.client())
    job = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CheckpointedJob",
        "metadata": {"name": "smoke"},
        "spec": {
            "image": "registry.local/cjob-runtime:1",
            "pipeline": {"module": "examples.wordcount"},
            "storage": {
                "endpoint": f"file://{tmp_path}/store",
                "bucket": "ckpt",
                "credentialsSecret": {"name": "s3-creds"},
            },
        },
    }
    core.create_namespaced_secret(
        NS,
        {
            "metadata": {"name": "s3-creds"},
            "stringData": {"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"},
        },
    )
    created = custom.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, job)

    def reconciled() -> Any:
        got = custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "smoke")
        return (
            got
            if got["metadata"].get("finalizers") and got.get("status", {}).get("phase")
            else None
        )

    got = waiting.wait_until(reconciled, 60, f"the finalizer and a phase ({operator})")
    assert got["metadata"]["finalizers"] == [f"{GROUP}/finalizer"]

    def owned_pods() -> list[Any]:
        return [
            p
            for p in core.list_namespaced_pod(NS).items
            if any(r.uid == created["metadata"]["uid"] for r in p.metadata.owner_references or [])
        ]

    pods = waiting.wait_until(owned_pods, 60, f"a driver pod owned by the job ({operator})")
    assert pods[0].status.phase == "Pending"  # no kubelet yet: pods are stored, not run
    custom.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "smoke")

    def released() -> bool:
        return not [
            j
            for j in custom.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["items"]
            if j["metadata"]["name"] == "smoke"
        ]

    waiting.wait_until(released, 60, "the job to be released")
