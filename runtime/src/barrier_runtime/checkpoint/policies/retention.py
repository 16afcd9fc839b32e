"""How many completed checkpoints the store keeps.

Retention is applied by the store after every completed *checkpoint*; the
store deletes only what no retained checkpoint references. Savepoints are
owned by the user: completing one never triggers retention and retention
never deletes one.

>>> policy = RetentionPolicy(retained=3)
>>> policy.retained_after(types.CheckpointKind.CHECKPOINT)
3
>>> policy.retained_after(types.CheckpointKind.SAVEPOINT) is None
True
"""

from __future__ import annotations

from barrier_runtime.core import types


class RetentionPolicy:
    """Keeps the newest ``retained`` completed checkpoints."""

    def __init__(self, retained: int) -> None:
        if retained < 1:
            raise ValueError(f"retained must be at least 1, got {retained}")
        self._retained = retained

    @property
    def retained(self) -> int:
        return self._retained

    def retained_after(self, kind: types.CheckpointKind) -> int | None:
        """How many checkpoints to retain after completing one of ``kind`` (None: do not prune)."""
        if kind is types.CheckpointKind.SAVEPOINT:
            return None
        return self._retained
