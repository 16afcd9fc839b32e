"""The job's values as the control API's documents (pure: values in, dicts out).

The shapes, their casing and version are :mod:`barrier_runtime.control_document`,
the one contract the operator, the CLI and the tests read with.
"""

from __future__ import annotations

import datetime

from barrier_runtime import control_document as doc
from barrier_runtime.checkpoint import stats
from barrier_runtime.control import job


def iso_utc(epoch: float) -> str:
    """An epoch time as ISO 8601 in UTC.

    >>> iso_utc(0.0)
    '1970-01-01T00:00:00Z'
    """
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)
    return moment.isoformat().replace("+00:00", "Z")


def job_view(info: job.JobInfo, storage: str | None = None) -> doc.JobDoc:
    return {
        "api_version": doc.API_VERSION,
        "name": info.name,
        "state": info.state.value,
        "attempt": info.attempt,
        "restarts": info.restarts,
        "parallelism": info.parallelism,
        "max_parallelism": info.max_parallelism,
        "start_time": iso_utc(info.start_time),
        "start_timestamp": info.start_time,
        "ready": info.ready,
        "restored_from": info.restored_from,
        "failure": info.failure,
        "failure_detail": info.failure_detail,
        "failure_timestamps": list(info.failure_times),
        "startup_seconds": info.startup_seconds,
        "storage": storage,
    }


def entry_view(entry: stats.CheckpointStatsEntry) -> doc.CheckpointEntryDoc:
    """One entry, as listed in ``/v1/checkpoints`` (:func:`checkpoint_view` adds the version)."""
    completed = entry.status is stats.CheckpointStatus.COMPLETED
    failed = entry.status is stats.CheckpointStatus.FAILED
    return {
        "id": int(entry.checkpoint_id),
        "status": entry.status.value,
        "kind": entry.kind.value,
        "trigger_timestamp": entry.trigger_time,
        "latest_ack_timestamp": max(entry.ack_times.values(), default=None),
        "completion_timestamp": entry.end_time if completed else None,
        "failure_timestamp": entry.end_time if failed else None,
        "duration": entry.duration,
        "size": entry.state_size,
        "uploaded_size": entry.uploaded_size,
        "alignment_duration": entry.alignment_duration,
        "path": entry.path,
        "failure_reason": None if entry.failure_reason is None else entry.failure_reason.value,
        "failure_message": entry.failure_message or None,
        "acknowledged": entry.num_acknowledged,
        "tasks": entry.num_tasks,
    }


def checkpoint_view(entry: stats.CheckpointStatsEntry) -> doc.CheckpointEntryDoc:
    """``GET /v1/checkpoints/{id}``."""
    return {"api_version": doc.API_VERSION, **entry_view(entry)}


def _maybe(entry: stats.CheckpointStatsEntry | None) -> doc.CheckpointEntryDoc | None:
    return None if entry is None else entry_view(entry)


def _optional_int(value: int | None) -> int | None:
    return None if value is None else int(value)


def checkpoints_view(snapshot: stats.CheckpointStats) -> doc.CheckpointsDoc:
    counts = snapshot.counts
    rejection = snapshot.last_rejection
    return {
        "api_version": doc.API_VERSION,
        "counts": {
            "triggered": counts.triggered,
            "in_progress": counts.in_progress,
            "completed": counts.completed,
            "failed": counts.failed,
            "rejected": counts.rejected,
        },
        "latest": {
            "completed": _maybe(snapshot.latest_completed),
            "failed": _maybe(snapshot.latest_failed),
            "savepoint": _maybe(snapshot.latest_savepoint),
            "in_progress": _maybe(snapshot.latest_in_progress),
        },
        "history": [entry_view(e) for e in snapshot.history],
        "consecutive_failures": snapshot.consecutive_failures,
        "next_id": _optional_int(snapshot.next_checkpoint_id),
        "last_rejection": None
        if rejection is None
        else {
            "kind": rejection.kind.value,
            "reason": rejection.reason.value,
            "message": rejection.message,
            "timestamp": rejection.time,
        },
    }
