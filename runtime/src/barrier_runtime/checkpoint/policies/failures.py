"""Counting checkpoint failures, and deciding when they force a job failover.

The job tolerates ``tolerable_failures`` *consecutive* counted failures; the
next one (number ``tolerable_failures + 1``) asks for a failover, exactly once
until the counter is reset. A completed checkpoint or savepoint resets the
counter, and so does a job restart.

Which failures count (the same split as Flink's ``CheckpointFailureManager``):

- counted — the checkpoint machinery itself is unhealthy: ``TIMEOUT``,
  ``DECLINED``, ``STORAGE_FAILURE``, ``CORRUPT_STREAM``;
- not counted — the failure is a consequence of something else, or not a
  failure of the job at all: ``SUBSUMED`` (a newer checkpoint completed),
  ``CANCELLED`` (a task cancelled because another one declined; the decline was
  counted), ``TASK_FAILURE`` (the job is already failing over; counting it would
  ask for a second failover), ``JOB_STOPPING``, ``TASKS_NOT_RUNNING`` (the job
  is not running, a restart is already under way), ``TOO_MANY_PENDING`` and
  ``MIN_PAUSE`` (trigger requests refused before anything started).

Savepoint failures never count: a savepoint is a user's request, and a failed
one must not restart a healthy job (Flink does the same).

>>> policy = TolerableFailuresPolicy(tolerable_failures=1)
>>> policy.checkpoint_failed(types.CheckpointKind.CHECKPOINT, types.FailureReason.TIMEOUT)
False
>>> policy.checkpoint_failed(types.CheckpointKind.CHECKPOINT, types.FailureReason.SUBSUMED)
False
>>> policy.checkpoint_failed(types.CheckpointKind.CHECKPOINT, types.FailureReason.DECLINED)
True
>>> policy.checkpoint_failed(types.CheckpointKind.CHECKPOINT, types.FailureReason.DECLINED)
False
"""

from __future__ import annotations

from barrier_runtime.core import types

COUNTED_REASONS: frozenset[types.FailureReason] = frozenset(
    {
        types.FailureReason.TIMEOUT,
        types.FailureReason.DECLINED,
        types.FailureReason.STORAGE_FAILURE,
        types.FailureReason.CORRUPT_STREAM,
    }
)
"""Failure reasons that count towards ``tolerable_failures``."""


def counts(kind: types.CheckpointKind, reason: types.FailureReason) -> bool:
    """Whether a failure of a ``kind`` snapshot for ``reason`` counts towards the limit."""
    return kind is types.CheckpointKind.CHECKPOINT and reason in COUNTED_REASONS


class TolerableFailuresPolicy:
    """Counts consecutive counted failures; asks for one failover when they exceed the limit."""

    def __init__(self, tolerable_failures: int) -> None:
        if tolerable_failures < 0:
            raise ValueError(f"tolerable_failures must not be negative, got {tolerable_failures}")
        self._tolerable = tolerable_failures
        self._consecutive = 0
        self._failover_requested = False

    @property
    def tolerable_failures(self) -> int:
        return self._tolerable

    @property
    def consecutive_failures(self) -> int:
        return self._consecutive

    def checkpoint_failed(self, kind: types.CheckpointKind, reason: types.FailureReason) -> bool:
        """Record a failure; True exactly once, when the counted failures first exceed the limit."""
        if not counts(kind, reason):
            return False
        self._consecutive += 1
        if self._consecutive > self._tolerable and not self._failover_requested:
            self._failover_requested = True
            return True
        return False

    def failover_message(self, last_failure: str) -> str:
        """Why the job must fail over, for the failover callback and the logs."""
        return (
            f"checkpointing failed {self._consecutive} times in a row, more than the "
            f"{self._tolerable} tolerated; last failure: {last_failure}"
        )

    def checkpoint_completed(self) -> None:
        """A checkpoint or savepoint completed: the failures are no longer consecutive."""
        self.reset()

    def reset(self) -> None:
        """Forget all failures (after a job restart) and allow a new failover request."""
        self._consecutive = 0
        self._failover_requested = False
