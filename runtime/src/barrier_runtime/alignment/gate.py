"""The bookkeeping of one input gate, and the context the handler states act through.

:class:`GateBook` is mutable and private to one barrier handler:
which channels are closed and blocked, which checkpoints are pending and which
channels delivered each one, the newest id seen, the last barrier per channel.
It implements :class:`~barrier_runtime.alignment.controller.AlignmentContext`,
so the only way a state can block, unblock or snapshot is through a method
that keeps this bookkeeping and the task's view in step.
"""

from __future__ import annotations

import dataclasses

from barrier_runtime.alignment import controller, policy
from barrier_runtime.core import clock as clocks
from barrier_runtime.core import types


@dataclasses.dataclass(slots=True)
class PendingCheckpoint:
    """A checkpoint this gate has seen a barrier of, not yet completed or aborted."""

    barrier: types.Barrier
    """The first barrier that arrived; its kind and timestamp describe the checkpoint."""
    started_at: float
    """Clock time of the first barrier; alignment duration is measured from here."""
    delivered: set[controller.ChannelId] = dataclasses.field(default_factory=set)


class GateBook:
    """Facts about the gate plus the actions states may take (an ``AlignmentContext``)."""

    def __init__(
        self,
        num_channels: int,
        task: controller.BarrierHandlerController,
        clock: clocks.Clock,
        alignment: policy.AlignmentPolicy,
    ) -> None:
        self.num_channels = num_channels
        self.task = task
        self.clock = clock
        self.policy = alignment
        self.closed: set[controller.ChannelId] = set()
        self.blocked: set[controller.ChannelId] = set()
        self.pending: dict[types.CheckpointId, PendingCheckpoint] = {}
        """Oldest first: a checkpoint is only ever started with an id above every seen id."""
        self.latest_seen: types.CheckpointId | None = None
        self.last_completed: types.CheckpointId | None = None
        self.last_barrier: dict[controller.ChannelId, types.CheckpointId] = {}

    # -- facts ---------------------------------------------------------------

    def is_new(self, checkpoint_id: types.CheckpointId) -> bool:
        """Above every id this gate has seen in a barrier or a cancellation."""
        return self.latest_seen is None or checkpoint_id > self.latest_seen

    def has_delivered(
        self, checkpoint_id: types.CheckpointId, channel: controller.ChannelId
    ) -> bool:
        entry = self.pending.get(checkpoint_id)
        return entry is not None and channel in entry.delivered

    def older_pending(self, checkpoint_id: types.CheckpointId) -> list[types.CheckpointId]:
        """Pending ids strictly below ``checkpoint_id``, oldest first."""
        return [pending_id for pending_id in self.pending if pending_id < checkpoint_id]

    def pending_up_to(self, checkpoint_id: types.CheckpointId) -> list[types.CheckpointId]:
        """Pending ids at or below ``checkpoint_id``, oldest first."""
        return [pending_id for pending_id in self.pending if pending_id <= checkpoint_id]

    # -- bookkeeping the handler does -----------------------------------------

    def see(self, checkpoint_id: types.CheckpointId) -> None:
        if self.is_new(checkpoint_id):
            self.latest_seen = checkpoint_id

    def start(self, barrier: types.Barrier) -> None:
        self.see(barrier.checkpoint_id)
        self.pending[barrier.checkpoint_id] = PendingCheckpoint(barrier, self.clock.now())

    def deliver(self, checkpoint_id: types.CheckpointId, channel: controller.ChannelId) -> None:
        self.pending[checkpoint_id].delivered.add(channel)

    def forget(self, checkpoint_id: types.CheckpointId) -> None:
        del self.pending[checkpoint_id]

    # -- AlignmentContext: facts a state may ask --------------------------------

    def all_barriers_received(self, checkpoint_id: types.CheckpointId) -> bool:
        delivered = self.pending[checkpoint_id].delivered
        return all(
            channel in delivered or channel in self.closed for channel in range(self.num_channels)
        )

    def starts_unaligned(self, barrier: types.Barrier) -> bool:
        return self.policy.starts_unaligned(barrier)

    def is_timed_out(self, barrier: types.Barrier) -> bool:
        return self.policy.is_timed_out(barrier, self.clock.now())

    def pending_barriers(self) -> tuple[types.Barrier, ...]:
        return tuple(entry.barrier for entry in self.pending.values())

    # -- AlignmentContext: actions a state may take ------------------------------

    def block_channel(self, channel: controller.ChannelId) -> None:
        self.blocked.add(channel)
        self.task.block_channel(channel)

    def unblock_all(self) -> None:
        self.blocked.clear()
        self.task.unblock_all()

    def snapshot_aligned(self, barrier: types.Barrier) -> None:
        checkpoint_id = barrier.checkpoint_id
        self.task.snapshot_state(barrier, self._alignment_duration(checkpoint_id))
        self._complete(checkpoint_id)

    def snapshot_unaligned(self, barrier: types.Barrier) -> None:
        duration = self._alignment_duration(barrier.checkpoint_id)
        self.task.snapshot_state(barrier.as_unaligned(), duration)

    def channel_state_complete(self, checkpoint_id: types.CheckpointId) -> None:
        self.task.channel_state_complete(checkpoint_id)
        self._complete(checkpoint_id)

    def _complete(self, checkpoint_id: types.CheckpointId) -> None:
        self.forget(checkpoint_id)
        if self.last_completed is None or checkpoint_id > self.last_completed:
            self.last_completed = checkpoint_id

    def _alignment_duration(self, checkpoint_id: types.CheckpointId) -> float:
        return max(0.0, self.clock.now() - self.pending[checkpoint_id].started_at)
