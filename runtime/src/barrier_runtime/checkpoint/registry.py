"""The coordinator's table of checkpoints: ids, pending checkpoints, remembered outcomes.

Ids are handed out here and only here: ``next_id`` starts at the first id the
caller computed from storage (highest id ever seen + 1) and only grows, so an
id is never reused, not after a rejected or failed trigger, nor after a
restart. Finished checkpoints are remembered (bounded) so that
:meth:`~barrier_runtime.checkpoint.coordinator.CheckpointCoordinator.wait_for`
can answer and late acknowledgements can be told apart.
Not thread-safe: the coordinator calls it under its lock.
"""

from __future__ import annotations

import collections

from barrier_runtime.checkpoint import outcomes, pending
from barrier_runtime.core import types

OUTCOME_MEMORY = 1000
"""How many finished checkpoints are remembered."""


class CheckpointRegistry:
    """Pending checkpoints by id, and the outcomes of recently finished ones."""

    def __init__(self, first_checkpoint_id: int, outcome_memory: int = OUTCOME_MEMORY) -> None:
        if first_checkpoint_id < 1:
            raise ValueError(f"checkpoint ids start at 1, got {first_checkpoint_id}")
        self._first_id = first_checkpoint_id
        self._next_id = first_checkpoint_id
        self._pending: dict[types.CheckpointId, pending.PendingCheckpoint] = {}
        self._outcomes: collections.OrderedDict[types.CheckpointId, outcomes.CheckpointOutcome] = (
            collections.OrderedDict()
        )
        self._memory = outcome_memory

    @property
    def next_id(self) -> types.CheckpointId:
        return types.CheckpointId(self._next_id)

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def allocate_id(self) -> types.CheckpointId:
        checkpoint_id = types.CheckpointId(self._next_id)
        self._next_id += 1
        return checkpoint_id

    def add(self, checkpoint: pending.PendingCheckpoint) -> None:
        if checkpoint.checkpoint_id in self._pending:
            raise ValueError(f"checkpoint {checkpoint.checkpoint_id} is already pending")
        self._pending[checkpoint.checkpoint_id] = checkpoint

    def get(self, checkpoint_id: types.CheckpointId) -> pending.PendingCheckpoint | None:
        return self._pending.get(checkpoint_id)

    def pending_checkpoints(self) -> list[pending.PendingCheckpoint]:
        """The pending checkpoints, oldest id first."""
        return sorted(self._pending.values(), key=lambda c: c.checkpoint_id)

    def is_pending(self, checkpoint: pending.PendingCheckpoint) -> bool:
        return self._pending.get(checkpoint.checkpoint_id) is checkpoint

    def finish(
        self, checkpoint: pending.PendingCheckpoint, outcome: outcomes.CheckpointOutcome
    ) -> None:
        """Move ``checkpoint`` from the pending table to the remembered outcomes."""
        if not self.is_pending(checkpoint):
            raise KeyError(f"checkpoint {checkpoint.checkpoint_id} is not pending")
        del self._pending[checkpoint.checkpoint_id]
        self._outcomes[checkpoint.checkpoint_id] = outcome
        while len(self._outcomes) > self._memory:
            self._outcomes.popitem(last=False)

    def outcome(self, checkpoint_id: types.CheckpointId) -> outcomes.CheckpointOutcome | None:
        return self._outcomes.get(checkpoint_id)

    def late_ack_result(self, checkpoint_id: types.CheckpointId) -> pending.AckResult:
        """How to answer an acknowledgement for an id that is not pending.

        A completed checkpoint answers ``DUPLICATE`` (its state is referenced by
        a completed checkpoint and must not be deleted), one this coordinator
        triggered and aborted ``DISCARDED``, anything else ``UNKNOWN``.
        """
        outcome = self._outcomes.get(checkpoint_id)
        if outcome is not None and outcome.completed:
            return pending.AckResult.DUPLICATE
        if self._first_id <= checkpoint_id < self._next_id:
            return pending.AckResult.DISCARDED
        return pending.AckResult.UNKNOWN
