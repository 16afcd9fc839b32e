"""Parsing the control API's answers (both snake_case and camelCase keys)."""

from __future__ import annotations

from cjob_operator.act import control
from cjob_operator.model.enums import SnapshotKind


def test_checkpoint_overview_is_parsed() -> None:
    doc = {
        "counts": {"triggered": 5, "completed": 3, "failed": 2, "in_progress": 1},
        "latest": {
            "completed": {"id": 7, "kind": "checkpoint", "trigger_timestamp": 100.0,
                          "completion_timestamp": 101.5, "size": 2048, "path": "s3://b/c"},
            "failed": {"id": 8, "failure_reason": "timeout", "failure_timestamp": 110.0},
            "in_progress": [{"id": 9, "trigger_timestamp": 120.0}],
        },
        "history": [{"id": 7, "status": "COMPLETED", "trigger_timestamp": 100.0},
                    {"id": 8, "status": "FAILED", "trigger_timestamp": 105.0}],
    }
    view = control.parse_checkpoints(doc, {"state": "RUNNING"}, ready=True)
    assert view.ready and view.job_state == "RUNNING"
    assert view.in_progress == 1 and view.last_trigger_time == 120.0
    assert view.latest_completed is not None
    assert view.latest_completed.duration_seconds == 1.5
    assert view.latest_completed.size_bytes == 2048
    assert view.latest_failed is not None and view.latest_failed.reason == "timeout"
    assert view.consecutive_failures == 1


def test_camel_case_and_savepoints() -> None:
    info = control.parse_completed({"checkpointId": 4, "kind": "savepoint",
                                    "completionTimestamp": 5.0, "durationSeconds": 0.2})
    assert info is not None and info.id == 4 and info.kind is SnapshotKind.SAVEPOINT
    assert info.duration_seconds == 0.2


def test_default_url_is_the_headless_service() -> None:
    assert control.base_url("ns", "job", "job-driver", 8080) == "http://job-driver.ns.svc:8080"
