"""Specs the CRD refuses end ``Failed``/``InvalidSpec`` even when an API server stored them.

kube-local (``devtools/kube_local``) stores custom resources without enforcing the
CRD's schema or CEL rules, as an API server with an older CRD, or none of its
validation, would. The real operator (``kopf run -m cjob_operator.main``) must refuse
each such job itself, with the sentence ``kubectl apply`` would have shown: in
``status.error``, in the ``Ready`` condition (what ``kubectl describe cjob`` shows)
and in a Warning Event, within 30 seconds; ``cjob validate`` refuses the same
manifest offline with the same sentence.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
import pytest
import waiting
import yaml
from cjob_operator_testing.invalid_specs import INVALID, invalid
from cjob_operator_testing.loop import free_port
from tests.integration.kube_local.conftest import Kube, running_operator, running_server

from cjob_operator import admission

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

GROUP, VERSION, PLURAL = "checkpointed.dev", "v1alpha1", "checkpointedjobs"
NS = "refused"
DEADLINE = 30.0
"""The acceptance bound: an invalid spec is reported within 30 s."""


@pytest.fixture(autouse=True)
def delete_jobs_afterwards() -> None:
    """This module runs its own operator against kube-local (not the shared harness)."""


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    with running_server(tmp_path_factory.mktemp("kube-local") / "state") as kube:
        yield kube


@pytest.fixture(scope="module")
def operator(kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The real operator, watching ``NS`` on kube-local (which stores any spec)."""
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    with running_operator(
        kube, NS, log, CJOB_METRICS_PORT=str(free_port()), CJOB_RECONCILE_INTERVAL="1"
    ) as log:
        yield log


def _refused(custom: Any, core: Any, name: str) -> tuple[dict[str, Any], Any] | None:
    job = custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, name)
    status = job.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if status.get("phase") != "Failed" or not ready or ready[0].get("reason") != "InvalidSpec":
        return None
    warnings = [
        e
        for e in core.list_namespaced_event(NS).items
        if e.involved_object.name == name and e.type == "Warning" and e.reason == "InvalidSpec"
    ]
    return (job, warnings[0]) if warnings else None


@pytest.mark.parametrize("case", sorted(INVALID), ids=str)
def test_an_invalid_spec_an_api_server_stored_ends_failed_with_invalid_spec(
    kube: Kube, operator: Path, tmp_path: Path, case: str
) -> None:
    custom = kubernetes.client.CustomObjectsApi(kube.client())
    core = kubernetes.client.CoreV1Api(kube.client())
    manifest = invalid(case, NS)
    sentence = admission.refusal(manifest)
    assert sentence is not None, "the CRD must refuse this spec"

    stored = custom.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, manifest)
    assert stored["spec"]["storage"]["bucket"]  # kube-local stored it as it came

    job, event = waiting.wait_until(
        lambda: _refused(custom, core, case),
        DEADLINE,
        f"{case}: phase Failed, Ready reason InvalidSpec and a Warning Event ({operator})",
    )
    ready = next(c for c in job["status"]["conditions"] if c["type"] == "Ready")
    assert job["status"]["error"] == sentence
    assert (ready["status"], ready["message"]) == ("False", sentence)
    assert event.message == sentence
    described = kube.kubectl("describe", "cjob", "-n", NS, case).stdout
    assert "InvalidSpec" in described
    assert sentence in " ".join(described.split())
    assert not core.list_namespaced_pod(NS).items  # nothing was deployed

    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    offline = subprocess.run(
        [sys.executable, "-m", "barrier_runtime.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert offline.returncode == 2, offline.stderr
    assert sentence in offline.stderr


def test_a_refused_job_goes_on_once_its_spec_is_fixed(kube: Kube, operator: Path) -> None:
    custom = kubernetes.client.CustomObjectsApi(kube.client())
    core = kubernetes.client.CoreV1Api(kube.client())
    name = "fixed-later"
    manifest = invalid("bucket-upper-case", NS)
    manifest["metadata"]["name"] = name
    custom.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, manifest)
    waiting.wait_until(lambda: _refused(custom, core, name), DEADLINE, f"refused ({operator})")

    with socket.socket() as s:  # a store nobody listens on: the next problem is the store
        s.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{s.getsockname()[1]}"
    fixed = {"spec": {"storage": {"bucket": "checkpoints", "endpoint": endpoint}}}
    custom.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, name, fixed)

    def moved_on() -> dict[str, Any] | None:
        status = custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, name)["status"]
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        return status if ready["reason"] == "StorageUnavailable" else None

    status = waiting.wait_until(moved_on, DEADLINE, f"the fixed spec taken up ({operator})")
    assert status["phase"] == "Deploying"
    assert endpoint in status["error"] and "is invalid" not in status["error"]
