"""The two narrow seams of the barrier handler.

* :class:`BarrierHandlerController` is what the handler asks of its *task*:
  block a channel, resume all, snapshot, finish channel state, abort. The task's
  input gate (``barrier_runtime.task.input_gate``) implements it; tests use
  ``RecordingController`` (``barrier_runtime_testing.alignment`` in ``tests/support``).
* :class:`AlignmentContext` is what a *state* may ask of its handler: facts
  about the pending checkpoint and the gate, and the few actions a state may
  take. The handler implements it (see ``barrier_runtime.alignment.gate``).
  States never see the task controller directly, so every side effect passes
  through one place that keeps the handler's bookkeeping true.
"""

from __future__ import annotations

from typing import Protocol, TypeAlias

from barrier_runtime.core import types

ChannelId: TypeAlias = int
"""The index of an input channel of the gate, ``0 .. num_channels - 1``."""


class BarrierHandlerController(Protocol):
    """The task side of a barrier handler. Called only from the task thread."""

    def block_channel(self, channel: ChannelId) -> None:
        """Stop reading ``channel``; its records stay buffered in the channel."""

    def unblock_all(self) -> None:
        """Resume reading every channel."""

    def snapshot_state(self, barrier: types.Barrier, alignment_duration: float) -> None:
        """Snapshot the operators now and forward ``barrier`` downstream.

        If ``barrier.unaligned`` the task forwards it with priority (overtaking
        queued output) and starts capturing channel state for it.
        """

    def channel_state_complete(self, checkpoint_id: types.CheckpointId) -> None:
        """Unaligned only: every channel delivered the barrier (or closed); capture is final."""

    def abort_checkpoint(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        """Called exactly once per aborted id; the task forwards CANCEL and declines it."""


class AlignmentContext(Protocol):
    """What a handler state may ask and do. Implemented by the handler's gate bookkeeping."""

    def all_barriers_received(self, checkpoint_id: types.CheckpointId) -> bool:
        """Every open channel delivered barrier ``checkpoint_id`` (closed ones count as aligned)."""

    def starts_unaligned(self, barrier: types.Barrier) -> bool:
        """The barrier must be processed unaligned right away (flagged, or unaligned mode)."""

    def is_timed_out(self, barrier: types.Barrier) -> bool:
        """Alternating mode: the aligned phase of this checkpoint took too long."""

    def pending_barriers(self) -> tuple[types.Barrier, ...]:
        """The first barrier of every pending checkpoint, oldest first."""

    def block_channel(self, channel: ChannelId) -> None:
        """Block one channel (the handler remembers it for ``is_blocked``)."""

    def unblock_all(self) -> None:
        """Resume every channel."""

    def snapshot_aligned(self, barrier: types.Barrier) -> None:
        """Snapshot without channel state; the checkpoint is complete at this handler."""

    def snapshot_unaligned(self, barrier: types.Barrier) -> None:
        """Snapshot now as unaligned; the checkpoint stays pending while capturing."""

    def channel_state_complete(self, checkpoint_id: types.CheckpointId) -> None:
        """The unaligned capture is final; the checkpoint is complete at this handler."""
