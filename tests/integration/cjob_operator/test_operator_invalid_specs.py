"""Specs the CRD refuses end ``Failed``/``InvalidSpec`` even when an API server stored them.

A real API server with the CRD refuses them at create; one whose CRD does not validate
``spec`` (an older CRD, or none of its validation: :func:`unvalidated_crd`) stores them
as they come. The real operator (``kopf run -m cjob_operator.main``) must refuse each
such job itself, with the sentence ``kubectl apply`` would have shown: in
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

import pytest
import waiting
import yaml
from cjob_operator_testing import envtest
from cjob_operator_testing.harness import OperatorHarness
from cjob_operator_testing.invalid_specs import INVALID, invalid
from cjob_operator_testing.local_store_crd import unvalidated_crd

from cjob_operator import admission

NS = "refused"
DEADLINE = 30.0
"""The acceptance bound: an invalid spec is reported within 30 s."""


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorHarness]:
    """The real operator on an API server whose CRD stores any spec."""
    with OperatorHarness(
        tmp_path_factory.mktemp("refused"), namespace=NS, tick=1.0, crd=unvalidated_crd()
    ) as h:
        yield h


@pytest.fixture(autouse=True)
def delete_jobs_afterwards() -> None:
    """Each test here has a job of its own name; nothing to clean between them."""


def _refused(h: OperatorHarness, name: str) -> tuple[dict[str, Any], Any] | None:
    job = h.job(name) or {}
    status = job.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if status.get("phase") != "Failed" or not ready or ready[0].get("reason") != "InvalidSpec":
        return None
    warnings = [
        e for e in h.events(name) if e["type"] == "Warning" and e["reason"] == "InvalidSpec"
    ]
    return (job, warnings[0]) if warnings else None


@pytest.mark.parametrize("case", sorted(INVALID), ids=str)
def test_an_invalid_spec_an_api_server_stored_ends_failed_with_invalid_spec(
    harness: OperatorHarness, tmp_path: Path, case: str
) -> None:
    h = harness
    manifest = invalid(case, NS)
    sentence = admission.refusal(manifest)
    assert sentence is not None, "the CRD must refuse this spec"

    stored = h.create_job(manifest)
    assert stored["spec"] == manifest["spec"]  # stored as it came

    job, event = waiting.wait_until(
        lambda: _refused(h, case),
        DEADLINE,
        f"{case}: phase Failed, Ready reason InvalidSpec and a Warning Event ({h.log_path})",
    )
    ready = next(c for c in job["status"]["conditions"] if c["type"] == "Ready")
    assert job["status"]["error"] == sentence
    assert (ready["status"], ready["message"]) == ("False", sentence)
    assert event["message"] == sentence
    described = envtest.kubectl(h.plane, "describe", "cjob", "-n", NS, case).stdout
    assert "InvalidSpec" in described
    assert sentence in " ".join(described.split())
    assert h.pod(case) is None  # nothing was deployed

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


def test_a_refused_job_goes_on_once_its_spec_is_fixed(harness: OperatorHarness) -> None:
    h = harness
    name = "fixed-later"
    manifest = invalid("bucket-upper-case", NS)
    manifest["metadata"]["name"] = name
    h.create_job(manifest)
    waiting.wait_until(lambda: _refused(h, name), DEADLINE, f"refused ({h.log_path})")

    with socket.socket() as s:  # a store nobody listens on: the next problem is the store
        s.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{s.getsockname()[1]}"
    fixed = {"spec": {"storage": {"bucket": "checkpoints", "endpoint": endpoint}}}
    h.patch_spec(name, fixed["spec"])

    def moved_on() -> dict[str, Any] | None:
        status = h.job_status(name)
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        return status if ready["reason"] == "StorageUnavailable" else None

    status = waiting.wait_until(moved_on, DEADLINE, f"the fixed spec taken up ({h.log_path})")
    assert status["phase"] == "Deploying"
    assert endpoint in status["error"] and "is invalid" not in status["error"]
