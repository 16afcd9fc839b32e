"""The control API's documents: what the server writes, every reader reads back the same."""

from __future__ import annotations

import json
from typing import Any

import pytest

from barrier_runtime import control_document as doc
from barrier_runtime.checkpoint import stats
from barrier_runtime.control import job, views
from barrier_runtime.core import types

_DONE = stats.CheckpointStatsEntry(
    checkpoint_id=types.CheckpointId(7),
    status=stats.CheckpointStatus.COMPLETED,
    kind=types.CheckpointKind.SAVEPOINT,
    trigger_time=100.0,
    num_tasks=2,
    ack_times={},
    state_size=2048,
    alignment_duration=0.01,
    end_time=101.5,
    path="s3://b/sp-7",
)
_FAILED = stats.CheckpointStatsEntry(
    checkpoint_id=types.CheckpointId(8),
    status=stats.CheckpointStatus.FAILED,
    kind=types.CheckpointKind.CHECKPOINT,
    trigger_time=110.0,
    num_tasks=2,
    ack_times={},
    state_size=0,
    alignment_duration=0.0,
    end_time=111.0,
    failure_reason=types.FailureReason.TIMEOUT,
    failure_message="expired",
)
_STATS = stats.CheckpointStats(
    counts=stats.CheckpointCounts(triggered=2, completed=1, failed=1),
    history=(_FAILED, _DONE),
    latest_completed=_DONE,
    latest_savepoint=_DONE,
    latest_failed=_FAILED,
    consecutive_failures=1,
    next_checkpoint_id=types.CheckpointId(9),
)
_INFO = job.JobInfo(
    name="orders",
    state=job.JobState.RUNNING,
    attempt=2,
    restarts=1,
    parallelism=2,
    max_parallelism=128,
    start_time=50.0,
    ready=True,
    failure_times=(40.0,),
    startup_seconds=1.5,
)


def _wire(value: Any) -> Any:
    """What a client gets: the server's bytes, decoded."""
    return doc.from_json(doc.to_json(value), "test")


def test_every_server_document_reads_back_unchanged() -> None:
    job_doc = views.job_view(_INFO, "s3://bucket")
    assert doc.parse_job(_wire(job_doc)) == job_doc
    overview = views.checkpoints_view(_STATS)
    assert doc.parse_checkpoints(_wire(overview)) == overview
    entry = views.checkpoint_view(_DONE)
    assert doc.parse_entry(_wire(entry)) == entry
    refusal = doc.error_doc("no", "job-not-running", state="FAILED")
    assert doc.parse_error(_wire(refusal)) == refusal


def test_one_casing_and_a_version_on_every_body() -> None:
    for body in (
        views.job_view(_INFO),
        views.checkpoints_view(_STATS),
        views.checkpoint_view(_DONE),
        doc.error_doc("no"),
    ):
        assert body["api_version"] == doc.API_VERSION

        def keys(value: Any) -> list[str]:
            if isinstance(value, dict):
                return [k for key, v in value.items() for k in (key, *keys(v))]
            if isinstance(value, list):
                return [k for v in value for k in keys(v)]
            return []

        assert all(k == k.lower() for k in keys(body)), keys(body)


def test_a_wrong_field_is_named_with_its_path() -> None:
    overview: Any = _wire(views.checkpoints_view(_STATS))
    overview["history"][1]["size"] = "big"
    with pytest.raises(doc.ControlDocumentError, match=r"`body\.history\[1\]\.size` must be an"):
        doc.parse_checkpoints(overview)
    job_doc: Any = _wire(views.job_view(_INFO))
    del job_doc["max_parallelism"]
    with pytest.raises(doc.ControlDocumentError, match=r"`body\.max_parallelism` is missing"):
        doc.parse_job(job_doc)
    entry: Any = _wire(views.checkpoint_view(_DONE))
    entry["status"] = "COMPLETED"  # statuses are one spelling: the server's
    with pytest.raises(doc.ControlDocumentError, match='one of "in-progress", "completed"'):
        doc.parse_entry(entry)


def test_versions_newer_or_missing_are_refused_and_new_keys_ignored() -> None:
    job_doc: Any = _wire(views.job_view(_INFO))
    assert "added_later" not in doc.parse_job({**job_doc, "added_later": 1})
    with pytest.raises(doc.ControlDocumentError, match="version 2, newer than this reader's 1"):
        doc.parse_job({**job_doc, "api_version": 2})
    with pytest.raises(doc.ControlDocumentError, match="not a cjob control API answer"):
        doc.parse_job({k: v for k, v in job_doc.items() if k != "api_version"})
    with pytest.raises(doc.ControlDocumentError, match="not a JSON object"):
        doc.parse_stopped([1])
    with pytest.raises(doc.ControlDocumentError, match="not JSON"):
        doc.from_json(b"<html>", "GET /v1/job")


def test_posted_answers_and_refusals() -> None:
    accepted = {"api_version": 1, "id": 9, "kind": "checkpoint", "status": "in-progress"}
    assert doc.parse_triggered({**accepted, "message": ""})["id"] == 9
    stopped = {"api_version": 1, "id": 9, "kind": "savepoint", "status": "completed"}
    assert doc.parse_stopped({**stopped, "path": "s3://b/sp-9"})["path"] == "s3://b/sp-9"
    with pytest.raises(doc.ControlDocumentError, match=r"`body\.path` is missing"):
        doc.parse_stopped(stopped)
    assert doc.parse_error({"detail": "a proxy's page"}) is None
    assert doc.parse_error(json.loads('{"error": "x", "id": true}')) == {"error": "x"}
