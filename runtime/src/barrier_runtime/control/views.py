"""The JSON documents the control API answers with (pure: values in, dicts out).

``/v1/checkpoints`` uses snake_case keys: the operator's client parses exactly
``counts.in_progress``, ``latest.{completed,failed,in_progress}`` and
``history[].{id,status,trigger_timestamp,completion_timestamp,duration,size,
path,failure_reason}``. ``/v1/job`` uses camelCase, like a Kubernetes status.
Times are epoch seconds (floats), durations seconds, sizes bytes.
"""

from __future__ import annotations

import datetime
from typing import TypedDict

from barrier_runtime.checkpoint import stats
from barrier_runtime.control import job


class JobView(TypedDict):
    name: str
    state: str
    attempt: int
    restarts: int
    parallelism: int
    maxParallelism: int
    startTime: str
    """ISO 8601, UTC."""
    startTimestamp: float
    """The same instant in epoch seconds."""
    ready: bool
    restoredFrom: int | None
    failure: str | None
    failureDetail: str | None
    """The last failure's traceback."""
    failureTimestamps: list[float]
    """When each failed attempt of this driver failed (epoch seconds)."""
    startupSeconds: float | None
    """The latest attempt that got running: its start to every subtask running."""
    storage: str | None


class CheckpointEntryView(TypedDict):
    id: int
    status: str
    """``in-progress``, ``completed`` or ``failed``."""
    kind: str
    trigger_timestamp: float
    latest_ack_timestamp: float | None
    completion_timestamp: float | None
    """Set when completed (committed)."""
    failure_timestamp: float | None
    """Set when failed."""
    duration: float | None
    """Trigger to completion or failure; null while in progress."""
    size: int
    alignment_duration: float
    path: str | None
    failure_reason: str | None
    failure_message: str | None
    acknowledged: int
    tasks: int


class CountsView(TypedDict):
    triggered: int
    in_progress: int
    completed: int
    failed: int
    rejected: int


class LatestView(TypedDict):
    completed: CheckpointEntryView | None
    failed: CheckpointEntryView | None
    savepoint: CheckpointEntryView | None
    in_progress: CheckpointEntryView | None


class RejectionView(TypedDict):
    kind: str
    reason: str
    message: str
    timestamp: float


class CheckpointsView(TypedDict):
    counts: CountsView
    latest: LatestView
    history: list[CheckpointEntryView]
    consecutive_failures: int
    next_id: int | None
    last_rejection: RejectionView | None


def iso_utc(epoch: float) -> str:
    """An epoch time as ISO 8601 in UTC.

    >>> iso_utc(0.0)
    '1970-01-01T00:00:00Z'
    """
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)
    return moment.isoformat().replace("+00:00", "Z")


def job_view(info: job.JobInfo, storage: str | None = None) -> JobView:
    return {
        "name": info.name,
        "state": info.state.value,
        "attempt": info.attempt,
        "restarts": info.restarts,
        "parallelism": info.parallelism,
        "maxParallelism": info.max_parallelism,
        "startTime": iso_utc(info.start_time),
        "startTimestamp": info.start_time,
        "ready": info.ready,
        "restoredFrom": info.restored_from,
        "failure": info.failure,
        "failureDetail": info.failure_detail,
        "failureTimestamps": list(info.failure_times),
        "startupSeconds": info.startup_seconds,
        "storage": storage,
    }


def entry_view(entry: stats.CheckpointStatsEntry) -> CheckpointEntryView:
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
        "alignment_duration": entry.alignment_duration,
        "path": entry.path,
        "failure_reason": None if entry.failure_reason is None else entry.failure_reason.value,
        "failure_message": entry.failure_message or None,
        "acknowledged": entry.num_acknowledged,
        "tasks": entry.num_tasks,
    }


def _maybe(entry: stats.CheckpointStatsEntry | None) -> CheckpointEntryView | None:
    return None if entry is None else entry_view(entry)


def _optional_int(value: int | None) -> int | None:
    return None if value is None else int(value)


def checkpoints_view(snapshot: stats.CheckpointStats) -> CheckpointsView:
    counts = snapshot.counts
    rejection = snapshot.last_rejection
    return {
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
