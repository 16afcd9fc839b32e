"""Which barrier a new checkpoint starts with.

A checkpoint's barrier is unaligned from the start only when the job runs
unaligned checkpoints with ``aligned_timeout == 0`` ("always unaligned"). With
a positive ``aligned_timeout`` the barrier starts aligned and the tasks'
alternating handler switches to unaligned once alignment has taken too long.
Savepoints are always aligned: they must be self-contained, with no in-flight
channel state.

>>> policy = BarrierPolicy(types.CheckpointConfig(unaligned=True))
>>> policy.barrier_for(types.CheckpointId(7), 100.0, types.CheckpointKind.CHECKPOINT).unaligned
True
>>> policy.barrier_for(types.CheckpointId(8), 101.0, types.CheckpointKind.SAVEPOINT).unaligned
False
"""

from __future__ import annotations

from barrier_runtime.core import types


class BarrierPolicy:
    """Builds the barrier that sources inject for a checkpoint."""

    def __init__(self, config: types.CheckpointConfig) -> None:
        self._start_unaligned = config.unaligned and config.aligned_timeout == 0

    def barrier_for(
        self, checkpoint_id: types.CheckpointId, now: float, kind: types.CheckpointKind
    ) -> types.Barrier:
        unaligned = self._start_unaligned and kind is types.CheckpointKind.CHECKPOINT
        return types.Barrier(checkpoint_id, now, kind, unaligned=unaligned)
