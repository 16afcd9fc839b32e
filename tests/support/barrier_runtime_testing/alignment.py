"""Test doubles for code that drives or implements a barrier handler.

>>> from barrier_runtime.core import types
>>> task = RecordingController()
>>> task.block_channel(1)
>>> task.snapshot_state(types.Barrier(types.CheckpointId(3), 0.0).as_unaligned(), 0.0)
>>> task.take()
[('block', 1), ('snapshot', 3, 'unaligned')]
>>> task.calls
[]
"""

from __future__ import annotations

from barrier_runtime.core import types

Call = tuple[object, ...]
"""One recorded call: ``("block", channel)``, ``("unblock_all",)``,
``("snapshot", id, "aligned" | "unaligned")``, ``("channel_state_complete", id)``
or ``("abort", id, reason)``."""


class RecordingController:
    """A ``BarrierHandlerController`` that records every call, in order."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.snapshots: list[tuple[types.Barrier, float]] = []
        """Every ``snapshot_state`` call with the full barrier and the alignment duration."""

    def take(self) -> list[Call]:
        """The calls recorded since the last ``take``, and forget them."""
        calls, self.calls = self.calls, []
        return calls

    def block_channel(self, channel: int) -> None:
        self.calls.append(("block", channel))

    def unblock_all(self) -> None:
        self.calls.append(("unblock_all",))

    def snapshot_state(self, barrier: types.Barrier, alignment_duration: float) -> None:
        how = "unaligned" if barrier.unaligned else "aligned"
        self.calls.append(("snapshot", barrier.checkpoint_id, how))
        self.snapshots.append((barrier, alignment_duration))

    def channel_state_complete(self, checkpoint_id: types.CheckpointId) -> None:
        self.calls.append(("channel_state_complete", checkpoint_id))

    def abort_checkpoint(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        self.calls.append(("abort", checkpoint_id, reason))
