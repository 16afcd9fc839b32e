"""The CRD installed once for the tests in this folder (``server``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cjob_operator_testing import crd_cases
from cjob_operator_testing.crd_cases import NAMESPACE
from cjob_operator_testing.crd_server import CRD_FILE, STATUS_TARGET, Plane, kubectl


@pytest.fixture(scope="session")
def server(kube_api: Plane) -> Iterator[Plane]:
    """The CRD installed and Established, the namespace of these tests, and a valid job
    whose status the status cases patch."""
    applied = kubectl(kube_api, "apply", "-f", str(CRD_FILE))
    assert applied.returncode == 0, applied.stderr
    established = kubectl(
        kube_api,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/checkpointedjobs.checkpointed.dev",
    )
    assert established.returncode == 0, established.stderr
    created = kubectl(kube_api, "create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    target = kubectl(kube_api, "apply", "-f", "-", stdin=crd_cases.minimal_job(STATUS_TARGET))
    assert target.returncode == 0, target.stderr
    yield kube_api
    kubectl(kube_api, "delete", "namespace", NAMESPACE, "--wait=false")
