"""The operator reads the control API's answers through the contract (``control_document``)."""

from __future__ import annotations

from typing import Any

from cjob_operator_testing import control_docs

from barrier_runtime import control_document as contract
from barrier_runtime.core import types
from cjob_operator.act import control
from cjob_operator.model.observation import EntryStatus

_RECORDS: list[dict[str, Any]] = [
    {
        "id": 4,
        "status": "completed",
        "kind": "savepoint",
        "trigger_timestamp": 10.0,
        "completion_timestamp": 11.0,
        "duration": 1.0,
        "size": 2048,
        "path": "cjob/ns/j/savepoints/sp-0000000004",
    },
    {
        "id": 5,
        "status": "failed",
        "kind": "savepoint",
        "trigger_timestamp": 12.0,
        "failure_timestamp": 13.0,
        "failure_reason": "timeout",
    },
    {"id": 6, "status": "in-progress", "kind": "checkpoint", "trigger_timestamp": 20.0},
]


def _read(records: list[dict[str, Any]], job: Any = None) -> Any:
    """What ``ControlClient.observe`` does with the two bodies."""
    overview = contract.parse_checkpoints(control_docs.overview(records))
    return control.parse_checkpoints(
        overview, None if job is None else contract.parse_job(job), ready=True
    )


def test_checkpoint_overview_is_parsed() -> None:
    job = {**control_docs.job("j", "RUNNING", 1.0), "failure_timestamps": [3.0], "failure": "x"}
    view = _read(_RECORDS, job)
    assert view.ready and view.job_state == "RUNNING" and view.last_failure == "x"
    assert view.failure_times == (3.0,)
    assert view.last_trigger_time == 20.0
    assert view.latest_completed is not None
    assert view.latest_completed.duration_seconds == 1.0
    assert view.latest_completed.size_bytes == 2048
    assert view.latest_completed.kind is types.CheckpointKind.SAVEPOINT
    assert view.latest_failed is not None and view.latest_failed.reason == "timeout"
    assert view.latest_failed.time == 13.0


def test_default_url_is_the_headless_service() -> None:
    assert control.base_url("ns", "job", "job-driver", 8080) == "http://job-driver.ns.svc:8080"


def test_history_entries_are_parsed_for_their_outcome() -> None:
    """The operator settles triggered savepoints and checkpoint nonces from the history."""
    view = _read(_RECORDS)
    assert sorted((e.id, e.status) for e in view.history) == [
        (4, EntryStatus.COMPLETED),
        (5, EntryStatus.FAILED),
        (6, EntryStatus.IN_PROGRESS),
    ]
    four = view.entry(4)
    assert four is not None and four.kind is types.CheckpointKind.SAVEPOINT
    assert four.path == "cjob/ns/j/savepoints/sp-0000000004" and four.completion_time == 11.0
    five = view.entry(5)
    assert five is not None and five.failure_reason == "timeout"
    assert view.entry(99) is None
