"""Which pending checkpoints a completed one makes obsolete.

Completing checkpoint or savepoint *n* proves that all state up to barrier *n*
is durable, so pending *checkpoints* with a smaller id are aborted as
``SUBSUMED`` (as in Flink). Savepoints are never subsumed: the user asked for
that particular snapshot and waits for it. A checkpoint that is already
committing is not subsumed either; its commit decides (the coordinator
enforces that).

>>> subsumes(types.CheckpointId(5), types.CheckpointId(4), types.CheckpointKind.CHECKPOINT)
True
>>> subsumes(types.CheckpointId(5), types.CheckpointId(4), types.CheckpointKind.SAVEPOINT)
False
"""

from __future__ import annotations

from barrier_runtime.core import types


def subsumes(
    completed_id: types.CheckpointId,
    candidate_id: types.CheckpointId,
    candidate_kind: types.CheckpointKind,
) -> bool:
    """Whether completing ``completed_id`` aborts the pending ``candidate_id``."""
    return candidate_id < completed_id and candidate_kind is types.CheckpointKind.CHECKPOINT
