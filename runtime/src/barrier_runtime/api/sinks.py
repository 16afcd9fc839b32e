"""The two-phase-commit sink contract.

A sink writer buffers what it receives between checkpoints. At checkpoint *n*
the runtime calls :meth:`SinkWriter.pre_commit`, which makes the data durable
but invisible and returns a *transaction* (a JSON-serialisable description of
what to publish). The transaction travels in the checkpoint's metadata. Once
checkpoint *n* is complete, :meth:`Sink.commit` publishes it. After a crash,
the restored checkpoint's pending transactions are committed again, so
``commit`` must be idempotent: committing an already committed transaction
is a no-op, and committing one whose data vanished is an error that names it.

Commit happens on the sink object (not the writer) so that the driver can
publish a restored checkpoint's transactions before any writer exists, at any
parallelism.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod

Transaction = Any
"""A JSON-serialisable description of pre-committed data."""


class SinkWriter(abc.ABC):
    """The per-subtask half of a sink."""

    @abc.abstractmethod
    def write(self, records: Sequence[batch_mod.Record]) -> None:
        """Accept records; they must not become visible before their checkpoint completes."""

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Accept an Arrow batch (the fast path); by default converted to rows for :meth:`write`."""
        self.write(batch.to_pylist())

    @abc.abstractmethod
    def pre_commit(self, checkpoint_id: int) -> Transaction | None:
        """Make everything written since the last pre-commit durable; ``None`` if nothing was."""

    def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release resources (uncommitted data is simply abandoned)."""


class Sink(abc.ABC):
    """A transactional sink. Subclasses are plain, picklable configuration objects."""

    @abc.abstractmethod
    def writer(self, step_id: str, subtask: int, parallelism: int) -> SinkWriter:
        """Create the writer for one subtask."""

    @abc.abstractmethod
    def commit(self, transaction: Transaction) -> None:
        """Publish a pre-committed transaction; idempotent."""

    def commit_restored(self, transactions: Sequence[Transaction]) -> None:
        """Publish again the transactions a restored checkpoint recorded for one step.

        Called by the driver before any writer exists, with every writer's
        transactions in checkpoint order. By default each is committed in turn; a
        sink whose commits a crashed writer's leftovers can hold up (a Kafka
        transaction left open) clears every writer's leftovers first.
        """
        for transaction in transactions:
            self.commit(transaction)

    def recover(self, step_id: str) -> None:  # noqa: B027 - optional hook with a no-op default
        """Discard staged data no restorable checkpoint refers to.

        Called once per attempt, after the restored checkpoint's transactions
        were committed again and before any writer exists: whatever is still
        staged then belongs to attempts whose checkpoints never completed.
        """
