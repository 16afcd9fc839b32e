"""What a run of the driver's restart loop ends with: its result, or why the job failed."""

from __future__ import annotations

from dataclasses import dataclass, field

from barrier_runtime import task_failure
from barrier_runtime.core import types


class JobFailedError(RuntimeError):
    """The job failed more often than its restart budget allows.

    ``detail`` is the last failure's traceback (the user's code, for an error in a step).
    """

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class UnrecoverableJobError(JobFailedError):
    """The job failed in a way no restart can heal (a poisoned record, an invalid pipeline)."""


class JobAbortedError(JobFailedError):
    """The job was stopped without a savepoint (:meth:`JobDriver.abort`): the next start
    restores the latest completed checkpoint."""


@dataclass
class JobResult:
    """What happened during a run."""

    attempts: int = 0
    restarts: int = 0
    failures: list[str] = field(default_factory=list)
    completed_checkpoints: list[int] = field(default_factory=list)
    restored_from: list[int | None] = field(default_factory=list)
    final_checkpoint: int | None = None
    stopped_with_savepoint: str | None = None
    """Path of the savepoint the job was stopped with, if it was."""
    stopped_savepoint_id: int | None = None
    """Id of that savepoint."""
    failure_times: list[float] = field(default_factory=list)
    """When each failed attempt failed (the driver's clock)."""
    last_failure: task_failure.TaskFailure | None = None
    startup_seconds: list[float] = field(default_factory=list)  # start → all subtasks running
    restore_point_seconds: list[float] = field(default_factory=list)
    """Per attempt: choosing its restore point, every object of it read and verified."""
    records_published: dict[types.StepId, int] = field(default_factory=dict)
    """Per sink step: records published by the newest completed checkpoint (all attempts and
    runs: counted at commit, from the checkpoints' metadata, never from live counters)."""
