"""What ``kubectl describe cjob`` shows when something is wrong: the real operator (kopf
subprocess) against a real kube-apiserver.

- an unreachable checkpoint store is in ``Ready`` (reason ``StorageUnavailable``, the
  sentence) and in a Warning Event from the first reconcile that meets it, while the
  job stays ``Deploying`` and the store is read again with backoff;
- a job that failed is not ``RESTARTING`` in ``status.jobState`` any more.
"""

from __future__ import annotations

import base64
import socket
from typing import Any

from cjob_operator_testing.harness import OperatorHarness
from cjob_operator_testing.steps import Manifest, condition, start_running


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens on it any more: connections are refused


def _secret(h: OperatorHarness, name: str) -> None:
    data = {"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }
    status, body = h.http("POST", f"/api/v1/namespaces/{h.namespace}/secrets", secret)
    assert status in (201, 409), body


def test_an_unreachable_store_shows_in_ready_and_in_a_warning_event_within_one_reconcile(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    _secret(h, "unreachable-creds")
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    h.create_job(
        manifest(
            "nostore",
            storage={
                "endpoint": endpoint,
                "bucket": "ckpt",
                "credentialsSecret": {"name": "unreachable-creds"},
            },
        )
    )

    # The first status that carries the problem carries it in Ready too (one patch).
    status: dict[str, Any] = h.wait_for(
        lambda: h.job_status("nostore") if h.job_status("nostore").get("error") else None,
        "status.error",
    )
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert status["phase"] == "Deploying"
    assert endpoint in status["error"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "StorageUnavailable",
        status["error"],
    )
    warning = h.wait_for(
        lambda: [
            e
            for e in h.events("nostore")
            if e["type"] == "Warning" and e["reason"] == "StorageUnavailable"
        ],
        "a Warning Event",
        timeout=5,
    )
    assert warning[0]["message"] == status["error"]
    # Read again (with backoff: 2 s, 4 s, …; each read logs the client's three retries),
    # but posted once while the same problem stands.
    h.wait_for(
        lambda: h.operator_log().count(f"port={endpoint.rsplit(':', 1)[1]}): Failed") >= 9,
        "three reads meeting the same problem",
    )
    repeated = [e for e in h.events("nostore") if e["reason"] == "StorageUnavailable"]
    assert len(repeated) == 1
    assert h.pod("nostore") is None  # nothing deployed without a restore point


def test_a_failed_job_is_no_longer_restarting_in_job_state(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    start_running(h, manifest, "gone")
    h.driver.behaviour(h.namespace, "gone").state = "RESTARTING"
    h.wait_for(lambda: h.job_status("gone").get("jobState") == "RESTARTING", "RESTARTING")

    h.set_pod_phase("gone", "Failed", exit_code=1)  # the driver's budget is spent: final

    h.wait_for(lambda: h.job_status("gone").get("phase") == "Failed", "phase Failed")
    assert h.job_status("gone")["jobState"] == "FAILED"
    assert condition(h, "gone", "Ready")["reason"] == "JobFailed"
