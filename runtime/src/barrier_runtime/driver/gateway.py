"""How the checkpoint coordinator reaches the running subtasks: the driver's gateway.

The coordinator triggers barriers and announces completed and aborted
checkpoints through this port; the gateway posts them as
:mod:`~barrier_runtime.core.task_messages` to every subtask of the current
attempt and keeps the job's result up to date (the records a completed
checkpoint published). Posting when no attempt runs is not an error: the next
attempt re-commits from the checkpoint's metadata.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

from barrier_runtime.core import metadata, task_messages, types
from barrier_runtime.driver import run_result


class Driver(Protocol):
    """What the gateway needs from the job driver."""

    result: run_result.JobResult

    def post_all(self, message: task_messages.ControlMessage) -> None: ...


class TaskGateway:
    """The coordinator's way to the running subtasks (its ``gateway`` port)."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def trigger(self, barrier: types.Barrier) -> None:
        self._driver.post_all(task_messages.TriggerCheckpoint(barrier))

    def notify_complete(self, meta: metadata.CheckpointMetadata) -> None:
        result = self._driver.result
        if all(meta.checkpoint_id > c for c in result.completed_checkpoints):
            result.records_published = dict(meta.records_published)
        # If torn down meanwhile, the next attempt re-commits from the metadata. Tasks are
        # told first: the driver shuts them down once the final checkpoint is listed.
        with contextlib.suppress(RuntimeError):
            self._driver.post_all(task_messages.CheckpointCompleted(meta))
        result.completed_checkpoints.append(meta.checkpoint_id)

    def notify_aborted(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        with contextlib.suppress(RuntimeError):  # no attempt running: nothing to tell
            self._driver.post_all(task_messages.CheckpointAborted(checkpoint_id, reason))
