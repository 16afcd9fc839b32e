"""Checkpoint statistics for the control API (``GET /v1/checkpoints``) and metrics.

The coordinator feeds a :class:`StatsTracker` under its lock; :meth:`StatsTracker.snapshot`
returns a frozen :class:`CheckpointStats` that is safe to hand to any thread.
History is bounded: every in-progress checkpoint plus the newest
``history_size`` finished ones; the latest completed, failed and savepoint
entries are kept even when they fall out of the history.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Mapping
from dataclasses import dataclass

from barrier_runtime.checkpoint import pending
from barrier_runtime.core import metadata, types


class CheckpointStatus(enum.Enum):
    IN_PROGRESS = "in-progress"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class CheckpointStatsEntry:
    """One checkpoint as the control API shows it. Times are epoch seconds, sizes bytes."""

    checkpoint_id: types.CheckpointId
    status: CheckpointStatus
    kind: types.CheckpointKind
    trigger_time: float
    num_tasks: int
    ack_times: Mapping[metadata.TaskKey, float]
    state_size: int
    alignment_duration: float
    """The longest alignment reported by any subtask."""
    uploaded_size: int = 0
    """Bytes written for it (less than ``state_size`` when incremental checkpoints reuse
    objects of earlier ones)."""
    end_time: float | None = None
    """When it completed (committed) or failed; None while in progress."""
    path: str | None = None
    """Where the store committed it (completed only)."""
    failure_reason: types.FailureReason | None = None
    failure_message: str = ""

    @property
    def num_acknowledged(self) -> int:
        return len(self.ack_times)

    @property
    def duration(self) -> float | None:
        """Seconds from trigger to completion or failure; None while in progress."""
        return None if self.end_time is None else self.end_time - self.trigger_time


@dataclass(frozen=True, slots=True)
class CheckpointCounts:
    triggered: int = 0
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    rejected: int = 0
    """Trigger requests refused before a checkpoint started (no id was used)."""


@dataclass(frozen=True, slots=True)
class TriggerRejection:
    """The last trigger request that was refused."""

    kind: types.CheckpointKind
    reason: types.FailureReason
    message: str
    time: float


@dataclass(frozen=True, slots=True)
class CheckpointStats:
    """A frozen snapshot of the coordinator's checkpoint statistics."""

    counts: CheckpointCounts
    history: tuple[CheckpointStatsEntry, ...]
    """In-progress and recently finished checkpoints, newest id first."""
    latest_completed: CheckpointStatsEntry | None = None
    latest_savepoint: CheckpointStatsEntry | None = None
    latest_failed: CheckpointStatsEntry | None = None
    latest_in_progress: CheckpointStatsEntry | None = None
    last_rejection: TriggerRejection | None = None
    consecutive_failures: int = 0
    next_checkpoint_id: types.CheckpointId | None = None

    def entry(self, checkpoint_id: types.CheckpointId) -> CheckpointStatsEntry | None:
        """The entry for ``checkpoint_id`` if it is still in the history or is a latest one."""
        candidates = (
            *self.history,
            self.latest_completed,
            self.latest_savepoint,
            self.latest_failed,
        )
        for candidate in candidates:
            if candidate is not None and candidate.checkpoint_id == checkpoint_id:
                return candidate
        return None


class StatsTracker:
    """Accumulates checkpoint statistics; not thread-safe (the coordinator holds its lock)."""

    def __init__(self, history_size: int = 20) -> None:
        if history_size < 1:
            raise ValueError(f"history_size must be at least 1, got {history_size}")
        self._in_progress: dict[types.CheckpointId, pending.PendingCheckpoint] = {}
        self._finished: collections.deque[CheckpointStatsEntry] = collections.deque(
            maxlen=history_size
        )
        self._triggered = 0
        self._completed = 0
        self._failed = 0
        self._rejected = 0
        self._latest_completed: CheckpointStatsEntry | None = None
        self._latest_savepoint: CheckpointStatsEntry | None = None
        self._latest_failed: CheckpointStatsEntry | None = None
        self._last_rejection: TriggerRejection | None = None

    def checkpoint_triggered(self, checkpoint: pending.PendingCheckpoint) -> None:
        self._triggered += 1
        self._in_progress[checkpoint.checkpoint_id] = checkpoint

    def checkpoint_completed(
        self, checkpoint: pending.PendingCheckpoint, end_time: float, path: str
    ) -> CheckpointStatsEntry:
        self._in_progress.pop(checkpoint.checkpoint_id, None)
        entry = _entry(checkpoint, CheckpointStatus.COMPLETED, end_time=end_time, path=path)
        self._completed += 1
        self._finished.append(entry)
        if _newer(entry, self._latest_completed):
            self._latest_completed = entry
        if checkpoint.kind is types.CheckpointKind.SAVEPOINT and _newer(
            entry, self._latest_savepoint
        ):
            self._latest_savepoint = entry
        return entry

    def checkpoint_failed(
        self,
        checkpoint: pending.PendingCheckpoint,
        end_time: float,
        reason: types.FailureReason,
        message: str,
    ) -> CheckpointStatsEntry:
        self._in_progress.pop(checkpoint.checkpoint_id, None)
        entry = _entry(
            checkpoint,
            CheckpointStatus.FAILED,
            end_time=end_time,
            failure_reason=reason,
            failure_message=message,
        )
        self._failed += 1
        self._finished.append(entry)
        self._latest_failed = entry
        return entry

    def trigger_rejected(
        self, kind: types.CheckpointKind, reason: types.FailureReason, message: str, now: float
    ) -> None:
        self._rejected += 1
        self._last_rejection = TriggerRejection(kind, reason, message, now)

    def snapshot(
        self, consecutive_failures: int = 0, next_checkpoint_id: types.CheckpointId | None = None
    ) -> CheckpointStats:
        running = [_entry(p, CheckpointStatus.IN_PROGRESS) for p in self._in_progress.values()]
        history = sorted([*running, *self._finished], key=lambda e: e.checkpoint_id, reverse=True)
        counts = CheckpointCounts(
            triggered=self._triggered,
            in_progress=len(running),
            completed=self._completed,
            failed=self._failed,
            rejected=self._rejected,
        )
        return CheckpointStats(
            counts=counts,
            history=tuple(history),
            latest_completed=self._latest_completed,
            latest_savepoint=self._latest_savepoint,
            latest_failed=self._latest_failed,
            latest_in_progress=max(running, key=lambda e: e.checkpoint_id, default=None),
            last_rejection=self._last_rejection,
            consecutive_failures=consecutive_failures,
            next_checkpoint_id=next_checkpoint_id,
        )


def _newer(entry: CheckpointStatsEntry, current: CheckpointStatsEntry | None) -> bool:
    return current is None or entry.checkpoint_id > current.checkpoint_id


def _entry(
    checkpoint: pending.PendingCheckpoint,
    status: CheckpointStatus,
    *,
    end_time: float | None = None,
    path: str | None = None,
    failure_reason: types.FailureReason | None = None,
    failure_message: str = "",
) -> CheckpointStatsEntry:
    return CheckpointStatsEntry(
        checkpoint_id=checkpoint.checkpoint_id,
        status=status,
        kind=checkpoint.kind,
        trigger_time=checkpoint.trigger_time,
        num_tasks=len(checkpoint.expected_tasks),
        ack_times=checkpoint.ack_times,
        state_size=checkpoint.state_size,
        alignment_duration=checkpoint.alignment_duration,
        uploaded_size=checkpoint.uploaded_size,
        end_time=end_time,
        path=path,
        failure_reason=failure_reason,
        failure_message=failure_message,
    )
