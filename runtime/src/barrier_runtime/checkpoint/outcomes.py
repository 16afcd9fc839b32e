"""What the coordinator answers: the outcome of a trigger request and of a checkpoint."""

from __future__ import annotations

from dataclasses import dataclass

from barrier_runtime.checkpoint import stats
from barrier_runtime.core import metadata as checkpoint_metadata
from barrier_runtime.core import types


class UnknownCheckpointError(LookupError):
    """Asked about a checkpoint id this coordinator never triggered (or has forgotten)."""


@dataclass(frozen=True, slots=True)
class TriggerOutcome:
    """The answer to a trigger request.

    Three shapes, one named constructor each: *triggered* (``checkpoint_id``
    set, no ``failure``), *rejected* before anything started (no id was used,
    ``failure`` is ``TOO_MANY_PENDING`` or ``MIN_PAUSE``) and *failed* while
    triggering (an id was used and the checkpoint was aborted at once).

    >>> outcome = TriggerOutcome.triggered(types.CheckpointId(4), types.CheckpointKind.SAVEPOINT)
    >>> outcome.ok, outcome.checkpoint_id
    (True, 4)
    """

    kind: types.CheckpointKind
    checkpoint_id: types.CheckpointId | None = None
    failure: types.FailureReason | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None

    @classmethod
    def triggered(
        cls, checkpoint_id: types.CheckpointId, kind: types.CheckpointKind
    ) -> TriggerOutcome:
        return cls(kind, checkpoint_id, message=f"{kind.value} {checkpoint_id} triggered")

    @classmethod
    def rejected(
        cls, kind: types.CheckpointKind, reason: types.FailureReason, message: str
    ) -> TriggerOutcome:
        return cls(kind, None, reason, message)

    @classmethod
    def failed(
        cls,
        checkpoint_id: types.CheckpointId,
        kind: types.CheckpointKind,
        reason: types.FailureReason,
        message: str,
    ) -> TriggerOutcome:
        return cls(kind, checkpoint_id, reason, message)


@dataclass(frozen=True, slots=True)
class CheckpointOutcome:
    """How a checkpoint ended, or that it had not ended when a wait gave up."""

    checkpoint_id: types.CheckpointId
    kind: types.CheckpointKind
    status: stats.CheckpointStatus
    path: str | None = None
    metadata: checkpoint_metadata.CheckpointMetadata | None = None
    failure: types.FailureReason | None = None
    message: str = ""

    @property
    def is_final(self) -> bool:
        return self.status is not stats.CheckpointStatus.IN_PROGRESS

    @property
    def completed(self) -> bool:
        return self.status is stats.CheckpointStatus.COMPLETED

    @classmethod
    def completed_at(
        cls, committed: checkpoint_metadata.CheckpointMetadata, path: str
    ) -> CheckpointOutcome:
        return cls(
            committed.checkpoint_id,
            committed.kind,
            stats.CheckpointStatus.COMPLETED,
            path=path,
            metadata=committed,
            message=f"{committed.kind.value} {committed.checkpoint_id} committed at {path}",
        )

    @classmethod
    def failed_with(
        cls,
        checkpoint_id: types.CheckpointId,
        kind: types.CheckpointKind,
        reason: types.FailureReason,
        message: str,
    ) -> CheckpointOutcome:
        return cls(
            checkpoint_id, kind, stats.CheckpointStatus.FAILED, failure=reason, message=message
        )

    @classmethod
    def still_in_progress(
        cls, checkpoint_id: types.CheckpointId, kind: types.CheckpointKind
    ) -> CheckpointOutcome:
        return cls(
            checkpoint_id,
            kind,
            stats.CheckpointStatus.IN_PROGRESS,
            message=f"{kind.value} {checkpoint_id} is still in progress",
        )
