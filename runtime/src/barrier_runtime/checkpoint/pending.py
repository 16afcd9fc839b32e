"""A checkpoint that has been triggered and is not finished yet.

A :class:`PendingCheckpoint` moves through two situations:

1. ``COLLECTING_ACKS`` — the barrier is travelling; acknowledgements arrive
   from the expected subtasks, each accepted once.
2. ``COMMITTING`` — every expected subtask acknowledged; the metadata is built
   and being written to the store. From here the checkpoint can no longer be
   aborted by a timeout, a decline or a subsumption: the commit decides.

It then leaves the coordinator's pending table as completed or failed. The
class is plain bookkeeping and not thread-safe: the coordinator calls it under
its lock.

>>> from barrier_runtime.core import metadata, types
>>> task = metadata.TaskKey(types.TaskId("src"), 0)
>>> pending = PendingCheckpoint(types.Barrier(types.CheckpointId(1), 10.0), frozenset({task}))
>>> pending.acknowledge(metadata.TaskAcknowledgement(types.CheckpointId(1), task), now=11.0)
<AckResult.SUCCESS: 'success'>
>>> pending.is_fully_acknowledged
True
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from barrier_runtime.core import metadata, types


class AckResult(enum.Enum):
    """What the coordinator made of an acknowledgement."""

    SUCCESS = "success"
    """Accepted: it counts towards completing the checkpoint."""
    DUPLICATE = "duplicate"
    """This subtask already acknowledged this checkpoint; ignored."""
    UNKNOWN = "unknown"
    """Not a checkpoint this coordinator triggered, or not a subtask it expects."""
    DISCARDED = "discarded"
    """The checkpoint is already over (aborted, or completed and gone); the caller may
    delete the state the acknowledgement points to, it is referenced by nothing."""


class PendingStatus(enum.Enum):
    COLLECTING_ACKS = "collecting-acks"
    COMMITTING = "committing"


class PendingCheckpoint:
    """Acknowledgements collected so far for one triggered checkpoint."""

    def __init__(
        self,
        barrier: types.Barrier,
        expected_tasks: frozenset[metadata.TaskKey],
        published_before: Mapping[types.StepId, int] | None = None,
    ) -> None:
        if not expected_tasks:
            raise ValueError("a checkpoint needs at least one task to acknowledge it")
        self._barrier = barrier
        self._expected = expected_tasks
        self._acks: dict[metadata.TaskKey, metadata.TaskAcknowledgement] = {}
        self._ack_times: dict[metadata.TaskKey, float] = {}
        self._status = PendingStatus.COLLECTING_ACKS
        self._published_before = dict(published_before or {})
        """Records published by the checkpoint the attempt restored (per sink step)."""

    def __str__(self) -> str:
        return f"{self.kind.value} {self.checkpoint_id}"

    @property
    def checkpoint_id(self) -> types.CheckpointId:
        return self._barrier.checkpoint_id

    @property
    def kind(self) -> types.CheckpointKind:
        return self._barrier.kind

    @property
    def barrier(self) -> types.Barrier:
        return self._barrier

    @property
    def trigger_time(self) -> float:
        return self._barrier.timestamp

    @property
    def expected_tasks(self) -> frozenset[metadata.TaskKey]:
        return self._expected

    @property
    def status(self) -> PendingStatus:
        return self._status

    @property
    def is_committing(self) -> bool:
        return self._status is PendingStatus.COMMITTING

    @property
    def is_fully_acknowledged(self) -> bool:
        return len(self._acks) == len(self._expected)

    @property
    def missing_tasks(self) -> list[metadata.TaskKey]:
        """The expected subtasks that have not acknowledged yet, in order."""
        return sorted(self._expected - self._acks.keys())

    @property
    def ack_times(self) -> Mapping[metadata.TaskKey, float]:
        """When each subtask's acknowledgement arrived (coordinator clock)."""
        return dict(self._ack_times)

    @property
    def state_size(self) -> int:
        """Bytes of state uploaded so far (sum of the acknowledged handles)."""
        return sum(h.size for ack in self._acks.values() for h in ack.state_handles)

    @property
    def uploaded_size(self) -> int:
        """Bytes of state written for this checkpoint so far: with incremental checkpoints,
        its deltas (and new bases) only; the rest of :attr:`state_size` was written before."""
        return sum(ack.metrics.uploaded_size for ack in self._acks.values())

    @property
    def alignment_duration(self) -> float:
        """The longest alignment any subtask reported, in seconds."""
        return max((a.metrics.alignment_duration for a in self._acks.values()), default=0.0)

    def acknowledge(self, ack: metadata.TaskAcknowledgement, now: float) -> AckResult:
        """Accept ``ack`` once per expected subtask."""
        if ack.checkpoint_id != self.checkpoint_id:
            raise ValueError(
                f"acknowledgement of checkpoint {ack.checkpoint_id} "
                f"given to checkpoint {self.checkpoint_id}"
            )
        if ack.task not in self._expected:
            return AckResult.UNKNOWN
        if ack.task in self._acks:
            return AckResult.DUPLICATE
        self._acks[ack.task] = ack
        self._ack_times[ack.task] = now
        return AckResult.SUCCESS

    def start_commit(
        self, completion_time: float, fingerprint: metadata.JobFingerprint
    ) -> metadata.CheckpointMetadata:
        """Move to ``COMMITTING`` and build the metadata document to commit."""
        if self._status is not PendingStatus.COLLECTING_ACKS:
            raise RuntimeError(f"checkpoint {self.checkpoint_id} is already being committed")
        if not self.is_fully_acknowledged:
            raise RuntimeError(
                f"checkpoint {self.checkpoint_id} cannot commit: "
                f"no acknowledgement from {', '.join(map(str, self.missing_tasks))}"
            )
        self._status = PendingStatus.COMMITTING
        return metadata.CheckpointMetadata.from_acknowledgements(
            self.checkpoint_id,
            self.kind,
            self.trigger_time,
            completion_time,
            fingerprint,
            list(self._acks.values()),
            self._published_before,
        )
