"""Messages from the executor and the coordinator to a running subtask.

The driver<->task vocabulary: the driver posts them, the task engine obeys them.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrier_runtime.core import metadata, types


@dataclass(frozen=True, slots=True)
class TriggerCheckpoint:
    """Sources inject the barrier; other tasks snapshot directly only once finished."""

    barrier: types.Barrier


@dataclass(frozen=True, slots=True)
class CheckpointCompleted:
    metadata: metadata.CheckpointMetadata


@dataclass(frozen=True, slots=True)
class CheckpointAborted:
    checkpoint_id: types.CheckpointId
    reason: types.FailureReason


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Leave the run loop after everything queued before this message."""


ControlMessage = TriggerCheckpoint | CheckpointCompleted | CheckpointAborted | Shutdown
