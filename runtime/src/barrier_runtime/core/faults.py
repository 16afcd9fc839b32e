"""Crash injection at chosen points of the checkpoint life cycle.

A :class:`FaultInjector` holds a plan of :class:`Crash` entries; the executor
asks it at each point (``check``) and a matching crash raises
:class:`InjectedFault` exactly once. Matching is by point and by optional
filters (task, subtask, minimum checkpoint id, minimum records processed in
the attempt, minimum attempt number), so a plan reads as data::

    FaultInjector([
        Crash(FaultPoint.PROCESSING, subtask=1, after_records=5_000),
        Crash(FaultPoint.UPLOAD, checkpoint_id=4),
        Crash(FaultPoint.COMMIT, checkpoint_id=7),
    ])
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass


class FaultPoint(enum.Enum):
    PROCESSING = "processing"
    """While processing records (checked after each batch)."""
    SNAPSHOT = "snapshot"
    """During the synchronous part of a subtask snapshot."""
    UPLOAD = "upload"
    """During the asynchronous upload of snapshot state."""
    RESTORE = "restore"
    """While a subtask restores its state."""
    COMMIT = "commit"
    """While a sink commits the transactions of a completed checkpoint."""


class InjectedFault(RuntimeError):
    """A crash requested by the test's fault plan."""


@dataclass(frozen=True, slots=True)
class Crash:
    point: FaultPoint
    task: str | None = None
    subtask: int | None = None
    checkpoint_id: int | None = None
    """Fire at the first checkpoint with at least this id."""
    after_records: int | None = None
    """Fire once the subtask has processed at least this many records in the attempt."""
    attempt: int | None = None
    """Fire only in attempts numbered at least this (the first attempt is 0)."""

    def matches(
        self,
        point: FaultPoint,
        task: str,
        subtask: int,
        checkpoint_id: int | None,
        records: int | None,
        attempt: int,
    ) -> bool:
        return (
            point is self.point
            and (self.task is None or self.task == task)
            and (self.subtask is None or self.subtask == subtask)
            and (self.checkpoint_id is None or (checkpoint_id or 0) >= self.checkpoint_id)
            and (self.after_records is None or (records or 0) >= self.after_records)
            and (self.attempt is None or attempt >= self.attempt)
        )


class FaultInjector:
    """Fires each planned crash once, at the first matching point; thread-safe."""

    def __init__(self, crashes: list[Crash] | None = None) -> None:
        self._pending = list(crashes or [])
        self._fired: list[tuple[Crash, str]] = []
        self._lock = threading.Lock()

    @property
    def fired(self) -> list[tuple[Crash, str]]:
        with self._lock:
            return list(self._fired)

    @property
    def remaining(self) -> list[Crash]:
        with self._lock:
            return list(self._pending)

    def check(
        self,
        point: FaultPoint,
        *,
        task: str,
        subtask: int,
        attempt: int,
        checkpoint_id: int | None = None,
        records: int | None = None,
    ) -> None:
        if not self._pending:
            return
        with self._lock:
            for crash in self._pending:
                if crash.matches(point, task, subtask, checkpoint_id, records, attempt):
                    self._pending.remove(crash)
                    where = f"{point.value} in {task}#{subtask} (attempt {attempt}"
                    where += f", checkpoint {checkpoint_id})" if checkpoint_id else ")"
                    self._fired.append((crash, where))
                    break
            else:
                return
        raise InjectedFault(f"injected crash: {where}")


def crashes_for(crashes: tuple[Crash, ...], attempt: int) -> tuple[Crash, ...]:
    """The test crashes of attempt ``attempt``: those naming it (no attempt: the first).

    Remote workers are new processes in every attempt and cannot remember which crashes
    already fired, so a remote crash belongs to exactly one attempt.
    """
    return tuple(c for c in crashes if (c.attempt or 0) == attempt)
