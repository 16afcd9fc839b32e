"""Parsing the control API's answers (both snake_case and camelCase keys)."""

from __future__ import annotations

from barrier_runtime.core import types
from cjob_operator.act import control
from cjob_operator.model.observation import EntryStatus


def test_checkpoint_overview_is_parsed() -> None:
    doc = {
        "counts": {"triggered": 5, "completed": 3, "failed": 2, "in_progress": 1},
        "latest": {
            "completed": {
                "id": 7,
                "kind": "checkpoint",
                "trigger_timestamp": 100.0,
                "completion_timestamp": 101.5,
                "size": 2048,
                "path": "s3://b/c",
            },
            "failed": {"id": 8, "failure_reason": "timeout", "failure_timestamp": 110.0},
            "in_progress": [{"id": 9, "trigger_timestamp": 120.0}],
        },
        "history": [
            {"id": 7, "status": "COMPLETED", "trigger_timestamp": 100.0},
            {"id": 8, "status": "FAILED", "trigger_timestamp": 105.0},
        ],
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
    info = control.parse_completed(
        {"checkpointId": 4, "kind": "savepoint", "completionTimestamp": 5.0, "durationSeconds": 0.2}
    )
    assert info is not None and info.id == 4 and info.kind is types.CheckpointKind.SAVEPOINT
    assert info.duration_seconds == 0.2


def test_default_url_is_the_headless_service() -> None:
    assert control.base_url("ns", "job", "job-driver", 8080) == "http://job-driver.ns.svc:8080"


def test_history_entries_are_parsed_for_their_outcome() -> None:
    """The operator settles triggered savepoints and checkpoint nonces from the history."""
    doc = {
        "latest": {
            "completed": {"id": 3, "kind": "checkpoint", "completion_timestamp": 9.0},
            "failed": {"id": 2, "failure_reason": "DECLINED"},
        },
        "history": [
            {
                "id": 4,
                "status": "completed",
                "kind": "savepoint",
                "trigger_timestamp": 10.0,
                "completion_timestamp": 11.0,
                "path": "cjob/ns/j/savepoints/sp-0000000004",
            },
            {"id": 5, "status": "FAILED", "kind": "savepoint", "failure_reason": "TIMEOUT"},
            {"id": 6, "status": "in-progress", "kind": "checkpoint"},
            {"status": "completed"},
            {"id": 7, "status": "exploded"},
        ],
    }
    view = control.parse_checkpoints(doc, None, ready=True)
    assert [(e.id, e.status) for e in view.history] == [
        (4, EntryStatus.COMPLETED),
        (5, EntryStatus.FAILED),
        (6, EntryStatus.IN_PROGRESS),
    ]
    four = view.entry(4)
    assert four is not None and four.kind is types.CheckpointKind.SAVEPOINT
    assert four.path == "cjob/ns/j/savepoints/sp-0000000004" and four.completion_time == 11.0
    five = view.entry(5)
    assert five is not None and five.failure_reason == "TIMEOUT"
    # beyond the history, the latest completed and failed entries still answer
    three, two = view.entry(3), view.entry(2)
    assert three is not None and three.status is EntryStatus.COMPLETED
    assert two is not None and two.status is EntryStatus.FAILED and two.failure_reason == "DECLINED"
    assert view.entry(99) is None
